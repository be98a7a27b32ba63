//! [`CalibrationMap`]: a burn `Module` that turns logits into calibrated logits.

use burn::module::Module;
use burn::tensor::activation::log_softmax;
use burn::tensor::{DType, Tensor};

/// A calibration map with trainable `Param` tensors: calibrated logits from logits.
///
/// Every multiclass calibrator of this crate implements it, so it can be fitted by
/// [`crate::fit`]'s optimisers or used inside a user's own burn training loop: `forward` is
/// differentiable on an autodiff device.
///
/// The map is split in two so that fits can do the parameter-free part once:
/// `forward(z) = forward_features(prepare(z))`.
pub trait CalibrationMap: Module + Clone + core::fmt::Debug + Send + 'static {
    /// Parameter-free features of the logits `[N, K] -> [N, K]` (identity by default;
    /// `log_softmax` for Dirichlet calibration).
    fn prepare(&self, logits: Tensor<2>) -> Tensor<2> {
        logits
    }

    /// Calibrated logits `[N, K]` from prepared features `[N, K]` (in [`Self::parameter_dtype`]).
    fn forward_features(&self, features: Tensor<2>) -> Tensor<2>;

    /// The float type of the parameters.
    fn parameter_dtype(&self) -> DType;

    /// Calibrated logits `[N, K]` from logits `[N, K]`, computed in the parameters' float type
    /// (f32 logits into an f64 calibrator are cast first).
    fn forward(&self, logits: Tensor<2>) -> Tensor<2> {
        let dtype = self.parameter_dtype();
        let logits = if logits.dtype() == dtype { logits } else { logits.cast(dtype) };
        self.forward_features(self.prepare(logits))
    }

    /// Calibrated log-probabilities `[N, K]` (stable log-softmax of [`Self::forward`]).
    fn log_probabilities(&self, logits: Tensor<2>) -> Tensor<2> {
        log_softmax(self.forward(logits), 1)
    }

    /// The regularisation added to the mean NLL, as a `[1]` tensor; `None` when unregularised.
    fn penalty(&self) -> Option<Tensor<1>> {
        None
    }
}
