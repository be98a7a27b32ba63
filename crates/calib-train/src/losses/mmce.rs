//! The maximum mean calibration error (Kumar, Sarawagi & Jain 2018), a kernel measure of
//! miscalibration differentiable in the confidences; trained as `NLL + lambda MMCE`.
//!
//! ```text
//! r_i = max_k p_ik,  c_i = 1[argmax_k p_ik = y_i],  k(r, r') = exp(-|r - r'| / 0.4)   (Laplacian)
//! MMCE = sqrt( sum_ij (c_i - r_i)(c_j - r_j) k(r_i, r_j) / N^2 + 1e-10 )
//! ```
//! The unweighted form of the paper (its `MMCE_m`); the `1e-10` keeps the gradient finite at 0,
//! as the authors' code does. O(N^2) per batch, as there.

use burn::config::Config;
use burn::tensor::{Int, Tensor};

use super::confidence_and_hits;

/// Settings of MMCE.
#[derive(Config, Debug, PartialEq)]
pub struct MmceConfig {
    /// Width of the Laplacian kernel.
    #[config(default = 0.4)]
    pub width: f64,
}

/// The MMCE loss.
#[derive(Debug, Clone, PartialEq)]
pub struct Mmce {
    width: f64,
}

impl MmceConfig {
    /// The loss.
    ///
    /// # Panics
    /// For a width that is not positive and finite.
    pub fn init(&self) -> Mmce {
        assert!(
            self.width > 0.0 && self.width.is_finite(),
            "width must be > 0, got {}",
            self.width
        );
        Mmce { width: self.width }
    }
}

impl Mmce {
    /// MMCE of a batch: a `[1]` tensor.
    pub fn forward(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
        let [n, _] = logits.dims();
        let (r, c) = confidence_and_hits(logits, labels);
        let residual = c - r.clone();
        let distance = (r.clone() - r.transpose()).abs();
        let kernel = distance.div_scalar(-self.width).exp();
        let quadratic = residual.clone().transpose().matmul(kernel.matmul(residual));
        quadratic.reshape([1]).div_scalar((n * n) as f64).add_scalar(1e-10).sqrt()
    }
}
