//! [`RangeSearch`]: the equal-mass range cuts of one adaptive request found over several passes
//! of the same rows, by mergeable histogram refinement.
//!
//! Every pair gets a 128-bit key whose unsigned order is the convention's order (score, then
//! sample position): the score's order key in the high 64 bits, `position << 1 | outcome` in
//! the low 64. A cut is the pair at rank `floor(r n / R)` of its group (docs/conventions.md,
//! "Adaptive ranges"). Each histogram pass counts the keys inside each cut's current key
//! interval (a prefix: keys with `key >> shift == prefix`) per value of the next `bits` bits,
//! which narrows every cut to one sub-interval; counts add across chunks and shards. Once the
//! cut intervals hold few enough pairs, the last pass collects the keys inside them and sums
//! every other pair straight into its range (its range is the number of cuts in intervals
//! below it); the collected keys are sorted and ranked exactly. Where the first pass leaves
//! too many pairs to collect, a speculative second pass may collect windows around each
//! cut's predicted place instead and check them afterwards (speculate.rs).
//!
//! Pairs with sample weights take the same passes with each cut at a position in running
//! weight ([`weighted_range_start`]): the histograms also sum weights, the last pass collects
//! keys with their weights, and a pair that a cut falls strictly inside is split there (no
//! speculation).

mod interval;
mod layout;
mod speculate;

use serde::{Deserialize, Serialize};

use super::first;
pub(crate) use interval::Key;
use interval::{GroupSearch, Interval, Mass};
use layout::{first_layout, layout, split, split_weighted};

use crate::binning::{adaptive_range_of, range_start, weighted_range_start};
use crate::engine::{from_order_key, order_key};
use crate::error::{CalibError, Result};
use crate::stats::{BinLayout, BinStats};

/// The key of a pair with `score` at sample `position` (below 2^63) and outcome `hit`.
#[inline(always)]
pub(crate) fn pair_key(score: f64, position: u64, hit: bool) -> Key {
    (u128::from(order_key(score)) << 64) | u128::from((position << 1) | u64::from(hit))
}

fn key_score(key: Key) -> f64 {
    from_order_key((key >> 64) as u64)
}

fn key_hit(key: Key) -> f64 {
    (key & 1) as f64
}

/// Pairs the last pass may collect inside cut intervals, over every request (64 MiB of keys).
pub(crate) const COLLECT_BUDGET: u64 = 1 << 22;

/// What the current pass does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Mode {
    /// Count the keys inside each interval per value of the next `bits` bits.
    Histogram { bits: u32 },
    /// Collect the keys inside intervals; sum the others into their ranges.
    Collect,
    /// Finished: the statistics are known.
    Done,
}

/// One pass's accumulators: they add across chunks, threads and shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum PassSums {
    /// Per (group, interval), `2^bits` counts.
    Histogram(#[serde(with = "super::sparse")] Vec<u64>),
    /// Range sums of the pairs outside intervals, and the keys inside each (group, interval).
    Collect { sums: BinStats, inside: Vec<Vec<Key>> },
    /// A weighted histogram pass: per (group, interval), `2^bits` pair counts and weights.
    Weighted {
        #[serde(with = "super::sparse")]
        counts: Vec<u64>,
        #[serde(with = "super::sparse")]
        mass: Vec<f64>,
    },
    /// A weighted collecting pass: weighted range sums of the pairs outside intervals, and
    /// the keys inside each (group, interval) with their weights.
    WeightedCollect { sums: BinStats, inside: Vec<Vec<(Key, f64)>> },
}

impl PassSums {
    /// Adds `other` (of the same search and pass) into `self`.
    pub(crate) fn add(&mut self, mut other: PassSums) -> Result<()> {
        other.drain_into(self)
    }

    /// Adds `self` into `into` (of the same search and pass) and empties `self`, keeping its
    /// buffers for the next chunk.
    pub(crate) fn drain_into(&mut self, into: &mut PassSums) -> Result<()> {
        match (self, into) {
            (Self::Histogram(a), Self::Histogram(into)) if a.len() == into.len() => {
                into.iter_mut().zip(a.iter_mut()).for_each(|(x, y)| *x += std::mem::take(y));
            }
            (Self::Collect { sums, inside }, Self::Collect { sums: s, inside: i }) => {
                drain_collected((sums, inside), (s, i))?;
            }
            (Self::Weighted { counts, mass }, Self::Weighted { counts: c, mass: m })
                if counts.len() == c.len() && mass.len() == m.len() =>
            {
                c.iter_mut().zip(counts.iter_mut()).for_each(|(x, y)| *x += std::mem::take(y));
                m.iter_mut().zip(mass.iter_mut()).for_each(|(x, y)| *x += std::mem::take(y));
            }
            (
                Self::WeightedCollect { sums, inside },
                Self::WeightedCollect { sums: s, inside: i },
            ) => drain_collected((sums, inside), (s, i))?,
            _ => return Err(incompatible("pass sums of different passes")),
        }
        Ok(())
    }
}

