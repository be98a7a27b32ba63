//! A search's cut intervals: the keys of one group that hold cuts, and the group's sorted
//! list of them.

use serde::{Deserialize, Serialize};

/// A pair's place in the stable order (see the module docs).
pub(crate) type Key = u128;

/// Histogram counters of one pass, over every request (16 MiB of u64).
pub(in crate::streaming) const HISTOGRAM_BUDGET: usize = 1 << 21;

/// The keys `k` with `k >> shift == lo >> shift` (`shift` 128: every key), holding cuts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(in crate::streaming) struct Interval {
    pub(in crate::streaming) lo: u128,
    pub(in crate::streaming) shift: u32,
    /// Pairs of the group with smaller keys.
    pub(in crate::streaming) below: u64,
    /// Pairs inside.
    pub(in crate::streaming) count: u64,
    /// Ranks of the cuts inside (one per range start, repeated where ranges are empty).
    pub(in crate::streaming) cuts: Vec<u64>,
    /// Pairs in the sub-buckets either side of this one in the pass that found it (0 where
    /// there is none): the density the speculative pass interpolates.
    #[serde(default)]
    pub(in crate::streaming) around: [u64; 2],
    /// In a search of weighted pairs: the interval's weight and its cuts as positions in
    /// running weight (then `below` and `count` still count pairs, and `cuts` is empty).
    #[serde(default)]
    pub(in crate::streaming) mass: Option<Mass>,
}

/// A cut interval of weighted pairs, in running weight: a range starts at position `c`, and
/// the pair at `s <= c < s + w` holds the cut (split there when `s < c`), as the in-memory
/// walk over sorted pairs splits rows (docs/conventions.md, "Sample weights").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(in crate::streaming) struct Mass {
    /// Weight of the group's pairs with smaller keys.
    pub(in crate::streaming) below: f64,
    /// Weight of the pairs inside.
    pub(in crate::streaming) inside: f64,
    /// Positions of the cuts inside, ascending (repeated where ranges are empty).
    pub(in crate::streaming) cuts: Vec<f64>,
}

impl Interval {
    pub(in crate::streaming) fn contains(&self, key: Key) -> bool {
        self.shift >= 128 || key >> self.shift == self.lo >> self.shift
    }

    /// Cuts inside (ranks, or positions in running weight).
    pub(in crate::streaming) fn n_cuts(&self) -> usize {
        self.mass.as_ref().map_or(self.cuts.len(), |m| m.cuts.len())
    }
}

/// The search of one group: its size (after the first pass) and its cut intervals, sorted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(in crate::streaming) struct GroupSearch {
    pub(in crate::streaming) n: u64,
    pub(in crate::streaming) intervals: Vec<Interval>,
    /// `cuts_below[i]`: cuts in intervals `0..i` (`intervals.len() + 1` entries).
    pub(in crate::streaming) cuts_below: Vec<u64>,
}

impl GroupSearch {
    pub(in crate::streaming) fn new(intervals: Vec<Interval>, n: u64) -> Self {
        let mut cuts_below = vec![0];
        for iv in &intervals {
            cuts_below.push(cuts_below.last().copied().unwrap_or(0) + iv.n_cuts() as u64);
        }
        Self { n, intervals, cuts_below }
    }

    /// `Ok(i)`: inside interval `i`; `Err(i)`: outside, above intervals `0..i`.
    #[inline(always)]
    pub(in crate::streaming) fn locate(&self, key: Key) -> std::result::Result<usize, usize> {
        let i = self.intervals.partition_point(|iv| iv.lo <= key);
        if i > 0 && self.intervals[i - 1].contains(key) { Ok(i - 1) } else { Err(i) }
    }
}
