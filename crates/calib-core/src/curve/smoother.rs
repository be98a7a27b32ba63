//! [`KernelSmoother`]: the Nadaraya-Watson estimate of `E[Y | S = s]` (Posocco & Bonnefoy's
//! reliability curve; docs/conventions.md, "Reliability curve and LCE"), on the scores
//! reflected at 0 and 1 or on their log-odds ([`Scale`]), with an optional [`Prior`].
//!
//! ```text
//! probability scale: w_i(s) = K((s - s_i)/h) + K((s + s_i)/h) + K((s - 2 + s_i)/h)
//! logit scale:       w_i(s) = K((logit s - logit s_i)/h)
//! RC(s) = (sum_i w_i(s) y_i + w0 r) / (sum_i w_i(s) + w0)      (w0 = 0 without a prior)
//! K(u) = exp(-u^2 / 2) (Gaussian)  or  (1 - u^2)^3 on |u| < 1 (triweight)
//! ```
//!
//! The bandwidth comes from outside (the curve's bandwidth rule: Silverman's or the
//! leave-one-out minimiser); [`KernelSmoother::leave_one_out`] is the curve at a pair without it.
//!
//! The estimate is exact: Gaussian weights are taken relative to the nearest image of a score
//! (so none underflows, however far every score is) and cut below e^-37 of it, so a query reads
//! only the scores within reach (binary search). Where thousands are in reach, their sum comes
//! from Gaussian box moments ([`GaussBoxes`], equal to the direct sum to about 1e-13).

use serde::{Deserialize, Serialize};

use calib_kernels::GaussBoxes;

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

/// Where the kernel smooths: on the scores themselves, reflected at 0 and 1 (Posocco &
/// Bonnefoy's curve), or on their log-odds `logit(s)` (no boundary, so no reflection).
///
/// On the log-odds scale the scores piled up near 0 and 1 by confident models spread out over
/// several units, so one bandwidth suits the pile and the sparse middle alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Scale {
    /// `s`, reflected at 0 and 1.
    #[default]
    Probability,
    /// `logit(s) = ln(s / (1 - s))`, `s` clamped to `[LOGIT_FLOOR, 1 - LOGIT_FLOOR]`.
    Logit,
}

/// The clamp of scores before the log-odds (`logit(1e-12) = -27.6`): exact zeros and ones of
/// saturated float scores keep a finite place at the ends.
pub const LOGIT_FLOOR: f64 = 1e-12;

impl Scale {
    /// The position of score `s` on this scale.
    pub fn position(self, s: f64) -> f64 {
        match self {
            Self::Probability => s,
            Self::Logit => {
                let s = s.clamp(LOGIT_FLOOR, 1.0 - LOGIT_FLOOR);
                s.ln() - (-s).ln_1p()
            }
        }
    }

    /// The score at position `x` (the inverse of [`Self::position`] inside the clamp).
    pub fn score(self, x: f64) -> f64 {
        match self {
            Self::Probability => x,
            Self::Logit => 1.0 / (1.0 + (-x).exp()),
        }
    }

    /// The images of the sample on this scale: `shift + sign x_i`.
    fn images(self) -> &'static [(f64, f64)] {
        match self {
            Self::Probability => &IMAGES,
            Self::Logit => &IMAGES[..1],
        }
    }

    /// Parses `probability` or `logit`.
    ///
    /// # Errors
    /// [`crate::CalibError::InvalidConfig`] for other names.
    pub fn from_name(name: &str) -> crate::Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "probability" => Ok(Self::Probability),
            "logit" => Ok(Self::Logit),
            other => Err(crate::CalibError::InvalidConfig(format!(
                "unknown smoothing scale `{other}`; known: probability, logit"
            ))),
        }
    }
}

/// A pseudo-pair at every position: weight `weight` (a pair's own kernel weight is 1) and
/// outcome `rate`, added to the curve's sums where any pair is in reach:
/// `RC(s) = (sum_i w_i(s) y_i + weight rate) / (sum_i w_i(s) + weight)`. It keeps the curve
/// off exactly 0 and 1 where the pairs in reach all share one outcome, and leads it to `rate`
/// far from every pair (a Beta prior on the local rate, of `weight` pseudo-pairs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// Its weight, in pairs at distance 0.
    pub weight: f64,
    /// Its outcome, in `[0, 1]` (the pairs' mean outcome, for calibration).
    pub rate: f64,
}

/// Windows of more scores than this (and 8 per box in reach) are summed by box moments.
const DIRECT_MAX: usize = 256;

/// Images of the sample: `shift + sign s_i`, the scores and their reflections at 0 and 1.
const IMAGES: [(f64, f64); 3] = [(1.0, 0.0), (-1.0, 0.0), (-1.0, 2.0)];

