//! Equal-mass ranges of one group given as its scores in sample order: a radix pass over the
//! scores' order keys plus exact selection inside the buckets the cuts fall in, without
//! ranking every score (the class columns' fast path).

use std::cmp::Ordering;

use crate::binning::{RankedPair, accumulate_ranges, multi_select, range_start};
use crate::kernels::dispatch;
use crate::stats::{BinLayout, BinStats};

/// `f64` bits mapped so that unsigned order is [`f64::total_cmp`] order.
#[inline]
fn order_key(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
}

/// The inverse of [`order_key`].
#[inline]
fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Buckets of the radix pass (11 bits).
const BUCKET_BITS: u32 = 11;

/// Size of the per-bucket tables: every bucket index is below it, and indices are masked
/// with `TABLE - 1` (a no-op) so indexing needs no bounds check.
const TABLE: usize = 1 << BUCKET_BITS;

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

/// One group's scores bucketed by the radix pass, against the range cuts.
struct Buckets {
    radix: Radix,
    /// Sorted positions where ranges 1.. start.
    cuts: Vec<usize>,
    /// Per bucket `[count, sum]` (all [`TABLE`] entries; the first `n_buckets` used).
    cells: Vec<[f64; 2]>,
    /// Sorted position of each bucket's first member, and the total last.
    start: Vec<usize>,
    /// Whether a cut falls strictly inside the bucket.
    split: Vec<bool>,
    /// Where a split bucket's members start among the gathered members.
    offset: Vec<usize>,
    /// Members of all split buckets.
    n_split: usize,
}

impl Buckets {
    /// The radix pass: counts and sums per bucket, bucket starts, and which buckets the cuts
    /// of `n_ranges` ranges split.
    fn count(values: &[f64], bounds: (f64, f64), n_ranges: usize) -> Self {
        let n = values.len();
        let cuts: Vec<usize> = (1..n_ranges).map(|r| range_start(r, n, n_ranges)).collect();
        let (kmin, kmax) = (order_key(bounds.0), order_key(bounds.1));
        let span = kmax - kmin;
        let shift = (64 - span.leading_zeros()).saturating_sub(BUCKET_BITS);
        let n_buckets = ((span >> shift) + 1) as usize;
        let radix = Radix { kmin, shift, nonneg: bounds.0.is_sign_positive() };
        let mut cells = vec![[0.0f64; 2]; TABLE];
        let table: &mut [[f64; 2]; TABLE] = (&mut cells[..]).try_into().expect("TABLE cells");
        radix.for_each(values, |b, v| {
            let cell = &mut table[b];
            cell[0] += 1.0;
            cell[1] += v;
        });
        let mut start = vec![0usize; n_buckets + 1];
        for b in 0..n_buckets {
            start[b + 1] = start[b] + cells[b][0] as usize;
        }
        let mut split = vec![false; n_buckets];
        for &c in &cuts {
            let b = start.partition_point(|&s| s <= c) - 1;
            split[b] |= start[b] < c;
        }
        let mut offset = vec![0usize; n_buckets];
        let mut n_split = 0;
        for b in (0..n_buckets).filter(|&b| split[b]) {
            offset[b] = n_split;
            n_split += start[b + 1] - start[b];
        }
        Self { radix, cuts, cells, start, split, offset, n_split }
    }

    /// The range sorted position `pos` falls in.
    fn range_at(&self, pos: usize) -> usize {
        self.cuts.partition_point(|&c| c <= pos)
    }

    /// The bucket holding sorted position `pos`.
    fn bucket_at(&self, pos: usize) -> usize {
        self.start.partition_point(|&s| s <= pos) - 1
    }

    /// Adds each whole (unsplit, non-empty) bucket's sum to its range.
    fn add_whole_sums(&self, sums: &mut [f64]) {
        let mut whole = vec![0.0f64; sums.len()];
        let n_buckets = self.split.len();
        for b in (0..n_buckets).filter(|&b| !self.split[b] && self.start[b + 1] > self.start[b]) {
            whole[self.range_at(self.start[b])] += self.cells[b][1];
        }
        sums.iter_mut().zip(whole).for_each(|(s, w)| *s += w);
    }

