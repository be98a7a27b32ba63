//! Isotonic regression's pooling on the device ([`DevicePairs::pooled`]): the sorted pairs
//! ([`super::sorted_pairs`]) pooled by PAV ([`super::pav_kernels`]), reading back only the
//! pooled blocks and the mean NLL of the pairs through them.
//!
//! Two synchronisations: the blocks' number per problem, then the blocks with the NLL. Ties
//! are the host's rule on the f32 scores (within [`TIE`] of the run's first score). Beyond the
//! sort, the pooling's first level and the spread of the fitted values read the keys and
//! payloads (4 reads of `N K` words), in 4 launches: 18 reads and 26 launches in all for
//! logits, burn's NLL ops aside. With the blocks' mean scores
//! ([`DevicePairs::pooled_with_means`], centred isotonic regression's centres), the gather
//! reads the keys once more (19 reads) and each block comes back with a fifth word.

use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor};

use super::pav_ops::PavKernels;
use super::sorted_pairs::{DevicePairs, key_score, read_words_and_scalar};
use super::words::{read_words_all, u32_tensor};
use crate::error::Result;

/// The host's tie tolerance (scikit-learn's `_make_unique`): scores closer than this to the
/// first of their run are one point.
pub const TIE: f64 = 1e-15;
/// Items each thread of PAV's first level pools.
const PAV_TILE: usize = 256;

/// One pooled block of a binary problem: its pairs' count and positives (its value
/// `positives / count`) and its first and last point's score (a point's score is its run of
/// tied scores' first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PooledBlock {
    /// Pairs in the block.
    pub count: u32,
    /// Of them, positive outcomes.
    pub positives: u32,
    /// The score of its first point.
    pub first: f32,
    /// The score of its last point.
    pub last: f32,
    /// The mean of its pairs' point scores (each pair at its point's score), where asked for
    /// ([`DevicePairs::pooled_with_means`]): the first score plus the device's mean of the
    /// differences from it (summed exactly as multiples of `2^-24` of the block's span, so
    /// within `2^-25` of the span and f32 rounding), and a block of one point has its score
    /// exactly.
    pub mean: Option<f64>,
}

/// Every problem's pooled blocks in score order, and the fit's training NLL.
#[derive(Debug, Clone, PartialEq)]
pub struct PooledProblems {
    /// Per problem (class `c` one-vs-rest, or the one binary problem), its blocks.
    pub blocks: Vec<Vec<PooledBlock>>,
    /// The mean NLL of the rows at their labels through the fitted maps (one-vs-rest:
    /// renormalised over the classes, `1 / K` where every value is 0; a problem with one
    /// outcome only keeps its scores, as the identity map does), clipped at 1e-15, in f32.
    pub nll: f64,
}

impl DevicePairs {
    /// Every problem's pooled blocks, in score order, and the fit's training NLL.
    ///
    /// # Errors
    /// [`crate::CalibError::Backend`] when the device cannot read the results back.
    pub fn pooled(&self) -> Result<PooledProblems> {
        self.pool(false)
    }

    /// [`DevicePairs::pooled`] with each block's mean score ([`PooledBlock::mean`]).
    ///
    /// # Errors
    /// [`crate::CalibError::Backend`] when the device cannot read the results back.
    pub fn pooled_with_means(&self) -> Result<PooledProblems> {
        self.pool(true)
    }

    fn pool(&self, means: bool) -> Result<PooledProblems> {
        let (n_segs, tiles) = (self.n_problems, self.tiles(PAV_TILE));
        let (keys, payload) = (self.keys.clone(), self.payload.clone());
        let (starts, sums, lasts, first, blocks) = <Dispatch as PavKernels>::calib_pav_tiles(
            keys.clone().into_dispatch(),
            payload.clone().into_dispatch(),
            tiles,
            tie_f32(),
        );
        let n_final = <Dispatch as PavKernels>::calib_pav_merge(
            starts.clone(),
            sums.clone(),
            lasts.clone(),
            first,
            blocks,
            tiles,
        );
        let n_final: Tensor<1, Int> = Tensor::from_dispatch(n_final);
        let counts = read_words_all(vec![n_final.clone()])?.remove(0);
        let mut offsets = vec![0u32; n_segs + 1];
        for s in 0..n_segs {
            offsets[s + 1] = offsets[s] + counts[s];
        }
        let gathered = <Dispatch as PavKernels>::calib_block_gather(
            keys.clone().into_dispatch(),
            starts.clone(),
            sums.clone(),
            lasts.clone(),
            u32_tensor(offsets.clone(), &keys.device()).into_dispatch(),
            tiles,
            offsets[n_segs] as usize,
            means.then(tie_f32),
        );
        let spread = <Dispatch as PavKernels>::calib_block_spread(
            keys.into_dispatch(),
            payload.into_dispatch(),
            starts,
            sums,
            lasts,
            n_final.into_dispatch(),
            tiles,
        );
        let nll = self.nll_of(Tensor::from_dispatch(spread));
        let (words, nll) = read_words_and_scalar(Tensor::from_dispatch(gathered), nll)?;
        let blocks = (0..n_segs)
            .map(|s| {
                let range = offsets[s] as usize..offsets[s + 1] as usize;
                let stride = if means { 5 } else { 4 };
                range.map(|b| block_of(&words[stride * b..stride * (b + 1)])).collect()
            })
            .collect();
        Ok(PooledProblems { blocks, nll })
    }
}

/// The smallest f32 at or above [`TIE`]: an f32 difference `d` is then at or above it exactly
/// when `d >= TIE` in f64.
fn tie_f32() -> f32 {
    let t = TIE as f32;
    if f64::from(t) < TIE { t.next_up() } else { t }
}

/// A pooled block from its four words (count, positives, first and last order key) and, if
/// there is one, the fifth: the f32 bits of its mean score less its first.
fn block_of(w: &[u32]) -> PooledBlock {
    let first = key_score(w[2]);
    let mean = w.get(4).map(|&d| f64::from(first) + f64::from(f32::from_bits(d)));
    PooledBlock { count: w[0], positives: w[1], first, last: key_score(w[3]), mean }
}
