//! Histogram binning's sums on the device ([`DevicePairs::binned`]): each problem's sorted
//! pairs ([`super::sorted_pairs`]) cut at its bins' edges by binary searches, the positives
//! counted from the running count of hits ([`super::bin_kernels`]), reading back only two
//! words per edge and the mean NLL of the pairs through the bins' means.
//!
//! One synchronisation. Beyond the sort, the hits and the spread of the bin values read the
//! keys and payloads (3 reads of `N K` words) in 6 launches (the hits' scan three of them):
//! 17 reads and 28 launches in all for logits, burn's NLL ops aside.

use burn::backend::Dispatch;
use burn::tensor::Tensor;

use super::bin_ops::BinKernels;
use super::sort_ops::SortKernels;
use super::sorted_pairs::{DevicePairs, order_key, read_words_and_scalar};
use super::words::u32_tensor;
use crate::binning::f32_below;
use crate::error::{CalibError, Result};

/// Every problem's bins: per bin, its pairs' count and positives; and the training NLL.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedProblems {
    /// Per problem, per bin: `(count, positives)`.
    pub bins: Vec<Vec<(u32, u32)>>,
    /// The mean NLL of the rows at their labels through the bins' means (one-vs-rest:
    /// renormalised over the classes, `1 / K` where every value is 0; a problem with one
    /// outcome only keeps its scores, as the identity map does), clipped at 1e-15, in f32.
    pub nll: f64,
}

impl DevicePairs {
    /// Each problem's bins between its `edges` (`B + 1` ascending values each, the same `B`
    /// for every problem): right-closed, a score at or below the first inner edge in bin 0
    /// and every score above the last inner edge in the last bin, as on the host; an f32
    /// score is at or below an edge exactly when it is at or below the largest f32 at or below
    /// the edge, which is what the device compares with.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for edges of another shape; [`CalibError::Backend`] when
    /// the device cannot read the results back.
    pub fn binned(&self, edges: &[Vec<f64>]) -> Result<BinnedProblems> {
        let n_edges = edges.first().map_or(0, Vec::len);
        if edges.len() != self.n_problems || n_edges < 2 || edges.iter().any(|e| e.len() != n_edges)
        {
            return Err(CalibError::InvalidConfig(format!(
                "binning {} problems needs B + 1 >= 2 edges for each",
                self.n_problems
            )));
        }
        let edge_keys: Vec<u32> =
            edges.iter().flatten().map(|&e| order_key(f32_below(e))).collect();
        let device = self.keys.device();
        let hits = <Dispatch as BinKernels>::calib_hit_words(self.payload.clone().into_dispatch());
        let prefix = <Dispatch as SortKernels>::calib_exclusive_scan(hits);
        let tiles = self.tiles(1);
        let places = <Dispatch as BinKernels>::calib_bin_places(
            self.keys.clone().into_dispatch(),
            prefix,
            u32_tensor(edge_keys, &device).into_dispatch(),
            tiles,
        );
        let spread = <Dispatch as BinKernels>::calib_bin_spread(
            self.keys.clone().into_dispatch(),
            self.payload.clone().into_dispatch(),
            places.clone(),
            tiles,
            n_edges,
        );
        let nll = self.nll_of(Tensor::from_dispatch(spread));
        let (words, nll) = read_words_and_scalar(Tensor::from_dispatch(places), nll)?;
        let sums = self.n_problems * n_edges;
        let bins = (0..self.n_problems)
            .map(|p| {
                let at = |j: usize| (words[p * n_edges + j], words[sums + p * n_edges + j]);
                (0..n_edges - 1)
                    .map(|j| {
                        let ((lo, below), (hi, upto)) = (at(j), at(j + 1));
                        (hi.saturating_sub(lo), upto.saturating_sub(below))
                    })
                    .collect()
            })
            .collect();
        Ok(BinnedProblems { bins, nll })
    }
}
