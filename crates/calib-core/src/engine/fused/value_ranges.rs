//! Equal-mass ranges of one group given as its scores in sample order: a radix pass over the
//! scores' order keys plus exact selection inside the buckets the cuts fall in, without
//! ranking every score (the class columns' fast path).

use std::cmp::Ordering;

use super::buckets::{Buckets, from_order_key, order_key};
use crate::binning::{RankedPair, accumulate_ranges, range_start};
use crate::stats::{BinLayout, BinStats};

/// Equal-mass ranges of one group given as its scores in sample order and the (sorted)
/// positions of the pairs whose outcome is 1: the fast path for class columns, where few
/// outcomes are 1.
///
/// A radix pass buckets the scores by the top bits of their order key; buckets that no cut
/// splits go whole to their range, and only the scores of split buckets are selected exactly
/// (multi-quickselect). Score sums need no order among equal values. A hit's range comes
/// from the cut values; a hit equal to a cut value is after the cut iff (#values below) +
/// (#equal values before it in sample order) reaches the cut position (a scan of the group);
/// past a few such ties the group is ranked exactly by [`accumulate_ranges`].
#[cfg(test)]
fn accumulate_value_ranges(
    stats: &mut BinStats,
    group: usize,
    values: &[f64],
    hits: &[usize],
    scratch: &mut Vec<f64>,
) {
    if let Some(bounds) = value_bounds(values) {
        accumulate_value_ranges_within(stats, group, values, bounds, hits, scratch);
    }
}

/// The smallest and the largest of `values` in [`f64::total_cmp`] order (`None` when empty).
pub(super) fn value_bounds(values: &[f64]) -> Option<(f64, f64)> {
    let (kmin, kmax) = values.iter().fold((u64::MAX, 0), |(lo, hi), &v| {
        let k = order_key(v);
        (lo.min(k), hi.max(k))
    });
    (!values.is_empty()).then(|| (from_order_key(kmin), from_order_key(kmax)))
}

/// [`accumulate_value_ranges`] with the smallest and largest value (`bounds`, in
/// [`f64::total_cmp`] order, as [`value_bounds`] gives them) already known, as a column build
/// can track them: saves a pass over the values.
///
/// `bounds` must be exact; a wrong pair gives wrong ranges (debug builds check). Groups of at
/// most 1,024 scores are ranked outright and do not use them.
pub(super) fn accumulate_value_ranges_within(
    stats: &mut BinStats,
    group: usize,
    values: &[f64],
    bounds: (f64, f64),
    hits: &[usize],
    scratch: &mut Vec<f64>,
) {
    if values.len() <= RANK_BELOW {
        rank_ranges(stats, group, values, hits);
    } else {
        radix_ranges(stats, group, values, bounds, hits, scratch);
    }
}

/// Groups of at most this many scores are ranked outright ([`rank_ranges`]): cheaper than
/// setting up the radix pass's tables (~80 KiB per group) and scanning a short group for each
/// cut that opens a bucket. TACE's filtered columns (a few hundred scores each at K = 1,000)
/// are the typical short group.
const RANK_BELOW: usize = 1024;

/// Equal-mass ranges by ranking every score (stable by sample position).
fn rank_ranges(stats: &mut BinStats, group: usize, values: &[f64], hits: &[usize]) {
    accumulate_ranges(stats, group, &mut ranked_pairs(values, hits));
}

/// The scores as pairs in sample order, the positions `hits` with outcome 1.
fn ranked_pairs(values: &[f64], hits: &[usize]) -> Vec<RankedPair> {
    let mut pairs: Vec<RankedPair> =
        values.iter().enumerate().map(|(j, &s)| RankedPair::new(s, j as u64, false)).collect();
    hits.iter().for_each(|&j| pairs[j] = RankedPair::new(values[j], j as u64, true));
    pairs
}

/// Equal-mass ranges by the radix pass and selection in the split buckets.
fn radix_ranges(
    stats: &mut BinStats,
    group: usize,
    values: &[f64],
    bounds: (f64, f64),
    hits: &[usize],
    scratch: &mut Vec<f64>,
) {
    let (n, n_ranges) = (values.len(), stats.n_bins());
    if n == 0 {
        return;
    }
    debug_assert_eq!(
        value_bounds(values).map(|(a, b)| (a.to_bits(), b.to_bits())),
        Some((bounds.0.to_bits(), bounds.1.to_bits()))
    );
    let base = group * n_ranges;
    for r in 0..n_ranges {
        stats.count[base + r] +=
            (range_start(r + 1, n, n_ranges) - range_start(r, n, n_ranges)) as f64;
    }
    let buckets = Buckets::count(values, bounds, n_ranges);
    let sums = &mut stats.sum_score[base..base + n_ranges];
    buckets.add_whole_sums(sums);
    buckets.gather_split_members(values, scratch);
    buckets.add_split_sums(sums, scratch);
    let cut_values = buckets.cut_values(values, scratch);
    let outcomes = &mut stats.sum_outcome[base..base + n_ranges];
    match hit_ranges(values, hits, &buckets.cuts, &cut_values) {
        Some(ranges) => ranges.into_iter().for_each(|r| outcomes[r] += 1.0),
        None => {
            // Heavy ties at the cuts: the outcome sums from an exact ranking.
            let mut exact = BinStats::zeros(BinLayout::Adaptive { n_ranges }, 1);
            accumulate_ranges(&mut exact, 0, &mut ranked_pairs(values, hits));
            outcomes.iter_mut().zip(&exact.sum_outcome).for_each(|(o, e)| *o += e);
        }
    }
}

