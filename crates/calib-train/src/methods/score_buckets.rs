//! The pooled blocks of isotonic regression on unweighted 0/1 outcomes from buckets of scores,
//! sorting only the pairs near the blocks' ends.
//!
//! The scores' order keys ([`calib_kernels::order_key`]) fall into buckets: equal ranges of
//! keys, split finer where the scores are dense, about [`PER_BUCKET`] pairs each; of a bucket
//! only its count of pairs and of positives is kept. Pool-adjacent-violators then runs over the
//! buckets as points of their own, and over the pairs of the buckets *refined* (gathered and
//! sorted) as points. A bucket stands for its pairs when, whatever their order inside it,
//! they all belong to the block it falls in: in the cumulative sum diagram the fit is the
//! greatest convex minorant, a block one of its segments, and a bucket's path (its sums after
//! each pair) lies lowest under the segment's slope `S / W` when its `n0` negatives come first,
//! so with `(s, w)` the block's sums before the bucket,
//!
//! ```text
//! s W > S (w + n0)                 (strictly above the segment: no vertex inside the bucket)
//! ```
//!
//! and the bucket is neither the first nor the last point of its block (which give the block's
//! first and last score). Buckets that fail are refined and the pooling runs again, until every
//! bucket left stands; omitted points strictly above the pooled fit's minorant do not change
//! it, so the blocks are those of the sorted pairs (Barlow et al. 1972, the minorant as the
//! fit). Every sum and weight is a whole number, so they are exact in any grouping: the same
//! blocks, bit for bit, as [`super::pav_blocks::pooled_blocks`] over the sorted pairs.
//!
//! Ties: the buckets below a run of refined ones that may hold a score within [`TIE`] below its
//! smallest are refined too, so that the refined pairs' tie runs start where those of all the
//! pairs sorted would (a tie run reaching from refined pairs into a standing bucket is
//! harmless: the bucket lies inside the same block, after them). Where scores closer than [`TIE`] fill a long
//! stretch, that takes round after round and the pairs are sorted instead.
//!
//! At 10^6 scores of the binary benchmark (a sigmoid of normal logits, Bernoulli outcomes,
//! 321 blocks) 8 % of the pairs are sorted, in two rounds; every pair is read three times
//! (its key range, a coarse count and the buckets' counts) and once a round to gather the
//! refined ones (the last round, refining none, reads none).

use std::ops::Range;

use calib_kernels::{from_order_key, order_key};

use super::pav_blocks::{Block, TIE, push, tied_points};

/// Pairs per bucket aimed at.
const PER_BUCKET: usize = 32;

/// Coarse ranges of keys, each split into buckets by its count.
const COARSE_BITS: u32 = 12;

/// The rounds of refinement after which the pairs are sorted instead.
const ROUNDS: usize = 4;

/// The pooled blocks of the unweighted pairs `(scores[i], outcomes[i])` in score order, as
/// the sorted pairs' blocks; `None` where the buckets do not help, and the pairs are then
/// sorted: a span of keys of 2^63 or more (scores of both signs far from 0), 2^26 pairs or
/// more (the comparisons' products whole below 2^53), more than a quarter of the pairs
/// refined, or [`ROUNDS`] rounds.
pub(crate) fn bucketed_blocks(scores: &[f64], outcomes: &[bool]) -> Option<Vec<Block>> {
    let n = scores.len();
    if n == 0 || n >= 1 << 26 {
        return None;
    }
    let buckets = Buckets::new(scores)?;
    let counts = buckets.counts(scores, outcomes);
    let mut refined = vec![false; counts.len()];
    let mut fine: Vec<u64> = Vec::new();
    for _ in 0..ROUNDS {
        let walk = Walk { buckets: &buckets, counts: &counts, refined: &refined, fine: &fine };
        let (blocks, starts) = walk.pooled();
        let failing = walk.failing(&blocks, &starts);
        if failing.is_empty() {
            return Some(blocks);
        }
        failing.into_iter().for_each(|b| refined[b] = true);
        let total: u64 = (0..counts.len()).filter(|&b| refined[b]).map(|b| counts[b].0).sum();
        if total as usize > n / 4 {
            return None;
        }
        fine = buckets.gather(scores, outcomes, &refined, total as usize);
    }
    None
}