    /// The split buckets' members (a few percent of the scores) into `scratch`, bucket by
    /// bucket, in sample order within each.
    fn gather_split_members(&self, values: &[f64], scratch: &mut Vec<f64>) {
        scratch.clear();
        scratch.resize(self.n_split, 0.0);
        // Next free slot of each split bucket's members (usize::MAX: a whole bucket).
        let mut fill = vec![usize::MAX; TABLE];
        for b in (0..self.split.len()).filter(|&b| self.split[b]) {
            fill[b] = self.offset[b];
        }
        let fill: &mut [usize; TABLE] = (&mut fill[..]).try_into().expect("TABLE slots");
        let members = &mut scratch[..];
        self.radix.for_each(values, |b, v| {
            let slot = &mut fill[b];
            if *slot != usize::MAX {
                members[*slot] = v;
                *slot += 1;
            }
        });
    }

    /// Exact selection inside each split bucket, adding each piece between cuts to its
    /// range; afterwards `scratch` holds, at each cut's position, the cut value.
    fn add_split_sums(&self, sums: &mut [f64], scratch: &mut [f64]) {
        for b in (0..self.split.len()).filter(|&b| self.split[b]) {
            let (lo, hi) = (self.start[b], self.start[b + 1]);
            let members = &mut scratch[self.offset[b]..self.offset[b] + hi - lo];
            let local: Vec<usize> =
                self.cuts.iter().filter(|&&c| lo < c && c < hi).map(|c| c - lo).collect();
            multi_select(members, &local, &f64::total_cmp);
            let mut pieces = vec![0];
            pieces.extend(local.iter().copied());
            pieces.push(members.len());
            for w in pieces.windows(2) {
                sums[self.range_at(lo + w[0])] += members[w[0]..w[1]].iter().sum::<f64>();
            }
        }
    }

    /// The value at each cut's sorted position: the selected element when the cut splits its
    /// bucket, else the minimum of the bucket it opens.
    fn cut_values(&self, values: &[f64], scratch: &[f64]) -> Vec<f64> {
        let cut_value = |p: usize| -> f64 {
            let b = self.bucket_at(p);
            if self.split[b] && self.start[b] < p {
                scratch[self.offset[b] + p - self.start[b]]
            } else {
                values
                    .iter()
                    .copied()
                    .filter(|&v| self.radix.of(v) == b)
                    .fold(f64::INFINITY, |m, v| if v.total_cmp(&m).is_lt() { v } else { m })
            }
        };
        self.cuts.iter().map(|&p| cut_value(p)).collect()
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

/// The radix bucket of a score: `(order_key(v) - kmin) >> shift`, masked.
#[derive(Clone, Copy)]
struct Radix {
    kmin: u64,
    shift: u32,
    /// Every score is `>= +0.0`: the order key is the bits with the sign bit set.
    nonneg: bool,
}

impl Radix {
    /// The bucket of one score (any sign).
    fn of(&self, v: f64) -> usize {
        ((order_key(v) - self.kmin) >> self.shift) as usize
    }

    /// Calls `visit(bucket, v)` for every score, in order. Bucket indices are computed
    /// [`CHUNK`] at a time in a loop of their own, free of the table updates' dependencies,
    /// so the key computation vectorises.
    #[inline(always)]
    fn for_each(&self, values: &[f64], visit: impl FnMut(usize, f64)) {
        const SIGN: u64 = 1 << 63;
        dispatch(
            #[inline(always)]
            || {
                if self.nonneg {
                    self.for_each_keyed(values, |v: f64| v.to_bits() | SIGN, visit);
                } else {
                    self.for_each_keyed(values, order_key, visit);
                }
            },
        );
    }

    #[inline(always)]
    fn for_each_keyed(
        &self,
        values: &[f64],
        key: impl Fn(f64) -> u64,
        mut visit: impl FnMut(usize, f64),
    ) {
        let (kmin, shift) = (self.kmin, self.shift);
        let bucket = |v: f64| ((key(v) - kmin) >> shift) as usize & (TABLE - 1);
        let mut at = [0usize; CHUNK];
        let chunks = values.chunks_exact(CHUNK);
        let tail = chunks.remainder();
        for c in chunks {
            for (b, &v) in at.iter_mut().zip(c) {
                *b = bucket(v);
            }
            for (&b, &v) in at.iter().zip(c) {
                visit(b, v);
            }
        }
        for &v in tail {
            visit(bucket(v), v);
        }
    }
}

/// Scores whose buckets [`Radix::for_each`] computes together.
const CHUNK: usize = 8;

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
