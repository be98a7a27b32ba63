//! Adaptive (equal-mass) ranges from the stable order of each group's scores.

use std::cmp::Ordering;

use crate::stats::{BinLayout, BinStats};

/// The range of sorted position `j` among `n` scores split into `n_ranges` equal-mass ranges.
///
/// Range `r` holds positions `floor(r n / R) .. floor((r + 1) n / R) - 1` (docs/conventions.md), so
/// position `j` is in the largest `r` with `r n < (j + 1) R`, i.e. `((j + 1) R - 1) / n`.
///
/// ```
/// use calib_core::binning::adaptive_range_of;
/// // n = 10, R = 3: positions 0-2 | 3-5 | 6-9
/// let r: Vec<usize> = (0..10).map(|j| adaptive_range_of(j, 10, 3)).collect();
/// assert_eq!(r, [0, 0, 0, 1, 1, 1, 2, 2, 2, 2]);
/// // n = 2 < R = 3: range 0 stays empty
/// assert_eq!((adaptive_range_of(0, 2, 3), adaptive_range_of(1, 2, 3)), (1, 2));
/// ```
pub fn adaptive_range_of(j: usize, n: usize, n_ranges: usize) -> usize {
    (((j + 1) as u128 * n_ranges as u128 - 1) / n as u128) as usize
}

/// First sorted position of range `r`: `floor(r n / R)`.
pub(crate) fn range_start(r: usize, n: usize, n_ranges: usize) -> usize {
    (r as u128 * n as u128 / n_ranges as u128) as usize
}

/// Where range `r` of weighted pairs of total weight `total` starts in running weight:
/// `floor(r W / R)` for whole weights (the repeated rows' positions, exact: W < 2^53),
/// `r W / R` for fractional ones (docs/conventions.md, "Sample weights").
pub fn weighted_range_start(r: usize, total: f64, n_ranges: usize, integral: bool) -> f64 {
    if integral {
        range_start(r, total as usize, n_ranges) as f64
    } else {
        r as f64 * total / n_ranges as f64
    }
}

/// A score with its position in sample order and its outcome, ordered by (score, position):
/// exactly the order of a stable sort by score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankedPair {
    /// The score.
    pub score: f64,
    /// `position << 1 | outcome`.
    tag: u64,
}

impl RankedPair {
    /// A pair at `position` (sample order; unique within its group) with outcome `hit`.
    pub fn new(score: f64, position: u64, hit: bool) -> Self {
        Self { score, tag: (position << 1) | hit as u64 }
    }

    /// The outcome, 0 or 1.
    pub fn outcome(&self) -> f64 {
        (self.tag & 1) as f64
    }

    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then(self.tag.cmp(&other.tag))
    }
}

/// Multi-quickselect: afterwards `items[p]` is the `p`-th smallest (by `cmp`) for every cut
/// `p`, and the members of each range between cuts are contiguous (in any order within).
/// `O(n log R)` instead of a full sort's `O(n log n)`.
///
/// The element at a cut is left out of both recursions, so later selections cannot move it.
pub(crate) fn multi_select<T>(items: &mut [T], cuts: &[usize], cmp: &impl Fn(&T, &T) -> Ordering) {
    if cuts.is_empty() || items.is_empty() {
        return;
    }
    let mid = cuts.len() / 2;
    let p = cuts[mid];
    items.select_nth_unstable_by(p, cmp);
    let (left, right) = items.split_at_mut(p);
    let below: Vec<usize> = cuts[..mid].iter().copied().filter(|&c| c < p).collect();
    multi_select(left, &below, cmp);
    let above: Vec<usize> = cuts[mid + 1..].iter().filter(|&&c| c > p).map(|c| c - p - 1).collect();
    multi_select(&mut right[1..], &above, cmp);
}

/// Adds the equal-mass range statistics of one group's pairs to `stats` (group `group`).
pub fn accumulate_ranges(stats: &mut BinStats, group: usize, pairs: &mut [RankedPair]) {
    let n = pairs.len();
    let n_ranges = stats.n_bins();
    if n == 0 {
        return;
    }
    let cuts: Vec<usize> = (1..n_ranges).map(|r| range_start(r, n, n_ranges)).collect();
    multi_select(pairs, &cuts, &RankedPair::cmp);
    for r in 0..n_ranges {
        let members = &pairs[range_start(r, n, n_ranges)..range_start(r + 1, n, n_ranges)];
        let i = group * n_ranges + r;
        stats.count[i] += members.len() as f64;
        stats.sum_score[i] += members.iter().map(|p| p.score).sum::<f64>();
        stats.sum_outcome[i] += members.iter().map(RankedPair::outcome).sum::<f64>();
    }
}

/// Equal-mass range statistics of each group of pairs.
///
/// Ranges follow a stable sort by score, ties in sample order (docs/conventions.md, "Adaptive
/// ranges"), found by selection rather than a full sort.
///
/// # Note
/// Runs on the host: burn 0.22's sorts are unstable on flex and read back to the host on wgpu,
/// and the convention needs ties in sample order.
pub fn adaptive_stats(groups: Vec<Vec<RankedPair>>, n_ranges: usize) -> BinStats {
    let mut stats = BinStats::zeros(BinLayout::Adaptive { n_ranges }, groups.len());
    for (g, mut pairs) in groups.into_iter().enumerate() {
        accumulate_ranges(&mut stats, g, &mut pairs);
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_sizes_differ_by_at_most_one() {
        for n in 1..60 {
            for r in 1..20 {
                let mut sizes = vec![0usize; r];
                (0..n).for_each(|j| sizes[adaptive_range_of(j, n, r)] += 1);
                for (i, &size) in sizes.iter().enumerate() {
                    assert_eq!(
                        size,
                        range_start(i + 1, n, r) - range_start(i, n, r),
                        "n={n} R={r}"
                    );
                    assert!(size == n / r || size == n / r + 1);
                }
            }
        }
    }

    #[test]
    fn ties_split_in_sample_order() {
        // Four equal scores, outcomes 1 1 0 0 in sample order, two ranges: the 1s come first.
        let g = (0..4).map(|i| RankedPair::new(0.5, i, i < 2)).collect();
        let s = adaptive_stats(vec![g], 2);
        assert_eq!(s.sum_outcome, vec![2.0, 0.0]);
        assert_eq!(s.count, vec![2.0, 2.0]);
    }

    #[test]
    fn selection_matches_a_stable_sort() {
        // Pseudo-random scores with many ties, against a plain stable sort.
        let mut x = 12345u64;
        let pairs: Vec<RankedPair> = (0..997)
            .map(|i| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                RankedPair::new(((x >> 33) % 50) as f64 / 50.0, i, (x >> 20) & 1 == 1)
            })
            .collect();
        let mut sorted = pairs.clone();
        sorted.sort_by(|a, b| a.score.total_cmp(&b.score));
        let mut expect = BinStats::zeros(BinLayout::Adaptive { n_ranges: 7 }, 1);
        for (j, p) in sorted.iter().enumerate() {
            expect.add(0, adaptive_range_of(j, 997, 7), p.score, p.outcome());
        }
        let got = adaptive_stats(vec![pairs], 7);
        assert_eq!(got.count, expect.count);
        assert_eq!(got.sum_outcome, expect.sum_outcome);
        for (a, b) in got.sum_score.iter().zip(&expect.sum_score) {
            assert!((a - b).abs() < 1e-12);
        }
    }
}