/// The buckets: keys `k - lo` cut into `2^COARSE_BITS` coarse ranges of `2^shift` keys, each
/// range `c` into `2^(shift - sub[c])` buckets numbered from `first[c]`.
struct Buckets {
    lo: u64,
    shift: u32,
    first: Vec<u32>,
    sub: Vec<u8>,
}

impl Buckets {
    /// The buckets for `scores`: their key range, then a coarse count that splits each range.
    fn new(scores: &[f64]) -> Option<Self> {
        let ranges = over_rows(scores.len(), |rows| {
            let keys = scores[rows].iter().map(|&s| order_key(s));
            keys.fold((u64::MAX, 0), |(lo, hi), k| (lo.min(k), hi.max(k)))
        });
        let lo = ranges.iter().map(|r| r.0).min()?;
        let span = ranges.iter().map(|r| r.1).max()? - lo;
        if span >> 63 != 0 {
            return None;
        }
        let shift = (u64::BITS - span.leading_zeros()).saturating_sub(COARSE_BITS);
        let coarse = ((span >> shift) + 1) as usize;
        let counts = over_rows(scores.len(), |rows| {
            let mut counts = vec![0u32; coarse];
            scores[rows].iter().for_each(|&s| counts[((order_key(s) - lo) >> shift) as usize] += 1);
            counts
        });
        let (mut first, mut sub, mut at) = (Vec::with_capacity(coarse + 1), vec![0; coarse], 0u32);
        for (c, sub) in sub.iter_mut().enumerate() {
            let count: usize = counts.iter().map(|piece| piece[c] as usize).sum();
            let bits = (count / PER_BUCKET).max(1).next_power_of_two().trailing_zeros().min(shift);
            first.push(at);
            *sub = (shift - bits) as u8;
            at += 1 << bits;
        }
        first.push(at);
        Some(Self { lo, shift, first, sub })
    }

    /// The number of buckets.
    fn len(&self) -> usize {
        self.first[self.first.len() - 1] as usize
    }

    /// The bucket of key offset `k` (`order_key(s) - lo`).
    #[inline(always)]
    fn of(&self, k: u64) -> usize {
        let c = (k >> self.shift) as usize;
        let within = (k & ((1 << self.shift) - 1)) >> self.sub[c];
        self.first[c] as usize + within as usize
    }

    /// The smallest score whose key falls into bucket `b`.
    fn start(&self, b: usize) -> f64 {
        let c = self.first.partition_point(|&f| f as usize <= b) - 1;
        let within = (b - self.first[c] as usize) as u64;
        from_order_key(self.lo + ((c as u64) << self.shift) + (within << self.sub[c]))
    }

    /// Each bucket's count of pairs and of positives.
    fn counts(&self, scores: &[f64], outcomes: &[bool]) -> Vec<(u64, u64)> {
        // Count and positives packed in one word: one add a pair.
        let pieces = over_rows(scores.len(), |rows| {
            let mut packed = vec![0u64; self.len()];
            for (&s, &o) in scores[rows.clone()].iter().zip(&outcomes[rows]) {
                packed[self.of(order_key(s) - self.lo)] += 1 + (u64::from(o) << 32);
            }
            packed
        });
        (0..self.len())
            .map(|b| {
                let packed: u64 = pieces.iter().map(|piece| piece[b]).sum();
                (packed & 0xFFFF_FFFF, packed >> 32)
            })
            .collect()
    }

    /// The refined buckets' pairs as sorted keys `(order_key(s) - lo) << 1 | outcome` (`total`
    /// of them), each thread's sorted on its core, then merged.
    fn gather(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        refined: &[bool],
        total: usize,
    ) -> Vec<u64> {
        let pieces = over_rows(scores.len(), |rows| {
            let mut keys = Vec::with_capacity(total);
            for (&s, &o) in scores[rows.clone()].iter().zip(&outcomes[rows]) {
                let k = order_key(s) - self.lo;
                if refined[self.of(k)] {
                    keys.push(k << 1 | u64::from(o));
                }
            }
            keys.sort_unstable();
            keys
        });
        pieces.into_iter().reduce(|a, b| merged(&a, &b)).unwrap_or_default()
    }

    /// The score of a gathered key.
    #[inline(always)]
    fn score(&self, key: u64) -> f64 {
        from_order_key((key >> 1) + self.lo)
    }
}

