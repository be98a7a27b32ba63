//! [`LaneBlocks`]: logits shifted by their row's maximum, stored in blocks of [`LANES`] rows
//! class-major within a block (`block[j * LANES + l]` is class `j` of the block's row `l`).
//!
//! A pass that sums terms along each row then runs one row per vector lane: every lane adds
//! its own row's terms in class order, so the loop vectorises without reassociating a sum
//! (the compiler keeps a reduction along one short row, K = 10, scalar). Shifting once makes
//! every exponent `u (z_j - max z)` non-positive for `u > 0` (`exp_nonpositive`), and the
//! row's largest term exactly 1.

use std::ops::Range;

use calib_kernels::{dispatch, in_order};

/// Rows per block: two AVX2 vectors of f64 (more independent chains than one).
pub(crate) const LANES: usize = 8;

/// Shifted logits `z_ij - max_j z_ij` of `N` rows in blocks of [`LANES`]; the last block's
/// missing rows are zeros (callers skip lanes `>= N`).
#[derive(Debug, Clone)]
pub(crate) struct LaneBlocks {
    /// K.
    pub k: usize,
    /// N.
    pub n: usize,
    /// `n_blocks * K * LANES` values.
    values: Vec<f64>,
    /// Each row's shifted logit at its label (`n_blocks * LANES`; 0 for padding).
    pub at_label: Vec<f64>,
}

impl LaneBlocks {
    /// The blocks of row-major `logits [N, K]` with their `labels` (each `< K`).
    pub fn new(logits: &[f64], labels: &[i64], k: usize) -> Self {
        let n = labels.len();
        let blocks = n.div_ceil(LANES);
        let mut values = vec![0.0; blocks * k * LANES];
        let mut at_label = vec![0.0; blocks * LANES];
        for (i, row) in logits.chunks_exact(k).enumerate() {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let block = &mut values[(i / LANES) * k * LANES..][..k * LANES];
            for (j, &z) in row.iter().enumerate() {
                block[j * LANES + i % LANES] = z - max;
            }
            at_label[i] = row[labels[i] as usize] - max;
        }
        Self { k, n, values, at_label }
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

    /// The rows of block `b` that exist, as `(lane, row)`.
    #[inline(always)]
    pub fn rows_of(&self, b: usize) -> impl Iterator<Item = (usize, usize)> {
        let first = b * LANES;
        (0..LANES.min(self.n - first)).map(move |l| (l, first + l))
    }

    /// `part(blocks)` over the blocks shared out among the cores (at least
    /// `min_values_per_thread` logits each), results in block order, each range compiled for
    /// AVX2 where the CPU has it.
    pub fn over_blocks<T: Send>(
        &self,
        min_values_per_thread: usize,
        part: impl Fn(Range<usize>) -> T + Sync,
    ) -> Vec<T> {
        let blocks = self.n_blocks();
        let cores = calib_kernels::threads();
        let threads = cores.min((self.n * self.k / min_values_per_thread).max(1)).min(blocks);
        let per = blocks.div_ceil(threads.max(1)).max(1);
        let ranges: Vec<Range<usize>> =
            (0..blocks).step_by(per).map(|lo| lo..(lo + per).min(blocks)).collect();
        if ranges.len() == 1 {
            return vec![dispatch(
                #[inline(always)]
                || part(ranges[0].clone()),
            )];
        }
        in_order(&ranges, |r| {
            dispatch(
                #[inline(always)]
                || part(r.clone()),
            )
        })
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
        let b = LaneBlocks::new(&logits, &labels, 3);
        assert_eq!(b.n_blocks(), 2);
        for (i, row) in logits.chunks_exact(3).enumerate() {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for (j, z) in row.iter().enumerate() {
                assert_eq!(b.block(i / LANES)[j * LANES + i % LANES], z - max);
            }
            assert_eq!(b.at_label[i], row[labels[i] as usize] - max);
        }
        assert_eq!(b.rows_of(1).collect::<Vec<_>>(), vec![(0, 8), (1, 9)]);
        let parts = b.over_blocks(1, |r| r);
        assert_eq!(parts.iter().map(|r| r.len()).sum::<usize>(), 2);
    }
}
