//! [`KernelSmoother`]: the Nadaraya-Watson estimate of `E[Y | S = s]` with the scores reflected
//! at 0 and 1 (Posocco & Bonnefoy's reliability curve; docs/conventions.md, "Reliability curve /
//! LCE").
//!
//! ```text
//! RC(s) = sum_i w_i(s) y_i / sum_i w_i(s),   w_i(s) = K((s - s_i)/h) + K((s + s_i)/h) + K((s - 2 + s_i)/h)
//! K(u) = exp(-u^2 / 2) (Gaussian)  or  (1 - u^2)^3 on |u| < 1 (triweight)
//! h = 0.9 min(sd, IQR / 1.34) N^(-1/5)   (Silverman; sd alone when the IQR is 0)
//! ```
//!
//! The estimate is exact: Gaussian weights are taken relative to the nearest image of a score
//! (so none underflows, however far every score is) and cut below e^-37 of it, so a query reads
//! only the scores within reach (binary search). Where thousands are in reach, their sum comes
//! from Gaussian box moments ([`GaussBoxes`], equal to the direct sum to about 1e-13).

use serde::{Deserialize, Serialize};

use crate::bootstrap::quantile;
use crate::kernels::GaussBoxes;

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
    /// The kernel at `u` (unnormalised: the normalisation cancels in the ratio).
    pub fn weight(self, u: f64) -> f64 {
        match self {
            Self::Gaussian => (-0.5 * u * u).exp(),
            Self::Triweight => {
                let t = 1.0 - u * u;
                if t > 0.0 { t * t * t } else { 0.0 }
            }
        }
    }

    /// Parses `gaussian` or `triweight`.
    ///
    /// # Errors
    /// [`crate::CalibError::InvalidConfig`] for other names.
    pub fn from_name(name: &str) -> crate::Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "gaussian" => Ok(Self::Gaussian),
            "triweight" => Ok(Self::Triweight),
            other => Err(crate::CalibError::InvalidConfig(format!(
                "unknown kernel `{other}`; known: gaussian, triweight"
            ))),
        }
    }
}

/// Windows of more scores than this (and 8 per box in reach) are summed by box moments.
const DIRECT_MAX: usize = 256;

/// Images of the sample: `shift + sign s_i`, the scores and their reflections at 0 and 1.
const IMAGES: [(f64, f64); 3] = [(1.0, 0.0), (-1.0, 0.0), (-1.0, 2.0)];

/// (score, outcome) pairs sorted by score with a kernel and bandwidth: `RC(s)` at any `s`.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSmoother {
    scores: Vec<f64>,
    outcomes: Vec<f64>,
    bandwidth: f64,
    kernel: Kernel,
    /// Gaussian box moments of the pairs, for windows of many scores.
    boxes: Option<GaussBoxes>,
}

impl KernelSmoother {
    /// The smoother of pairs already sorted by score (ascending), bandwidth `h > 0`.
    pub fn from_sorted(
        scores: Vec<f64>,
        outcomes: Vec<f64>,
        bandwidth: f64,
        kernel: Kernel,
    ) -> Self {
        debug_assert!(scores.windows(2).all(|w| w[0] <= w[1]));
        let boxes = (kernel == Kernel::Gaussian && scores.len() > DIRECT_MAX)
            .then(|| GaussBoxes::new(&scores, &outcomes, bandwidth));
        Self { scores, outcomes, bandwidth, kernel, boxes }
    }

    /// The sorted scores.
    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    /// The outcomes, in the scores' order.
    pub fn outcomes(&self) -> &[f64] {
        &self.outcomes
    }

    /// The bandwidth `h`.
    pub fn bandwidth(&self) -> f64 {
        self.bandwidth
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// `RC(s)`, or `s` itself where no score is within the kernel's reach (triweight, or no
    /// pairs at all).
    pub fn at(&self, s: f64) -> f64 {
        let h = self.bandwidth;
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
            let (n, d) = self.image_sums(s, sign, shift, reach, u_min);
            num += n;
            den += d;
        }
        if den > 0.0 { num / den } else { s }
    }

