//! LCE calibration (Posocco & Bonnefoy 2021): the calibrated score is the kernel reliability
//! curve at the score.
//!
//! ```text
//! RC(s) = sum_i w_i(s) y_i / sum_i w_i(s),   w_i(s) = K_h(s - s_i) + K_h(s + s_i) + K_h(s - 2 + s_i)
//! LCE(s) = RC(s) - s,   calibrated score = RC(s) = s + LCE(s)
//! h = 0.9 min(sd, IQR / 1.34) N^(-1/5)   (Silverman; sd alone when the IQR is 0) unless given
//! ```
//!
//! The Nadaraya-Watson estimate of `E[Y | S = s]` with the calibration scores reflected at 0
//! and 1 (`docs/conventions.md`, "Reliability curve / LCE"); Gaussian kernel by default,
//! triweight `(1 - u^2)^3` on `|u| < 1` as an option. The poster writes the calibrated score as
//! `s - LCE(s)`, which contradicts its own `RC(s) = LCE(s) + s`: calib follows RC. Where no
//! calibration score is within the kernel's reach (triweight), the score is kept.
//!
//! # Note
//! The map keeps the calibration pairs (sorted) and evaluates RC exactly with calib-core's
//! [`KernelSmoother`], the estimator behind `calib plot --curve` and the `lce_ece` metric.

use std::collections::BTreeMap;

use burn::config::Config;

use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::calibrator::{Method, SavedTensor};
use crate::error::{FitError, Result};
use calib_core::curve::KernelSmoother;
pub use calib_core::curve::{Kernel, silverman_bandwidth};

/// A fitted reliability curve: calib-core's [`KernelSmoother`] of the calibration pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct LceMap {
    smoother: KernelSmoother,
}

/// LCE calibration as a calibrator ([`MapCalibrator`] of [`LceMap`]s).
pub type LceCalibration = MapCalibrator<LceMap>;

impl LceMap {
    /// The map of pairs sorted by score.
    fn new(scores: Vec<f64>, outcomes: Vec<f64>, bandwidth: f64, kernel: Kernel) -> Self {
        Self { smoother: KernelSmoother::from_sorted(scores, outcomes, bandwidth, kernel) }
    }

    /// The bandwidth `h`.
    pub fn bandwidth(&self) -> f64 {
        self.smoother.bandwidth()
    }

    /// `RC(s)`, or `s` where no calibration score is within reach.
    pub fn reliability(&self, s: f64) -> f64 {
        self.smoother.at(s)
    }
}

fn kernel_code(kernel: Kernel) -> f64 {
    match kernel {
        Kernel::Triweight => 1.0,
        _ => 0.0,
    }
}

impl BinaryMap for LceMap {
    const METHOD: Method = Method::Lce;

    fn predict(&self, s: f64) -> f64 {
        if self.smoother.scores().is_empty() { s } else { self.reliability(s) }
    }

    /// No calibration pairs: the score itself.
    fn identity() -> Self {
        Self::new(Vec::new(), Vec::new(), 1.0, Kernel::Gaussian)
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "scores", self.smoother.scores().to_vec());
        crate::binary::put(out, prefix, "outcomes", self.smoother.outcomes().to_vec());
        crate::binary::put(
            out,
            prefix,
            "kernel",
            vec![self.bandwidth(), kernel_code(self.smoother.kernel())],
        );
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let scores = crate::binary::table(parameters, prefix, "scores")?.to_vec();
        let outcomes = crate::binary::table(parameters, prefix, "outcomes")?.to_vec();
        let bad = |what: &str| FitError::Format(format!("lce map `{prefix}`: {what}"));
        let (bandwidth, kernel) = match crate::binary::table(parameters, prefix, "kernel")? {
            &[h, k] if h > 0.0 => (h, if k == 1.0 { Kernel::Triweight } else { Kernel::Gaussian }),
            _ => return Err(bad("`kernel` needs [bandwidth > 0, 0|1]")),
        };
        if scores.len() != outcomes.len() || scores.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad("needs sorted scores, one outcome each"));
        }
        Ok(Self::new(scores, outcomes, bandwidth, kernel))
    }
}

/// Settings of LCE calibration.
#[derive(Config, Debug, PartialEq)]
pub struct LceCalibrationConfig {
    /// The bandwidth `h` (default: Silverman's rule on each problem's scores).
    pub bandwidth: Option<f64>,
    /// The kernel.
    #[config(default = "Kernel::Gaussian")]
    pub kernel: Kernel,
    /// One-vs-rest (class-wise) or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl BinaryFit for LceCalibrationConfig {
    type Map = LceMap;

    fn check(&self) -> Result<()> {
        match self.bandwidth {
            Some(h) if !(h > 0.0 && h.is_finite()) => {
                Err(FitError::InvalidConfig(format!("bandwidth must be positive, got {h}")))
            }
            _ => Ok(()),
        }
    }

    fn fit_binary(&self, scores: &[f64], outcomes: &[bool]) -> Result<BinaryFitted<LceMap>> {
        let bandwidth = self.bandwidth.unwrap_or_else(|| silverman_bandwidth(scores));
        if bandwidth.is_nan() || bandwidth <= 0.0 {
            return Err(FitError::UnsuitableInput {
                method: Method::Lce.name().into(),
                reason: "the scores are constant, so Silverman's bandwidth is 0: give one".into(),
            });
        }
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
        let map = LceMap::new(
            order.iter().map(|&i| scores[i]).collect(),
            order.iter().map(|&i| f64::from(u8::from(outcomes[i]))).collect(),
            bandwidth,
            self.kernel,
        );
        Ok(BinaryFitted::exact(map))
    }
}

crate::binary::fit_by_maps!(LceCalibrationConfig, LceCalibration);