/// The range of each hit (position in `values` with outcome 1), from the cut values. A hit
/// equal to a cut value is after the cut iff (#values below) + (#equal values before it in
/// sample order) reaches the cut position; `None` past 64 such scans (heavy ties: the caller
/// ranks exactly instead).
fn hit_ranges(
    values: &[f64],
    hits: &[usize],
    cuts: &[usize],
    cut_values: &[f64],
) -> Option<Vec<usize>> {
    let mut tie_scans = 0;
    let mut ranges = Vec::with_capacity(hits.len());
    for &i in hits {
        let v = values[i];
        let mut r = 0;
        for (c, &p) in cuts.iter().enumerate() {
            let after = p == 0
                || match v.total_cmp(&cut_values[c]) {
                    Ordering::Greater => true,
                    Ordering::Less => false,
                    Ordering::Equal => {
                        tie_scans += 1;
                        if tie_scans > 64 {
                            return None;
                        }
                        let below = values.iter().filter(|x| x.total_cmp(&v).is_lt()).count();
                        let before = values[..i].iter().filter(|x| x.total_cmp(&v).is_eq()).count();
                        below + before >= p
                    }
                };
            if !after {
                break;
            }
            r = c + 1;
        }
        ranges.push(r);
    }
    Some(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binning::adaptive_stats;

    #[test]
    fn value_ranges_match_ranked_pairs() {
        // Coarse scores (many ties, some at cuts) and sparse hits, n around and below R;
        // `signed`: shifted by -0.5, with -0.0 and +0.0 both present (the general order key).
        let mut x = 99u64;
        for (n, signed) in [1usize, 2, 5, 14, 15, 16, 100, 1024, 1025, 2001]
            .into_iter()
            .flat_map(|n| [(n, false), (n, true)])
        {
            for levels in [1u64, 2, 3, 1000, 0] {
                let values: Vec<f64> = (0..n)
                    .map(|i| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let v = match levels {
                            // Probabilities over many orders of magnitude, as softmax columns.
                            0 => (-(((x >> 11) as f64 / (1u64 << 53) as f64) * 60.0)).exp(),
                            l => ((x >> 33) % l) as f64 / l as f64,
                        };
                        match (signed, v - 0.5) {
                            (false, _) => v,
                            (true, s) if s == 0.0 && i % 2 == 0 => -0.0,
                            (true, s) => s,
                        }
                    })
                    .collect();
                let hits: Vec<usize> = (0..n).filter(|i| i % 7 == 3).collect();
                let pairs =
                    (0..n).map(|i| RankedPair::new(values[i], i as u64, i % 7 == 3)).collect();
                let want = adaptive_stats(vec![pairs], 15);
                // The public entry (ranking below RANK_BELOW scores) and the radix pass at
                // every size.
                let bounds = value_bounds(&values);
                for radix in [false, true] {
                    let mut got = BinStats::zeros(BinLayout::Adaptive { n_ranges: 15 }, 1);
                    if radix {
                        let bounds = bounds.expect("n >= 1");
                        radix_ranges(&mut got, 0, &values, bounds, &hits, &mut Vec::new());
                    } else {
                        accumulate_value_ranges(&mut got, 0, &values, &hits, &mut Vec::new());
                    }
                    let what = format!("n={n} levels={levels} signed={signed} radix={radix}");
                    assert_eq!(got.count, want.count, "{what}");
                    assert_eq!(got.sum_outcome, want.sum_outcome, "{what}");
                    for (a, b) in got.sum_score.iter().zip(&want.sum_score) {
                        assert!((a - b).abs() < 1e-9, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn bounds_follow_the_total_order() {
        assert_eq!(value_bounds(&[]), None);
        let (lo, hi) = value_bounds(&[0.0, -0.0, 3.5, 1e-300, -2.0]).unwrap();
        assert_eq!((lo, hi), (-2.0, 3.5));
        let (lo, hi) = value_bounds(&[0.0, -0.0]).unwrap();
        assert_eq!((lo.to_bits(), hi.to_bits()), ((-0.0f64).to_bits(), 0.0f64.to_bits()));
        for v in [0.0, -0.0, 1.0, -1.0, f64::MIN_POSITIVE, f64::MAX, -f64::MAX, 5e-324] {
            assert_eq!(from_order_key(order_key(v)).to_bits(), v.to_bits());
        }
    }
}