/// Moves a collecting pass's range sums and collected keys `from` into `into` (of the same
/// search and pass), keeping `from`'s buffers.
fn drain_collected<K>(
    (sums, inside): (&mut BinStats, &mut [Vec<K>]),
    (into_sums, into_inside): (&mut BinStats, &mut [Vec<K>]),
) -> Result<()> {
    let same = inside.len() == into_inside.len()
        && sums.layout == into_sums.layout
        && sums.n_groups == into_sums.n_groups;
    if !same {
        return Err(incompatible("pass sums of different passes"));
    }
    into_sums.accumulate(sums);
    for v in [&mut sums.count, &mut sums.sum_score, &mut sums.sum_outcome] {
        v.fill(0.0);
    }
    into_inside.iter_mut().zip(inside.iter_mut()).for_each(|(a, b)| a.append(b));
    Ok(())
}

fn incompatible(what: &str) -> CalibError {
    CalibError::Incompatible(format!("{what} do not merge"))
}

/// A later pass that did not see the first pass's rows.
fn other_rows() -> CalibError {
    CalibError::Incompatible(
        "a later pass saw other rows than the first; adaptive ranges need the same rows in \
         every pass"
            .into(),
    )
}

/// The range search of one adaptive request over `n_groups` groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RangeSearch {
    n_ranges: usize,
    pub(in crate::streaming) groups: Vec<GroupSearch>,
    /// First flat (group, interval) index of each group.
    first: Vec<usize>,
    pub(crate) mode: Mode,
    /// The result once [`Mode::Done`].
    pub(crate) stats: Option<BinStats>,
    /// While a speculative pass runs (search/speculate.rs): the cut intervals to go back to
    /// if a cut misses its window.
    #[serde(default)]
    fallback: Option<Vec<GroupSearch>>,
    /// Whether the pairs carry sample weights.
    #[serde(default)]
    pub(crate) weighted: bool,
}

impl RangeSearch {
    /// A search whose first pass counts every group's keys by their top bits (and sums
    /// their weights, if `weighted`).
    pub(crate) fn new(n_groups: usize, n_ranges: usize, share: usize, weighted: bool) -> Self {
        let mass = weighted.then(|| Mass { below: 0.0, inside: 0.0, cuts: vec![] });
        let whole =
            Interval { lo: 0, shift: 128, below: 0, count: 0, cuts: vec![], around: [0, 0], mass };
        let groups = vec![GroupSearch::new(vec![whole], 0); n_groups];
        let (first, bits) = layout(&groups, share);
        Self {
            n_ranges,
            groups,
            first,
            mode: Mode::Histogram { bits },
            stats: None,
            fallback: None,
            weighted,
        }
    }

    /// Recomputes the flat interval offsets; returns the bits a histogram pass can afford.
    fn reindex(&mut self, share: usize) -> u32 {
        let (first, bits) = layout(&self.groups, share);
        self.first = first;
        bits
    }

    fn n_intervals(&self) -> usize {
        self.groups.iter().map(|g| g.intervals.len()).sum()
    }

    /// Empty accumulators for the current pass (`None` when done).
    pub(crate) fn empty_sums(&self) -> Option<PassSums> {
        let cells = |bits: u32| self.n_intervals() << bits;
        let sums =
            || BinStats::zeros(BinLayout::Adaptive { n_ranges: self.n_ranges }, self.groups.len());
        match (self.mode, self.weighted) {
            (Mode::Histogram { bits }, false) => Some(PassSums::Histogram(vec![0; cells(bits)])),
            (Mode::Histogram { bits }, true) => Some(PassSums::Weighted {
                counts: vec![0; cells(bits)],
                mass: vec![0.0; cells(bits)],
            }),
            (Mode::Collect, false) => Some(PassSums::Collect {
                sums: sums(),
                inside: vec![Vec::new(); self.n_intervals()],
            }),
            (Mode::Collect, true) => Some(PassSums::WeightedCollect {
                sums: sums(),
                inside: vec![Vec::new(); self.n_intervals()],
            }),
            (Mode::Done, _) => None,
        }
    }

    /// Adds one pair of `group` to the pass's accumulators (the exact path the index's fast
    /// path is tested against).
    #[cfg(test)]
    pub(crate) fn add(&self, sums: &mut PassSums, group: usize, key: Key) {
        match (sums, self.mode) {
            (PassSums::Histogram(counts), Mode::Histogram { bits }) => {
                self.count(counts, bits, group, key);
            }
            (PassSums::Collect { sums, inside }, Mode::Collect) => {
                self.collect(sums, inside, group, key);
            }
            _ => {}
        }
    }

