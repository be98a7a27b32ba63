//! [`LaneBlocks`]: logits shifted by their row's maximum, stored in blocks of [`LANES`] rows
//! class-major within a block (`block[j * LANES + l]` is class `j` of the block's row `l`).
//!
//! A pass that sums terms along each row then runs one row per vector lane: every lane adds
//! its own row's terms in class order, so the loop vectorises without reassociating a sum
//! (the compiler keeps a reduction along one short row, K = 10, scalar). Shifting once makes
//! every exponent `u (z_j - max z)` non-positive for `u > 0` (`exp_nonpositive`), and the
//! row's largest term exactly 1.

use std::ops::Range;

use calib_core::input::HostValues;
use calib_kernels::{dispatch, in_order};

/// Rows per block: two AVX2 vectors of f64 (more independent chains than one).
pub(crate) const LANES: usize = 8;

/// Blocks per piece of [`LaneBlocks::over_pieces`]: 256 rows. Sums over rows are taken per
/// piece and then over the pieces in order, so they do not depend on the thread count.
const PIECE: usize = 32;

/// Shifted logits `z_ij - max_j z_ij` of `N` rows in blocks of [`LANES`]; the last block's
/// missing rows are zeros with weight 0.
#[derive(Debug, Clone)]
pub(crate) struct LaneBlocks {
    /// K.
    pub k: usize,
    /// N.
    pub n: usize,
    /// `n_blocks * K * LANES` values.
    values: Vec<f64>,
    /// Each row's shifted logit at its label (`n_blocks * LANES`; 0 for padding).
    at_label: Vec<f64>,
    /// Each row's sample weight (1 without weights; 0 for padding), `n_blocks * LANES`.
    weights: Vec<f64>,
}

impl LaneBlocks {
    /// The blocks of row-major `logits [N, K]` (f32 widened exactly) with their `labels`
    /// (each `< K`) and optional sample `weights`.
    pub fn new(logits: &HostValues<'_>, labels: &[i64], k: usize, weights: Option<&[f64]>) -> Self {
        match logits {
            HostValues::F32(v) => Self::from_rows(v, labels, k, weights),
            HostValues::F64(v) => Self::from_rows(v, labels, k, weights),
        }
    }

    fn from_rows<T: Copy + Into<f64>>(
        logits: &[T],
        labels: &[i64],
        k: usize,
        weights: Option<&[f64]>,
    ) -> Self {
        let n = labels.len();
        let blocks = n.div_ceil(LANES);
        let mut values = vec![0.0; blocks * k * LANES];
        let mut at_label = vec![0.0; blocks * LANES];
        let mut lane_weights = vec![0.0; blocks * LANES];
        for (i, row) in logits.chunks_exact(k).enumerate() {
            let max = row.iter().map(|&z| z.into()).fold(f64::NEG_INFINITY, f64::max);
            let block = &mut values[(i / LANES) * k * LANES..][..k * LANES];
            for (j, &z) in row.iter().enumerate() {
                block[j * LANES + i % LANES] = z.into() - max;
            }
            at_label[i] = row[labels[i] as usize].into() - max;
            lane_weights[i] = weights.map_or(1.0, |w| w[i]);
        }
        Self { k, n, values, at_label, weights: lane_weights }
    }

    /// Number of blocks.
    pub fn n_blocks(&self) -> usize {
        self.n.div_ceil(LANES)
    }

    /// Block `b`: `K` groups of [`LANES`] values, one per class.
    #[inline(always)]
    pub fn block(&self, b: usize) -> &[f64] {
        &self.values[b * self.k * LANES..][..self.k * LANES]
    }

    /// Block `b`'s shifted logits at the labels, one per lane.
    #[inline(always)]
    pub fn at_label(&self, b: usize) -> &[f64; LANES] {
        self.at_label[b * LANES..][..LANES].try_into().expect("a block's lanes")
    }

    /// Block `b`'s sample weights, one per lane (0 past the last row).
    #[inline(always)]
    pub fn weights(&self, b: usize) -> &[f64; LANES] {
        self.weights[b * LANES..][..LANES].try_into().expect("a block's lanes")
    }

    /// The rows of block `b` that exist, as `(lane, row)`.
    #[inline(always)]
    pub fn rows_of(&self, b: usize) -> impl Iterator<Item = (usize, usize)> {
        let first = b * LANES;
        (0..LANES.min(self.n - first)).map(move |l| (l, first + l))
    }

    /// `part(blocks)` for each piece of [`PIECE`] blocks, the pieces shared out among the
    /// cores (at least `min_values_per_thread` logits each), results in piece order, each
    /// compiled for AVX2 where the CPU has it.
    pub fn over_pieces<T: Send>(
        &self,
        min_values_per_thread: usize,
        part: impl Fn(Range<usize>) -> T + Sync,
    ) -> Vec<T> {
        let blocks = self.n_blocks();
        let pieces: Vec<Range<usize>> =
            (0..blocks).step_by(PIECE).map(|lo| lo..(lo + PIECE).min(blocks)).collect();
        let cores = calib_kernels::threads();
        let threads = cores.min((self.n * self.k / min_values_per_thread).max(1));
        let per = pieces.len().div_ceil(threads.max(1)).max(1);
        // A plain loop: an iterator adapter's closure may stay out of line, compiled without
        // AVX2.
        let run = |group: &[Range<usize>]| {
            dispatch(
                #[inline(always)]
                || {
                    let mut out = Vec::with_capacity(group.len());
                    for r in group {
                        out.push(part(r.clone()));
                    }
                    out
                },
            )
        };
        if pieces.len() <= per {
            return run(&pieces);
        }
        let groups: Vec<&[Range<usize>]> = pieces.chunks(per).collect();
        in_order(&groups, |g| run(g)).into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_hold_shifted_logits_class_major() {
        // 10 rows of 3 classes: two blocks, the second with 2 rows.
        let logits: Vec<f64> = (0..30).map(|v| (v as f64 * 0.7).sin() * 4.0).collect();
        let labels: Vec<i64> = (0..10).map(|i| i % 3).collect();
        let b = LaneBlocks::new(&HostValues::F64(logits.as_slice().into()), &labels, 3, None);
        assert_eq!(b.n_blocks(), 2);
        for (i, row) in logits.chunks_exact(3).enumerate() {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for (j, z) in row.iter().enumerate() {
                assert_eq!(b.block(i / LANES)[j * LANES + i % LANES], z - max);
            }
            assert_eq!(b.at_label(i / LANES)[i % LANES], row[labels[i] as usize] - max);
        }
        assert_eq!(b.rows_of(1).collect::<Vec<_>>(), vec![(0, 8), (1, 9)]);
        assert_eq!(b.weights(1), &[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let parts = b.over_pieces(1, |r| r);
        assert_eq!(parts, vec![0..2]);
    }
}
