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

mod interval;
mod layout;
mod speculate;

use serde::{Deserialize, Serialize};

use super::first;
pub(crate) use interval::Key;
use interval::{GroupSearch, Interval};
use layout::{first_layout, layout, split};

use crate::binning::{adaptive_range_of, range_start};
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
            (Self::Collect { sums, inside }, Self::Collect { sums: s, inside: i })
                if inside.len() == i.len()
                    && sums.layout == s.layout
                    && sums.n_groups == s.n_groups =>
            {
                s.accumulate(sums);
                for v in [&mut sums.count, &mut sums.sum_score, &mut sums.sum_outcome] {
                    v.fill(0.0);
                }
                i.iter_mut().zip(inside.iter_mut()).for_each(|(a, b)| a.append(b));
            }
            _ => return Err(incompatible("pass sums of different passes")),
        }
        Ok(())
    }
}

fn incompatible(what: &str) -> CalibError {
    CalibError::Incompatible(format!("{what} do not merge"))
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
}

impl RangeSearch {
    /// A search whose first pass counts every group's keys by their top bits.
    pub(crate) fn new(n_groups: usize, n_ranges: usize, share: usize) -> Self {
        let whole =
            Interval { lo: 0, shift: 128, below: 0, count: 0, cuts: vec![], around: [0, 0] };
        let groups = vec![GroupSearch::new(vec![whole], 0); n_groups];
        let (first, bits) = layout(&groups, share);
        Self {
            n_ranges,
            groups,
            first,
            mode: Mode::Histogram { bits },
            stats: None,
            fallback: None,
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
        match self.mode {
            Mode::Histogram { bits } => {
                Some(PassSums::Histogram(vec![0; self.n_intervals() << bits]))
            }
            Mode::Collect => Some(PassSums::Collect {
                sums: BinStats::zeros(
                    BinLayout::Adaptive { n_ranges: self.n_ranges },
                    self.groups.len(),
                ),
                inside: vec![Vec::new(); self.n_intervals()],
            }),
            Mode::Done => None,
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
        let g = &self.groups[group];
        if let Ok(i) = g.locate(key) {
            let iv = &g.intervals[i];
            let b = bits.min(iv.shift);
            let sub = match first_layout(iv, bits) {
                true => first::bucket((key >> 64) as u64, bits),
                false => ((key >> (iv.shift - b)) as usize) & ((1 << b) - 1),
            };
            counts[((self.first[group] + i) << bits) + sub] += 1;
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
    /// intervals now hold (0 when done).
    ///
    /// # Errors
    /// [`CalibError::Incompatible`] when the rows of this pass were not those of the first.
    pub(crate) fn end_pass(
        &mut self,
        sums: PassSums,
        first_pass: bool,
        share: usize,
    ) -> Result<u64> {
        match (sums, self.mode) {
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
                    return Err(CalibError::Incompatible(
                        "a later pass saw other rows than the first; adaptive ranges need the \
                         same rows in every pass"
                            .into(),
                    ));
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
                    return Err(CalibError::Incompatible(
                        "the last pass saw other rows than the first; adaptive ranges need the \
                         same rows in every pass"
                            .into(),
                    ));
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