    /// A histogram pass's [`Self::add`].
    #[inline(always)]
    pub(crate) fn count(&self, counts: &mut [u64], bits: u32, group: usize, key: Key) {
        if let Some(cell) = self.cell(bits, group, key) {
            counts[cell] += 1;
        }
    }

    /// The histogram counter of `key` of `group` in a pass of `bits` bits (`None`: outside
    /// every cut interval).
    #[inline(always)]
    fn cell(&self, bits: u32, group: usize, key: Key) -> Option<usize> {
        let g = &self.groups[group];
        let i = g.locate(key).ok()?;
        let iv = &g.intervals[i];
        let b = bits.min(iv.shift);
        let sub = match first_layout(iv, bits) {
            true => first::bucket((key >> 64) as u64, bits),
            false => ((key >> (iv.shift - b)) as usize) & ((1 << b) - 1),
        };
        Some(((self.first[group] + i) << bits) + sub)
    }

    /// Adds one pair of `group` with sample weight `w` to a weighted pass's accumulators.
    pub(crate) fn add_weighted(&self, sums: &mut PassSums, group: usize, key: Key, w: f64) {
        match (sums, self.mode) {
            (PassSums::Weighted { counts, mass }, Mode::Histogram { bits }) => {
                if let Some(cell) = self.cell(bits, group, key) {
                    counts[cell] += 1;
                    mass[cell] += w;
                }
            }
            (PassSums::WeightedCollect { sums, inside }, Mode::Collect) => {
                let g = &self.groups[group];
                match g.locate(key) {
                    Ok(i) => inside[self.first[group] + i].push((key, w)),
                    Err(i) => {
                        let range = g.cuts_below[i] as usize;
                        sums.add_weighted(group, range, key_score(key), key_hit(key), w);
                    }
                }
            }
            _ => {}
        }
    }

    /// A collecting pass's [`Self::add`].
    #[inline(always)]
    pub(crate) fn collect(
        &self,
        sums: &mut BinStats,
        inside: &mut [Vec<Key>],
        group: usize,
        key: Key,
    ) {
        let g = &self.groups[group];
        match g.locate(key) {
            Ok(i) => inside[self.first[group] + i].push(key),
            Err(i) => sums.add(group, g.cuts_below[i] as usize, key_score(key), key_hit(key)),
        }
    }

    /// Ends a pass whose accumulators over every row are `sums`; returns the pairs the cut
    /// intervals now hold (0 when done). `integral`: whether every weight of weighted pairs
    /// was a whole number (read at the first pass's end).
    ///
    /// # Errors
    /// [`CalibError::Incompatible`] when the rows of this pass were not those of the first.
    pub(crate) fn end_pass(
        &mut self,
        sums: PassSums,
        first_pass: bool,
        share: usize,
        integral: bool,
    ) -> Result<u64> {
        match (sums, self.mode) {
            (PassSums::Weighted { counts, mass }, Mode::Histogram { bits }) => {
                self.refine_weighted(&counts, &mass, bits, first_pass.then_some(integral))?;
                self.mode = Mode::Histogram { bits: self.reindex(share) };
                Ok(self.pairs_inside())
            }
            (PassSums::WeightedCollect { sums, inside }, Mode::Collect) => {
                self.stats = Some(self.walk_inside(sums, inside)?);
                self.mode = Mode::Done;
                Ok(0)
            }
            (PassSums::Histogram(counts), Mode::Histogram { bits }) => {
                self.refine(&counts, bits, first_pass)?;
                self.mode = Mode::Histogram { bits: self.reindex(share) };
                Ok(self.pairs_inside())
            }
            (PassSums::Collect { sums, inside }, Mode::Collect) => {
                if !self.settle_windows(&sums, &inside, share)? {
                    return Ok(self.pairs_inside());
                }
                self.stats = Some(self.rank_inside(sums, inside)?);
                self.mode = Mode::Done;
                Ok(0)
            }
            _ => Err(incompatible("pass sums and search")),
        }
    }

    /// The pairs inside the cut intervals.
    fn pairs_inside(&self) -> u64 {
        self.groups.iter().flat_map(|g| &g.intervals).map(|iv| iv.count).sum()
    }

    /// Whether every cut is pinned to one key (no bits left to refine).
    pub(crate) fn pinned(&self) -> bool {
        self.groups.iter().flat_map(|g| &g.intervals).all(|iv| iv.shift == 0)
    }

    /// Switches the next pass to collecting.
    pub(crate) fn collect_next(&mut self) {
        if matches!(self.mode, Mode::Histogram { .. }) {
            self.mode = Mode::Collect;
        }
    }