/// A point of the pooling: a bucket standing for its pairs, or a point of sorted pairs.
#[derive(Debug, Clone, Copy)]
struct Point {
    sum: f64,
    weight: f64,
    first: f64,
    /// The bucket it stands for, `None` for sorted pairs.
    bucket: Option<usize>,
}

/// One round: the buckets, their counts, which are refined and the refined pairs, sorted.
struct Walk<'a> {
    buckets: &'a Buckets,
    counts: &'a [(u64, u64)],
    refined: &'a [bool],
    fine: &'a [u64],
}

impl Walk<'_> {
    /// `visit(point)` for the points in score order: each bucket that stands, and the tied
    /// points of each run of refined buckets (read as one, so that no tie is cut).
    fn points(&self, mut visit: impl FnMut(Point)) {
        let (mut b, mut at) = (0, 0);
        while b < self.counts.len() {
            let (count, positives) = self.counts[b];
            if count > 0 && !self.refined[b] {
                let (sum, weight) = (positives as f64, count as f64);
                visit(Point { sum, weight, first: f64::NAN, bucket: Some(b) });
                b += 1;
                continue;
            }
            let mut end = at;
            while b < self.counts.len() && (self.counts[b].0 == 0 || self.refined[b]) {
                end += self.counts[b].0 as usize;
                b += 1;
            }
            let triples =
                self.fine[at..end].iter().map(|&k| (self.buckets.score(k), (k & 1) as f64, 1.0));
            for (first, sum, weight) in tied_points(triples) {
                visit(Point { sum, weight, first, bucket: None });
            }
            at = end;
        }
    }

    /// The pooled blocks over [`Self::points`] and the index of each block's first point.
    fn pooled(&self) -> (Vec<Block>, Vec<usize>) {
        let (mut blocks, mut starts, mut i) = (Vec::new(), Vec::new(), 0);
        self.points(|p| {
            let pooled = push(&mut blocks, Block::point((p.first, p.sum, p.weight)));
            let start = if pooled > 0 { starts[starts.len() - pooled] } else { i };
            starts.truncate(starts.len() - pooled);
            starts.push(start);
            i += 1;
        });
        (blocks, starts)
    }

    /// The buckets that cannot stand for their pairs (module docs), and the neighbours of
    /// refined runs within [`TIE`] of them.
    fn failing(&self, blocks: &[Block], starts: &[usize]) -> Vec<usize> {
        let mut failing = Vec::new();
        let (mut i, mut j, mut before) = (0, 0, (0u64, 0u64));
        self.points(|p| {
            while j + 1 < starts.len() && starts[j + 1] <= i {
                (j, before) = (j + 1, (0, 0));
            }
            let end = starts.get(j + 1).copied().unwrap_or(usize::MAX);
            if let Some(b) = p.bucket {
                // Whole numbers below 2^26: the products are exact.
                let (s, w) = (blocks[j].sum as u64, blocks[j].weight as u64);
                let negatives = (p.weight - p.sum) as u64;
                let above = before.0 * w > s * (before.1 + negatives);
                if i == starts[j] || i + 1 == end || !above {
                    failing.push(b);
                }
            }
            before = (before.0 + p.sum as u64, before.1 + p.weight as u64);
            i += 1;
        });
        failing.extend(self.tied_neighbours());
        failing
    }

    /// The standing buckets that may hold the first of a tie run reaching into a run of refined
    /// ones: the refined run's points would start their tie runs elsewhere than the sorted
    /// pairs'. (A tie run reaching from refined buckets into a standing one is harmless: the
    /// standing bucket is in the same block, after it.)
    fn tied_neighbours(&self) -> Vec<usize> {
        let nonempty: Vec<usize> =
            (0..self.counts.len()).filter(|&b| self.counts[b].0 > 0).collect();
        let (mut near, mut at) = (Vec::new(), 0);
        for run in nonempty.chunk_by(|&a, &b| self.refined[a] == self.refined[b]) {
            let count: u64 = run.iter().map(|&b| self.counts[b].0).sum();
            if !self.refined[run[0]] {
                continue;
            }
            let keys = &self.fine[at..at + count as usize];
            at += count as usize;
            let smallest = self.buckets.score(keys[0]);
            // Every bucket below that may hold the first of a tie run reaching into the run (one
            // round: a run of tied scores can span many buckets).
            let start = nonempty.partition_point(|&b| b < run[0]);
            let tied = |&&b: &&usize| smallest - self.buckets.start(b + 1) < TIE;
            near.extend(nonempty[..start].iter().rev().take_while(tied));
        }
        near
    }
}

