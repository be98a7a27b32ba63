//! Focal loss (Lin et al. 2017), which Mukhoti et al. (2020) show trains better-calibrated
//! networks than cross-entropy.
//!
//! ```text
//! FL = (1/N) sum_i -(1 - p_{i,y_i})^gamma log p_{i,y_i}      p = softmax(logits); gamma = 0: cross-entropy
//! ```

use burn::config::Config;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

/// Settings of the focal loss.
#[derive(Config, Debug, PartialEq)]
pub struct FocalLossConfig {
    /// The focusing exponent gamma >= 0 (Mukhoti et al. use 3).
    #[config(default = 3.0)]
    pub gamma: f64,
}

/// The focal loss.
#[derive(Debug, Clone, PartialEq)]
pub struct FocalLoss {
    gamma: f64,
}

impl FocalLossConfig {
    /// The loss.
    ///
    /// # Panics
    /// For a negative or non-finite gamma.
    pub fn init(&self) -> FocalLoss {
        assert!(
            self.gamma >= 0.0 && self.gamma.is_finite(),
            "gamma must be >= 0, got {}",
            self.gamma
        );
        FocalLoss { gamma: self.gamma }
    }
}

impl FocalLoss {
    /// The mean focal loss of `logits` `[N, K]` against `labels` `[N]`: a `[1]` tensor.
    pub fn forward(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
        let [n, _] = logits.dims();
        let log_p = log_softmax(logits, 1).gather(1, labels.reshape([n, 1]));
        let weight = if self.gamma == 0.0 {
            log_p.ones_like()
        } else {
            // (1 - p)^gamma as exp(gamma log(1 - p)), 1 - p kept off 0 so the gradient is finite.
            log_p
                .clone()
                .exp()
                .neg()
                .add_scalar(1.0)
                .clamp_min(1e-12)
                .log()
                .mul_scalar(self.gamma)
                .exp()
        };
        (weight * log_p).neg().mean()
    }
}
