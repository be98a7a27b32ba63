//! The radix buckets of one group's scores: counts and sums per bucket of the top bits of
//! each score's order key, which buckets the range cuts split, and the members of those.

use crate::binning::{multi_select, range_start};
use calib_kernels::dispatch;

/// `f64` bits mapped so that unsigned order is [`f64::total_cmp`] order.
#[inline]
pub(crate) fn order_key(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
}

/// The inverse of [`order_key`].
#[inline]
pub(crate) fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Buckets of the radix pass (11 bits).
const BUCKET_BITS: u32 = 11;

/// Size of the per-bucket tables: every bucket index is below it, and indices are masked
/// with `TABLE - 1` (a no-op) so indexing needs no bounds check.
const TABLE: usize = 1 << BUCKET_BITS;

/// One group's scores bucketed by the radix pass, against the range cuts.
pub(super) struct Buckets {
    radix: Radix,
    /// Sorted positions where ranges 1.. start.
    pub(super) cuts: Vec<usize>,
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
    pub(super) fn count(values: &[f64], bounds: (f64, f64), n_ranges: usize) -> Self {
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
    pub(super) fn add_whole_sums(&self, sums: &mut [f64]) {
        let mut whole = vec![0.0f64; sums.len()];
        let n_buckets = self.split.len();
        for b in (0..n_buckets).filter(|&b| !self.split[b] && self.start[b + 1] > self.start[b]) {
            whole[self.range_at(self.start[b])] += self.cells[b][1];
        }
        sums.iter_mut().zip(whole).for_each(|(s, w)| *s += w);
    }

    /// The split buckets' members (a few percent of the scores) into `scratch`, bucket by
    /// bucket, in sample order within each.
    pub(super) fn gather_split_members(&self, values: &[f64], scratch: &mut Vec<f64>) {
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
    pub(super) fn add_split_sums(&self, sums: &mut [f64], scratch: &mut [f64]) {
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
    pub(super) fn cut_values(&self, values: &[f64], scratch: &[f64]) -> Vec<f64> {
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