    /// `(sum w y, sum w)` over the image `shift + sign s_i` of the scores within `reach` of
    /// `s`, Gaussian weights relative to `exp(-u_min^2 / 2)`.
    fn image_sums(&self, s: f64, sign: f64, shift: f64, reach: f64, u_min: f64) -> (f64, f64) {
        let h = self.bandwidth;
        // s_i with |s - (shift + sign s_i)| < reach: a window found by binary search.
        let (a, b) = ((s - reach - shift) * sign, (s + reach - shift) * sign);
        let start = self.scores.partition_point(|&v| v < a.min(b));
        let end = self.scores.partition_point(|&v| v <= a.max(b));
        if let Some(boxes) = &self.boxes {
            // Many scores in reach of a near one: box moments, on the same relative scale as
            // the direct weights (u_min <= 5 keeps that scale below e^12.5).
            let q = (s - shift) * sign;
            let in_reach = boxes.boxes_between(q - reach, q + reach);
            if end - start > DIRECT_MAX && u_min <= 5.0 && end - start > 8 * in_reach.len() {
                let (n, d) = boxes.sums(q, in_reach);
                let scale = (0.5 * u_min * u_min).exp();
                return (n * scale, d * scale);
            }
        }
        let (mut num, mut den) = (0.0, 0.0);
        for i in start..end {
            let u = (s - shift - sign * self.scores[i]) / h;
            let w = match self.kernel {
                Kernel::Gaussian => (-0.5 * (u * u - u_min * u_min)).exp(),
                Kernel::Triweight => self.kernel.weight(u),
            };
            num += w * self.outcomes[i];
            den += w;
        }
        (num, den)
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
/// is 0 (sample sd; IQR by linear-interpolation percentiles, numpy's default). 0 when the
/// scores are constant.
///
/// ```
/// let h = calib_core::curve::silverman_bandwidth(&[0.1, 0.2, 0.3, 0.4, 0.5]);
/// assert!((h - 0.9 * (0.2f64 / 1.34) * 5f64.powf(-0.2)).abs() < 1e-12);
/// ```
pub fn silverman_bandwidth(scores: &[f64]) -> f64 {
    let n = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let sd = (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.first() == sorted.last() {
        return 0.0;
    }
    let iqr = quantile(&sorted, 0.75) - quantile(&sorted, 0.25);
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    0.9 * spread * n.powf(-0.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense one-vs-rest-like scores (most near 0): the box-moment sums give the direct
    /// reliability curve to 1e-12.
    #[test]
    fn box_moments_match_the_direct_curve() {
        let mut rng = crate::synthetic::SplitMix64(7);
        let mut scores: Vec<f64> = (0..20_000).map(|_| rng.uniform().powi(6)).collect();
        scores.sort_by(f64::total_cmp);
        let outcomes: Vec<f64> =
            scores.iter().map(|&s| f64::from(u8::from(rng.uniform() < s))).collect();
        let h = silverman_bandwidth(&scores);
        let fast = KernelSmoother::from_sorted(scores, outcomes, h, Kernel::Gaussian);
        assert!(fast.boxes.is_some());
        let direct = KernelSmoother { boxes: None, ..fast.clone() };
        for s in [0.0, 1e-9, 1e-5, 1e-3, 0.01, 0.2, 0.7, 1.0] {
            let (a, b) = (fast.at(s), direct.at(s));
            assert!((a - b).abs() <= 1e-12, "s {s}: {a} vs {b}");
        }
    }

    #[test]
    fn far_from_every_score_the_gaussian_curve_is_the_nearest_outcome() {
        let smoother =
            KernelSmoother::from_sorted(vec![0.1, 0.9], vec![0.0, 1.0], 1e-4, Kernel::Gaussian);
        assert_eq!(smoother.at(0.2), 0.0);
        assert_eq!(smoother.at(0.8), 1.0);
        let tri = KernelSmoother::from_sorted(vec![0.1], vec![1.0], 0.01, Kernel::Triweight);
        assert_eq!(tri.at(0.5), 0.5);
    }
}
