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
//! The map keeps the calibration pairs (sorted) and evaluates RC exactly: Gaussian weights are
//! taken relative to the nearest calibration score (none underflows, however far every score
//! is) and cut below e^-37 of it, so each prediction reads only the scores within reach
//! (binary search). Where thousands of scores are in reach (dense regions of one-vs-rest
//! columns), their sum comes from Gaussian box moments instead (`calib_core::kernels::GaussBoxes`, equal to the
//! direct sum to about 1e-13).

use std::collections::BTreeMap;

use burn::config::Config;
use serde::{Deserialize, Serialize};

use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::calibrator::{Method, SavedTensor};
use crate::error::{FitError, Result};
use calib_core::bootstrap::quantile;
use calib_core::kernels::GaussBoxes;

/// The smoothing kernel of the reliability curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Kernel {
    /// `exp(-u^2 / 2)`.
    #[default]
    Gaussian,
    /// `(1 - u^2)^3` for `|u| < 1`.
    Triweight,
}

impl Kernel {
    fn weight(self, u: f64) -> f64 {
        match self {
            Self::Gaussian => (-0.5 * u * u).exp(),
            Self::Triweight => {
                let t = 1.0 - u * u;
                if t > 0.0 { t * t * t } else { 0.0 }
            }
        }
    }

    fn code(self) -> f64 {
        match self {
            Self::Gaussian => 0.0,
            Self::Triweight => 1.0,
        }
    }
}

/// A fitted reliability curve: the calibration pairs sorted by score, kernel and bandwidth.
#[derive(Debug, Clone, PartialEq)]
pub struct LceMap {
    scores: Vec<f64>,
    outcomes: Vec<f64>,
    bandwidth: f64,
    kernel: Kernel,
    /// Gaussian box moments of the pairs, for windows of many scores (not saved: rebuilt).
    boxes: Option<GaussBoxes>,
}

/// LCE calibration as a calibrator ([`MapCalibrator`] of [`LceMap`]s).
pub type LceCalibration = MapCalibrator<LceMap>;

/// Windows of more scores than this (and 8 per box in reach) are summed by box moments.
const DIRECT_MAX: usize = 256;

impl LceMap {
    /// The map of pairs sorted by score.
    fn new(scores: Vec<f64>, outcomes: Vec<f64>, bandwidth: f64, kernel: Kernel) -> Self {
        let boxes = (kernel == Kernel::Gaussian && scores.len() > DIRECT_MAX)
            .then(|| GaussBoxes::new(&scores, &outcomes, bandwidth));
        Self { scores, outcomes, bandwidth, kernel, boxes }
    }

    /// The bandwidth `h`.
    pub fn bandwidth(&self) -> f64 {
        self.bandwidth
    }

