//! [`PassIndex`]: one pass's cut intervals of a [`RangeSearch`] as flat arrays of their keys'
//! high halves, so the pair loop decides almost every pair from the score's 64-bit order key.
//!
//! A pair's key is `order_key(score) << 64 | position << 1 | hit`. An interval whose prefix
//! is at least 64 bits short of the key (`shift >= 64`) holds exactly the keys whose high half
//! lies in `[first_hi, last_hi]`, so membership, the sub-bucket of a histogram pass (when
//! `shift - bits >= 64`) and the range of a pair outside every interval follow from the high
//! half alone. Intervals narrowed into the position bits (ties at a cut) share one high half;
//! pairs landing there take the search's exact 128-bit path. Both paths count the same pairs
//! in the same cells, so the index changes only the speed.

use super::directory::{Cell, Directory};
use super::first;
use super::search::{Key, Mode, PassSums, RangeSearch, pair_key};
use crate::engine::order_key;

/// Marks an interval whose pairs need the key's low half (the exact path).
const EXACT: u32 = u32::MAX;

/// Histogram counters found before they are counted (see [`GroupView::count`]).
const CELL_BATCH: usize = 64;

/// Intervals a group scans linearly (a branch-free count); more are searched by halving.
const LINEAR: usize = 32;

/// The current pass's intervals of one search (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct PassIndex {
    mode: Mode,
    /// `start[g]..start[g + 1]`: group `g`'s intervals in the flat arrays below.
    start: Vec<usize>,
    /// Smallest and largest high half of each interval's keys.
    first_hi: Vec<u64>,
    last_hi: Vec<u64>,
    /// Per interval: a histogram pass's right shift from the high half to the sub-bucket,
    /// 0 in a collecting pass, or [`EXACT`].
    by_high: Vec<u32>,
    /// Per group, `n + 1` entries from flat index `start[g] + g`: cuts in intervals `0..i`,
    /// the range of a pair above intervals `0..i` and below the rest.
    cuts_below: Vec<usize>,
    /// The groups' shortcuts past the interval search (`None`: too many groups).
    directory: Option<Directory>,
}

/// One interval as the index sees it: its first key and prefix shift, and the cuts in the
/// intervals before it.
pub(crate) struct IndexedInterval {
    pub lo: Key,
    pub shift: u32,
    pub cuts_below: u64,
}

impl PassIndex {
    /// The current pass's intervals of `search` (the pair loop's fast path).
    pub(crate) fn of(search: &RangeSearch) -> Self {
        let groups = search.groups.iter().map(|g| {
            let intervals = g.intervals.iter().zip(&g.cuts_below);
            let intervals = intervals
                .map(|(iv, &cuts_below)| IndexedInterval { lo: iv.lo, shift: iv.shift, cuts_below })
                .collect();
            (intervals, g.cuts_below.last().copied().unwrap_or(0))
        });
        Self::new(search.mode, groups)
    }

    /// The index of `groups` (each: its intervals in key order, and the cuts in all of them)
    /// for a pass in `mode`.
    pub(crate) fn new(
        mode: Mode,
        groups: impl Iterator<Item = (Vec<IndexedInterval>, u64)>,
    ) -> Self {
        let mut ix = Self {
            mode,
            start: vec![0],
            first_hi: Vec::new(),
            last_hi: Vec::new(),
            by_high: Vec::new(),
            cuts_below: Vec::new(),
            directory: None,
        };
        for (intervals, total_cuts) in groups {
            for iv in &intervals {
                ix.push(iv);
            }
            ix.cuts_below.push(total_cuts as usize);
            ix.start.push(ix.first_hi.len());
        }
        let n_groups = ix.start.len() - 1;
        ix.directory = Directory::new(n_groups).map(|mut dir| {
            for g in ix.start.windows(2) {
                dir.push_group(&ix.first_hi[g[0]..g[1]], &ix.last_hi[g[0]..g[1]]);
            }
            dir
        });
        ix
    }

    fn push(&mut self, iv: &IndexedInterval) {
        let hi = (iv.lo >> 64) as u64;
        let span = if iv.shift >= 128 {
            u64::MAX
        } else if iv.shift > 64 {
            (1u64 << (iv.shift - 64)) - 1
        } else {
            0
        };
        self.first_hi.push(if iv.shift >= 128 { 0 } else { hi });
        self.last_hi.push(if iv.shift >= 128 { u64::MAX } else { hi | span });
        self.by_high.push(match self.mode {
            Mode::Histogram { bits } if iv.shift >= 64 + bits => iv.shift - bits - 64,
            Mode::Collect if iv.shift >= 64 => 0,
            _ => EXACT,
        });
        self.cuts_below.push(iv.cuts_below as usize);
    }