    /// Narrows every cut to the sub-interval its rank falls in.
    fn refine(&mut self, counts: &[u64], bits: u32, first_pass: bool) -> Result<()> {
        let (n_ranges, mut flat) = (self.n_ranges, 0);
        for g in &mut self.groups {
            if first_pass {
                let n: u64 = counts[flat << bits..(flat + 1) << bits].iter().sum();
                let cuts = (1..n_ranges).map(|r| range_start(r, n as usize, n_ranges) as u64);
                g.intervals[0].count = n;
                g.intervals[0].cuts = cuts.collect();
                g.n = n;
            }
            let mut next = Vec::new();
            for iv in &g.intervals {
                let hist = &counts[flat << bits..(flat + 1) << bits];
                flat += 1;
                if hist.iter().sum::<u64>() != iv.count {
                    return Err(other_rows());
                }
                split(iv, hist, bits, &mut next);
            }
            *g = GroupSearch::new(next, g.n);
        }
        Ok(())
    }

    /// The range statistics: the sums of the pairs outside intervals plus the collected keys,
    /// each ranked exactly.
    fn rank_inside(&self, mut stats: BinStats, inside: Vec<Vec<Key>>) -> Result<BinStats> {
        let mut inside = inside.into_iter();
        for (gi, g) in self.groups.iter().enumerate() {
            for iv in &g.intervals {
                let mut keys = inside.next().unwrap_or_default();
                if keys.len() as u64 != iv.count {
                    return Err(other_rows());
                }
                keys.sort_unstable();
                for (t, &key) in keys.iter().enumerate() {
                    let rank = (iv.below + t as u64) as usize;
                    let range = adaptive_range_of(rank, g.n as usize, self.n_ranges);
                    stats.add(gi, range, key_score(key), key_hit(key));
                }
            }
        }
        Ok(stats)
    }
}

impl RangeSearch {
    /// [`Self::refine`] for weighted pairs (`counts` and weights `mass` per counter). At the
    /// first pass's end (`first: Some(integral)`) the cuts are placed in running weight.
    fn refine_weighted(
        &mut self,
        counts: &[u64],
        mass: &[f64],
        bits: u32,
        first: Option<bool>,
    ) -> Result<()> {
        let (n_ranges, per, mut flat) = (self.n_ranges, 1usize << bits, 0);
        for g in &mut self.groups {
            if let Some(integral) = first {
                let cells = flat * per..(flat + 1) * per;
                let total: f64 = mass[cells.clone()].iter().sum();
                let cuts =
                    (1..n_ranges).map(|r| weighted_range_start(r, total, n_ranges, integral));
                g.n = counts[cells].iter().sum();
                g.intervals[0].count = g.n;
                g.intervals[0].mass =
                    Some(Mass { below: 0.0, inside: total, cuts: cuts.collect() });
            }
            let mut next = Vec::new();
            for iv in &g.intervals {
                let cells = flat * per..(flat + 1) * per;
                flat += 1;
                if counts[cells.clone()].iter().sum::<u64>() != iv.count {
                    return Err(other_rows());
                }
                split_weighted(iv, &counts[cells.clone()], &mass[cells], bits, &mut next);
            }
            *g = GroupSearch::new(next, g.n);
        }
        Ok(())
    }

    /// [`Self::rank_inside`] for weighted pairs: the collected pairs of each interval walked
    /// in key order from its running weight.
    fn walk_inside(&self, mut stats: BinStats, inside: Vec<Vec<(Key, f64)>>) -> Result<BinStats> {
        let mut inside = inside.into_iter();
        for (gi, g) in self.groups.iter().enumerate() {
            for (i, iv) in g.intervals.iter().enumerate() {
                let mut pairs = inside.next().unwrap_or_default();
                let Some(m) = iv.mass.as_ref().filter(|_| pairs.len() as u64 == iv.count) else {
                    return Err(other_rows());
                };
                pairs.sort_unstable_by_key(|p| p.0);
                walk(&mut stats, gi, g.cuts_below[i] as usize, m, &pairs);
            }
        }
        Ok(stats)
    }
}

/// Adds the key-sorted weighted `pairs` of one cut interval to `group`'s ranges of `stats`,
/// the first in `range`: a pair with a cut `c` inside its running weight (`at < c < at + w`)
/// gives `c - at` to the range that ends there and the rest to the next, as the in-memory walk
/// (engine/records.rs) splits rows.
fn walk(stats: &mut BinStats, group: usize, mut range: usize, m: &Mass, pairs: &[(Key, f64)]) {
    let (mut at, mut cuts) = (m.below, m.cuts.iter().peekable());
    for &(key, mut w) in pairs {
        let (score, hit) = (key_score(key), key_hit(key));
        while let Some(&&c) = cuts.peek()
            && at + w > c
        {
            let take = (c - at).max(0.0);
            stats.add_weighted(group, range, score, hit, take);
            (at, w, range) = (c, w - take, range + 1);
            cuts.next();
        }
        stats.add_weighted(group, range, score, hit, w);
        at += w;
    }
}
