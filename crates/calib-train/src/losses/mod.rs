//! Differentiable calibration objectives for training, as burn tensor ops (autodiff on any
//! device): focal loss, MMCE and the soft-binned ECE. Each takes logits `[N, K]` and labels
//! `[N]` and returns a scalar `[1]` to add to (or replace) the cross-entropy.
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use calib_train::losses::{FocalLossConfig, MmceConfig, SoftBinnedEceConfig};
//! let device = Device::flex().autodiff();
//! let logits = Tensor::<2>::from_data([[2.0, 0.1, -1.0], [0.3, 0.2, 0.9]], &device).require_grad();
//! let labels = Tensor::<1, Int>::from_data([0, 1], &device);
//! let loss = FocalLossConfig::new().init().forward(logits.clone(), labels.clone())
//!     + MmceConfig::new().init().forward(logits.clone(), labels.clone()).mul_scalar(2.0)
//!     + SoftBinnedEceConfig::new().init().forward(logits.clone(), labels);
//! let grads = loss.backward();
//! assert!(logits.grad(&grads).is_some());
//! ```

mod focal;
mod mmce;
mod soft_ece;

pub use focal::{FocalLoss, FocalLossConfig};
pub use mmce::{Mmce, MmceConfig};
pub use soft_ece::{SoftBinnedEce, SoftBinnedEceConfig};

use burn::tensor::activation::softmax;
use burn::tensor::{Int, Tensor};

/// Top-label confidences `[N, 1]` (differentiable) and whether each prediction is right
/// `[N, 1]` (0 or 1, a constant), from logits.
pub(crate) fn confidence_and_hits(
    logits: Tensor<2>,
    labels: Tensor<1, Int>,
) -> (Tensor<2>, Tensor<2>) {
    let [n, _] = logits.dims();
    let (confidence, predicted) = softmax(logits, 1).max_dim_with_indices(1);
    let hits = predicted.equal(labels.reshape([n, 1])).float().cast(confidence.dtype());
    (confidence, hits.detach())
}