    /// Group `group`'s intervals.
    #[inline(always)]
    fn group(&self, group: usize) -> GroupView<'_> {
        let (a, b) = (self.start[group], self.start[group + 1]);
        GroupView {
            directory: self.directory.as_ref().map(|d| (d, d.group(group))),
            first: a,
            first_hi: &self.first_hi[a..b],
            last_hi: &self.last_hi[a..b],
            by_high: &self.by_high[a..b],
            cuts_below: &self.cuts_below[a + group..=b + group],
        }
    }

    /// Adds pairs `(score, position, hit)` of one `group` to the pass's accumulators, as
    /// [`RangeSearch::add`] would, with the group's intervals looked up once: the loop over
    /// one class column of a block of rows.
    #[inline(always)]
    pub(crate) fn add_group(
        &self,
        search: &RangeSearch,
        sums: &mut PassSums,
        group: usize,
        pairs: impl Iterator<Item = (f64, u64, bool)>,
    ) {
        let view = self.group(group);
        match (self.mode, sums) {
            (Mode::Histogram { bits }, PassSums::Histogram(counts)) => {
                view.count(search, group, counts, bits, pairs);
            }
            (Mode::Collect, PassSums::Collect { sums: stats, inside }) => {
                for (score, position, hit) in pairs {
                    match view.locate(order_key(score)) {
                        Ok(i) if view.by_high[i] != EXACT => {
                            inside[view.first + i].push(pair_key(score, position, hit));
                        }
                        Ok(_) => {
                            search.collect(stats, inside, group, pair_key(score, position, hit))
                        }
                        Err(i) => {
                            let hit = f64::from(u8::from(hit));
                            stats.add(group, view.cuts_below[i], score, hit);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Adds the pair `(score, position, hit)` of `group`, as [`Self::add_group`] does.
    #[inline(always)]
    pub(crate) fn add(
        &self,
        search: &RangeSearch,
        sums: &mut PassSums,
        group: usize,
        pair: (f64, u64, bool),
    ) {
        self.add_group(search, sums, group, std::iter::once(pair));
    }
}

/// One group's intervals in a [`PassIndex`]: flat interval `first + i` is its `i`-th.
struct GroupView<'a> {
    /// The directory and the group's cells in it.
    directory: Option<(&'a Directory, &'a [u32])>,
    first: usize,
    first_hi: &'a [u64],
    last_hi: &'a [u64],
    by_high: &'a [u32],
    /// `len() + 1` entries: the range of a pair above intervals `0..i` and below the rest.
    cuts_below: &'a [usize],
}

impl GroupView<'_> {
    fn len(&self) -> usize {
        self.last_hi.len()
    }

    /// `Ok(i)`: inside interval `i`; `Err(i)`: outside, above intervals `0..i`.
    #[inline(always)]
    fn locate(&self, hi: u64) -> std::result::Result<usize, usize> {
        if let Some((dir, cells)) = self.directory {
            match dir.cell(cells, hi) {
                Cell::Outside(i) => return Err(i),
                Cell::Inside(i) => return Ok(i),
                Cell::Crossed { from, to } => return self.search(hi, from, to),
            }
        }
        self.search(hi, 0, self.len())
    }

    /// [`Self::locate`] among intervals `from..to`, all below `hi` before `from` and all above
    /// it from `to` on.
    #[inline(always)]
    fn search(&self, hi: u64, from: usize, to: usize) -> std::result::Result<usize, usize> {
        let last = &self.last_hi[from..to];
        let i = from
            + if last.len() <= LINEAR {
                // Wrapping: the dev profile's overflow check would branch per interval.
                last.iter().fold(0usize, |n, &l| n.wrapping_add(usize::from(l < hi)))
            } else {
                last.partition_point(|&l| l < hi)
            };
        if i < to && self.first_hi[i] <= hi { Ok(i) } else { Err(i) }
    }

    /// Counts `pairs` of `group` into the pass's `counts` (`2^bits` per interval); pairs the
    /// high half does not decide take the search's exact path.
    #[inline(always)]
    fn count(
        &self,
        search: &RangeSearch,
        group: usize,
        counts: &mut [u64],
        bits: u32,
        pairs: impl Iterator<Item = (f64, u64, bool)>,
    ) {
        let mask = (1usize << bits) - 1;
        let counts_at = self.first << bits;
        let whole = self.len() == 1 && self.first_hi[0] == 0 && self.last_hi[0] == u64::MAX;
        if whole && self.by_high[0] != EXACT {
            // One interval holding every key (the first pass): nothing to search.
            let counts = &mut counts[counts_at..=counts_at + mask];
            if bits >= first::MIN_BITS {
                for (score, ..) in pairs {
                    counts[first::bucket(order_key(score), bits)] += 1;
                }
            } else {
                let shift = self.by_high[0];
                for (score, ..) in pairs {
                    counts[(order_key(score) >> shift) as usize & mask] += 1;
                }
            }
            return;
        }
        // The counters are found a batch at a time and counted after, so that their cache
        // misses overlap instead of each waiting behind the next pair's search.
        let (mut cells, mut n) = ([0usize; CELL_BATCH], 0);
        for (score, position, hit) in pairs {
            let hi = order_key(score);
            let Ok(i) = self.locate(hi) else { continue };
            match self.by_high[i] {
                EXACT => search.count(counts, bits, group, pair_key(score, position, hit)),
                shift => {
                    cells[n] = counts_at + (i << bits) + ((hi >> shift) as usize & mask);
                    n += 1;
                    if n == CELL_BATCH {
                        cells.iter().for_each(|&c| counts[c] += 1);
                        n = 0;
                    }
                }
            }
        }
        cells[..n].iter().for_each(|&c| counts[c] += 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binning::adaptive_range_of;
    use crate::stats::{BinLayout, BinStats};

    /// Scores with heavy ties (so cuts refine into the position bits) and spread ones, in
    /// `groups` groups.
    fn pairs(n: u64, groups: usize) -> Vec<(usize, (f64, u64, bool))> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..n)
            .map(|i| {
                let r = next();
                let score = match r % 3 {
                    0 => 0.25,
                    1 => (r >> 11) as f64 / (1u64 << 53) as f64,
                    _ => ((r >> 40) % 7) as f64 / 64.0,
                };
                ((r >> 8) as usize % groups, (score, i, r >> 4 & 1 == 1))
            })
            .collect()
    }

    /// The ranges of `pairs` by sorting each group's keys: the reference.
    fn ranked(pairs: &[(usize, (f64, u64, bool))], groups: usize, n_ranges: usize) -> BinStats {
        let mut stats = BinStats::zeros(BinLayout::Adaptive { n_ranges }, groups);
        for g in 0..groups {
            let mut keys: Vec<_> = pairs.iter().filter(|p| p.0 == g).map(|p| p.1).collect();
            keys.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (rank, &(score, _, hit)) in keys.iter().enumerate() {
                let range = adaptive_range_of(rank, keys.len(), n_ranges);
                stats.add(g, range, score, f64::from(u8::from(hit)));
            }
        }
        stats
    }

    #[test]
    fn the_index_counts_as_the_exact_path_pass_after_pass() {
        // (collect budget, groups, share, whether ties refine into the position bits). A share
        // of 2^19 leaves the first pass 2 bits: the plain top-bits layout. Budgets over 0 that
        // the first pass leaves short try a speculative last pass (forced here), which misses
        // on these ties and falls back to refinement.
        let cases = [
            (0, 1, 2, true),
            (0, 3, 2, true),
            (50, 2, 2, true),
            (1 << 20, 4, 2, false),
            (0, 2, 1 << 19, true),
            (3000, 3, 2, false),
        ];
        for (budget, groups, share, exact_path) in cases {
            let pairs = pairs(5_000, groups);
            let mut search = RangeSearch::new(groups, 9, share, false);
            let (mut first, mut saw_exact) = (true, false);
            while search.mode != Mode::Done {
                let index = PassIndex::of(&search);
                saw_exact |= index.by_high.contains(&EXACT);
                let (mut exact, mut fast) = (search.empty_sums(), search.empty_sums());
                let (exact_sums, fast_sums) = (exact.as_mut().unwrap(), fast.as_mut().unwrap());
                for &(g, (s, pos, hit)) in &pairs {
                    search.add(exact_sums, g, pair_key(s, pos, hit));
                }
                for g in 0..groups {
                    let of_g = pairs[..2_500].iter().filter(|p| p.0 == g).map(|p| p.1);
                    index.add_group(&search, fast_sums, g, of_g);
                }
                for &(g, pair) in &pairs[2_500..] {
                    index.add(&search, fast_sums, g, pair);
                }
                assert_eq!(exact, fast, "budget {budget}, {groups} groups");
                let inside = search.end_pass(exact.unwrap(), first, share, false).unwrap();
                if inside <= budget || search.pinned() {
                    search.collect_next();
                } else if first && budget > 0 {
                    // A speculative last pass.
                    search.speculate();
                }
                first = false;
            }
            let (got, want) = (search.stats.unwrap(), ranked(&pairs, groups, 9));
            assert_eq!((&got.count, &got.sum_outcome), (&want.count, &want.sum_outcome));
            let scores = got.sum_score.iter().zip(&want.sum_score);
            assert!(scores.into_iter().all(|(a, b)| (a - b).abs() < 1e-9), "budget {budget}");
            assert_eq!(saw_exact, exact_path, "budget {budget}");
        }
    }
}
