//! The soft-binned ECE (Karandikar et al. 2021, "Soft Calibration Objectives for Neural
//! Networks"): ECE with each confidence spread over the bins by a softmax of its squared
//! distance to their centres, so that it is differentiable.
//!
//! ```text
//! u_ib   = softmax_b( -(r_i - c_b)^2 / T ),  c_b = (b + 1/2) / B        (soft membership)
//! conf_b = sum_i u_ib r_i / sum_i u_ib,  acc_b = sum_i u_ib c_i / sum_i u_ib,  w_b = sum_i u_ib / N
//! SB-ECE = ( sum_b w_b |acc_b - conf_b|^p )^(1/p)
//! ```
//! As `T -> 0` each confidence falls in the bin of the nearest centre, the even bin that holds
//! it, and SB-ECE (p = 1) becomes the top-label ECE with B even bins (tested).

use burn::config::Config;
use burn::tensor::activation::softmax;
use burn::tensor::{Int, Tensor, TensorData};

use super::confidence_and_hits;

/// Settings of the soft-binned ECE.
#[derive(Config, Debug, PartialEq)]
pub struct SoftBinnedEceConfig {
    /// Number of bins B.
    #[config(default = 15)]
    pub n_bins: usize,
    /// Softness T of the membership (smaller: closer to hard bins).
    #[config(default = 0.01)]
    pub temperature: f64,
    /// The norm p (1: the soft ECE; 2: the root-mean-square form).
    #[config(default = 1.0)]
    pub norm: f64,
}

/// The soft-binned ECE loss.
#[derive(Debug, Clone, PartialEq)]
pub struct SoftBinnedEce {
    n_bins: usize,
    temperature: f64,
    norm: f64,
}

impl SoftBinnedEceConfig {
    /// The loss.
    ///
    /// # Panics
    /// For no bins, a temperature that is not positive, or a norm below 1.
    pub fn init(&self) -> SoftBinnedEce {
        assert!(self.n_bins > 0, "the soft-binned ECE needs bins");
        assert!(self.temperature > 0.0, "temperature must be > 0, got {}", self.temperature);
        assert!(self.norm >= 1.0, "norm must be >= 1, got {}", self.norm);
        SoftBinnedEce { n_bins: self.n_bins, temperature: self.temperature, norm: self.norm }
    }
}

impl SoftBinnedEce {
    /// The soft-binned ECE of a batch: a `[1]` tensor.
    pub fn forward(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
        let [n, _] = logits.dims();
        let b = self.n_bins;
        let (r, c) = confidence_and_hits(logits, labels);
        let centres: Vec<f64> = (0..b).map(|j| (j as f64 + 0.5) / b as f64).collect();
        let centres =
            Tensor::<2>::from_data(TensorData::new(centres, [1, b]), (&r.device(), r.dtype()));
        let distance = (r.clone() - centres).powi_scalar(2);
        let membership = softmax(distance.div_scalar(-self.temperature), 1); // [N, B]
        let mass = membership.clone().sum_dim(0).clamp_min(1e-12); // [1, B]
        let confidence = (membership.clone() * r).sum_dim(0) / mass.clone();
        let accuracy = (membership * c).sum_dim(0) / mass.clone();
        let gap = (accuracy - confidence).abs().powf_scalar(self.norm);
        let total = (mass.div_scalar(n as f64) * gap).sum();
        total.powf_scalar(1.0 / self.norm)
    }
}