/// The sorted keys of `a` and `b`, both sorted.
fn merged(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let take_a = a[i] <= b[j];
        out.push(if take_a { a[i] } else { b[j] });
        i += usize::from(take_a);
        j += usize::from(!take_a);
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// `work(rows)` over `0..n` cut into one range per thread (in order).
fn over_rows<R: Send>(n: usize, work: impl Fn(Range<usize>) -> R + Sync) -> Vec<R> {
    let pieces = calib_kernels::threads().clamp(1, n.div_ceil(1 << 14).max(1));
    let ranges: Vec<Range<usize>> =
        (0..pieces).map(|t| t * n / pieces..(t + 1) * n / pieces).collect();
    calib_kernels::in_order(&ranges, |rows| work(rows.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::pav_blocks::pooled_blocks;

    /// The sorted pairs' blocks, one pass.
    fn sorted_blocks(scores: &[f64], outcomes: &[bool]) -> Vec<Block> {
        let mut pairs: Vec<(f64, bool)> =
            scores.iter().copied().zip(outcomes.iter().copied()).collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let triples = pairs.iter().map(|&(s, o)| (s, f64::from(u8::from(o)), 1.0));
        pooled_blocks(tied_points(triples))
    }

    /// A uniform draw on `[0, 1)` for pair `i` (SplitMix64).
    fn uniform(i: usize) -> f64 {
        let mut z = (i as u64).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as f64 / 2f64.powi(64)
    }

    /// The buckets give the sorted pairs' blocks bit for bit: smooth, skewed and signed
    /// scores, scores down to 1e-36 (a twentieth of them one tie run, and the scores up to
    /// 1e-11 closer than the tie tolerance), a tenth of them at 0 and at 0.95, a grid of ties, scores 1e-16 apart (tied by the
    /// rule), one value; outcomes
    /// drawn calibrated, balanced, rare, as steps, and periodic (few blocks, flat partial sums:
    /// most buckets refined, the pairs then sorted).
    #[test]
    fn buckets_give_the_sorted_blocks() {
        let n = 200_000;
        let smooth: Vec<f64> = (0..n).map(|i| 0.001 + 0.998 * uniform(i + n)).collect();
        let skewed: Vec<f64> = smooth.iter().map(|s| s.powi(3)).collect();
        let signed: Vec<f64> = smooth.iter().map(|s| (s - 0.5) * 1e-3).collect();
        let tiny: Vec<f64> = smooth.iter().map(|s| s.powi(12)).collect();
        let grid: Vec<f64> = smooth.iter().map(|s| (s * 997.0).floor() / 997.0).collect();
        let close: Vec<f64> = smooth.iter().map(|s| 0.5 + (s * 1e3).floor() * 1e-16).collect();
        let ends: Vec<f64> =
            smooth.iter().map(|&s| if s < 0.05 { 0.0 } else { s.min(0.95) }).collect();
        let one = vec![0.25; n];
        let (mut taken, mut tried) = (0, 0);
        for (name, scores) in [
            ("smooth", &smooth),
            ("skewed", &skewed),
            ("signed", &signed),
            ("tiny", &tiny),
            ("ends", &ends),
            ("grid", &grid),
            ("close", &close),
            ("one", &one),
        ] {
            let rules: [(&str, &dyn Fn(usize) -> bool); 5] = [
                ("calibrated", &|i| uniform(i) < smooth[i]),
                ("balanced", &|i| uniform(i) < 0.5),
                ("rare", &|i| uniform(i) < 0.02 * smooth[i]),
                ("steps", &|i| uniform(i) < if smooth[i] > 0.7 { 0.9 } else { 0.2 }),
                ("periodic", &|i| (i * 31 + i / 7) % 5 < 2),
            ];
            for (rule, outcome) in rules {
                let outcomes: Vec<bool> = (0..n).map(outcome).collect();
                let want = sorted_blocks(scores, &outcomes);
                tried += 1;
                if let Some(got) = bucketed_blocks(scores, &outcomes) {
                    taken += 1;
                    assert_eq!(got, want, "{name}, outcomes {rule}");
                }
            }
        }
        assert!(taken >= 18, "{taken} of {tried}");
    }
}