/// (score, outcome) pairs sorted by score with a kernel and bandwidth: `RC(s)` at any `s`.
///
/// The pairs are kept as positions on the smoother's [`Scale`] (the scores themselves, or their
/// log-odds) and the bandwidth is on that scale.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSmoother {
    /// Positions `x_i` of the scores on `scale`, ascending.
    scores: Vec<f64>,
    scale: Scale,
    outcomes: Vec<f64>,
    prior: Option<Prior>,
    bandwidth: f64,
    kernel: Kernel,
    /// The pairs' sample weights, in the scores' order (`None`: each 1).
    weights: Option<Vec<f64>>,
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
        Self::on_scale(scores, outcomes, bandwidth, kernel, Scale::Probability)
    }

    /// The smoother of pairs at positions `x_i` on `scale` (ascending: [`Scale::position`] of
    /// sorted scores), bandwidth `h > 0` on that scale.
    pub fn on_scale(
        positions: Vec<f64>,
        outcomes: Vec<f64>,
        bandwidth: f64,
        kernel: Kernel,
        scale: Scale,
    ) -> Self {
        Self::weighted_on_scale(positions, outcomes, None, bandwidth, kernel, scale)
    }

    /// [`Self::on_scale`] with pair `i` weighted by `weights[i]` (sample weights, in the
    /// scores' order; `None`: each 1): `RC(s) = sum_i v_i(s) w_i y_i / sum_i v_i(s) w_i`, so
    /// whole-number weights give the repeated pairs' curve.
    pub fn weighted_on_scale(
        positions: Vec<f64>,
        outcomes: Vec<f64>,
        weights: Option<Vec<f64>>,
        bandwidth: f64,
        kernel: Kernel,
        scale: Scale,
    ) -> Self {
        debug_assert!(positions.windows(2).all(|w| w[0] <= w[1]));
        debug_assert!(weights.as_ref().is_none_or(|w| w.len() == positions.len()));
        let boxes = (kernel == Kernel::Gaussian && positions.len() > DIRECT_MAX)
            .then(|| GaussBoxes::weighted(&positions, &outcomes, weights.as_deref(), bandwidth));
        Self { scores: positions, scale, outcomes, prior: None, bandwidth, kernel, weights, boxes }
    }

    /// The weight of pair `i` (1 without weights).
    pub fn weight(&self, i: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[i])
    }

    /// The smoother with `prior` added to its sums.
    pub fn with_prior(mut self, prior: Prior) -> Self {
        self.prior = Some(prior);
        self
    }

    /// The prior pseudo-pair, if any.
    pub fn prior(&self) -> Option<Prior> {
        self.prior
    }

    /// The sorted positions of the scores on the smoother's scale (the scores themselves on
    /// [`Scale::Probability`]).
    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    /// The scale the kernel smooths on.
    pub fn scale(&self) -> Scale {
        self.scale
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
        let (num, den, log_scale) = self.sums(self.scale.position(s));
        self.ratio(num, den, log_scale).unwrap_or(s)
    }

    /// `num / den` with the prior added (sums relative to `exp(log_scale)`), or `None` for
    /// `den = 0` (nothing in reach).
    fn ratio(&self, num: f64, den: f64, log_scale: f64) -> Option<f64> {
        if den <= 0.0 {
            return None;
        }
        Some(match self.prior {
            None => num / den,
            Some(Prior { weight, rate }) => {
                let w = weight * (-log_scale).exp();
                if w.is_finite() { (num + w * rate) / (den + w) } else { rate }
            }
        })
    }

    /// `RC` at the `i`-th pair with the pair itself left out (its weight at every image
    /// removed, all of it with sample weights: a row's copies would otherwise predict it), or
    /// `None` where no other pair is within reach. Weights near the pair are
    /// absolute there (`u_min = 0`), so the removal is exact up to the box sums' rounding,
    /// and a remainder below `1e-9` of the whole counts as none.
    pub fn leave_one_out(&self, i: usize) -> Option<f64> {
        let x = self.scores[i];
        let (num, den, log_scale) = self.sums(x);
        let own: f64 = self
            .scale
            .images()
            .iter()
            .map(|&(sign, shift)| self.kernel.weight((x - shift - sign * x) / self.bandwidth))
            .sum::<f64>()
            * self.weight(i);
        let rest = den - own;
        if rest <= 1e-9 * den {
            return None;
        }
        let rc = self.ratio(num - own * self.outcomes[i], rest, log_scale)?;
        Some(rc.clamp(0.0, 1.0))
    }

    /// `(sum w y, sum w, ln c)` at position `x`: Gaussian weights relative to the nearest
    /// image's, `c = exp(-u_min^2 / 2)` (1 for the triweight).
    fn sums(&self, x: f64) -> (f64, f64, f64) {
        let s = x;
        let h = self.bandwidth;
        let images = self.scale.images();
        let u_min = match self.kernel {
            Kernel::Gaussian => {
                images
                    .iter()
                    .map(|&(sign, shift)| self.nearest(s, sign, shift))
                    .fold(f64::INFINITY, f64::min)
                    / h
            }
            Kernel::Triweight => 0.0,
        };
        if !u_min.is_finite() {
            return (0.0, 0.0, 0.0);
        }
        let reach = match self.kernel {
            Kernel::Gaussian => (u_min * u_min + 74.0).sqrt() * h,
            Kernel::Triweight => h,
        };
        let (mut num, mut den) = (0.0, 0.0);
        for &(sign, shift) in images {
            let (n, d) = self.image_sums(s, sign, shift, reach, u_min);
            num += n;
            den += d;
        }
        (num, den, -0.5 * u_min * u_min)
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
            let w = w * self.weight(i);
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
        // About Silverman's bandwidth of these scores (0.01597).
        let h = 0.01597;
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