    /// `RC(s)`, or `s` where no calibration score is within reach.
    pub fn reliability(&self, s: f64) -> f64 {
        // Images of the sample: the scores, reflected at 0 (-s_i) and at 1 (2 - s_i).
        const IMAGES: [(f64, f64); 3] = [(1.0, 0.0), (-1.0, 0.0), (-1.0, 2.0)];
        let h = self.bandwidth;
        // Gaussian weights are taken relative to the nearest image (so none underflows when
        // every score is far) and cut where they fall below e^-37 of it.
        let u_min = match self.kernel {
            Kernel::Gaussian => {
                IMAGES
                    .iter()
                    .map(|&(sign, shift)| self.nearest(s, sign, shift))
                    .fold(f64::INFINITY, f64::min)
                    / h
            }
            Kernel::Triweight => 0.0,
        };
        if !u_min.is_finite() {
            return s;
        }
        let reach = match self.kernel {
            Kernel::Gaussian => (u_min * u_min + 74.0).sqrt() * h,
            Kernel::Triweight => h,
        };
        let (mut num, mut den) = (0.0, 0.0);
        for (sign, shift) in IMAGES {
            // s_i with |s - (shift + sign s_i)| < reach: a window found by binary search.
            let (a, b) = ((s - reach - shift) * sign, (s + reach - shift) * sign);
            let start = self.scores.partition_point(|&v| v < a.min(b));
            let end = self.scores.partition_point(|&v| v <= a.max(b));
            if let Some(boxes) = &self.boxes {
                // Many scores in reach of a near one: box moments, on the same relative scale
                // as the direct weights (u_min <= 5 keeps that scale below e^12.5).
                let q = (s - shift) * sign;
                let in_reach = boxes.boxes_between(q - reach, q + reach);
                let dense =
                    end - start > DIRECT_MAX && u_min <= 5.0 && end - start > 8 * in_reach.len();
                if dense {
                    let (n, d) = boxes.sums(q, in_reach);
                    let scale = (0.5 * u_min * u_min).exp();
                    num += n * scale;
                    den += d * scale;
                    continue;
                }
            }
            for i in start..end {
                let u = (s - shift - sign * self.scores[i]) / h;
                let w = match self.kernel {
                    Kernel::Gaussian => (-0.5 * (u * u - u_min * u_min)).exp(),
                    Kernel::Triweight => self.kernel.weight(u),
                };
                num += w * self.outcomes[i];
                den += w;
            }
        }
        if den > 0.0 { num / den } else { s }
    }

    /// Distance from `s` to the nearest `shift + sign s_i`.
    fn nearest(&self, s: f64, sign: f64, shift: f64) -> f64 {
        let target = (s - shift) * sign;
        let j = self.scores.partition_point(|&v| v < target);
        [j.checked_sub(1), (j < self.scores.len()).then_some(j)]
            .into_iter()
            .flatten()
            .map(|i| (self.scores[i] - target).abs())
            .fold(f64::INFINITY, f64::min)
    }
}

/// Silverman's rule on `scores`: `0.9 min(sd, IQR / 1.34) N^(-1/5)`, sd alone when the IQR
/// is 0 (sample sd; IQR by linear-interpolation percentiles, numpy's default).
pub fn silverman_bandwidth(scores: &[f64]) -> f64 {
    let n = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let sd = (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let iqr = quantile(&sorted, 0.75) - quantile(&sorted, 0.25);
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    0.9 * spread * n.powf(-0.2)
}

impl BinaryMap for LceMap {
    const METHOD: Method = Method::Lce;

    fn predict(&self, s: f64) -> f64 {
        if self.scores.is_empty() { s } else { self.reliability(s) }
    }

    /// No calibration pairs: the score itself.
    fn identity() -> Self {
        Self::new(Vec::new(), Vec::new(), 1.0, Kernel::Gaussian)
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "scores", self.scores.clone());
        crate::binary::put(out, prefix, "outcomes", self.outcomes.clone());
        crate::binary::put(out, prefix, "kernel", vec![self.bandwidth, self.kernel.code()]);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense one-vs-rest-like scores (most near 0): the box-moment sums give the direct
    /// reliability curve to 1e-12.
    #[test]
    fn box_moments_match_the_direct_curve() {
        let mut rng = calib_core::synthetic::SplitMix64(7);
        let mut scores: Vec<f64> = (0..20_000).map(|_| rng.uniform().powi(6)).collect();
        scores.sort_by(f64::total_cmp);
        let outcomes: Vec<f64> =
            scores.iter().map(|&s| f64::from(u8::from(rng.uniform() < s))).collect();
        let h = silverman_bandwidth(&scores);
        let fast = LceMap::new(scores.clone(), outcomes.clone(), h, Kernel::Gaussian);
        assert!(fast.boxes.is_some());
        let direct = LceMap { boxes: None, ..fast.clone() };
        for s in [0.0, 1e-9, 1e-5, 1e-3, 0.01, 0.2, 0.7, 1.0] {
            let (a, b) = (fast.reliability(s), direct.reliability(s));
            assert!((a - b).abs() <= 1e-12, "s {s}: {a} vs {b}");
        }
    }
}
