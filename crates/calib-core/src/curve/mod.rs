//! The continuous reliability curve and the local calibration error (Posocco & Bonnefoy 2021):
//! `RC(s)`, the kernel estimate of `E[Y | S = s]` on a grid, `LCE(s) = RC(s) - s`, the
//! LCE-based ECE and bootstrap bands.
//!
//! ```text
//! RC(s)    = sum_i w_i(s) y_i / sum_i w_i(s)     (Nadaraya-Watson, scores reflected at 0 and 1)
//! LCE(s)   = RC(s) - s
//! lce_ece  = (1/N) sum_i |LCE(s_i)|             (the integral of |LCE| over the empirical scores)
//! grid     = 1,000 even points on [0, 1]
//! band     = per grid point, the bootstrap quantiles (1-L)/2, 1/2, (1+L)/2 of RC
//! ```
//! The poster smooths `y_i - s_i` without dividing by the score density; the authors' code
//! (explicalib) normalises through Bayes' rule, as here. The pairs are binary scores, top-label
//! (confidence, hit) or one class's column ([`crate::pairs::PairSet`]). Bands keep the
//! bandwidth of the full sample: they show the sampling spread of the curve at that smoothing.

mod band;
mod bandwidth;
mod smoother;

use burn::config::Config;

pub use band::CurveBand;
pub use bandwidth::{
    BandwidthRule, LooProblem, leave_one_out_bandwidth, pooled_leave_one_out_bandwidth,
    silverman_bandwidth, weighted_silverman_bandwidth,
};
pub use smoother::{Kernel, KernelSmoother, LOGIT_FLOOR, Prior, Scale};

use crate::error::{CalibError, Result};
use crate::pairs::ScorePairs;

/// How to estimate the reliability curve.
#[derive(Config, Debug, PartialEq)]
pub struct ReliabilityCurveConfig {
    /// The smoothing kernel.
    #[config(default = "Kernel::Gaussian")]
    pub kernel: Kernel,
    /// The bandwidth `h` on `scale` (default: `bandwidth_rule` on the pairs).
    pub bandwidth: Option<f64>,
    /// How the bandwidth is chosen when none is given (default: Silverman's rule, the
    /// convention's; [`BandwidthRule::LeaveOneOut`] follows the outcomes, as LCE calibration).
    #[config(default = "BandwidthRule::Silverman")]
    pub bandwidth_rule: BandwidthRule,
    /// Where the kernel smooths (default: the scores reflected at 0 and 1, the convention's).
    #[config(default = "Scale::Probability")]
    pub scale: Scale,
    /// Points of the grid on [0, 1], at least 2.
    #[config(default = 1000)]
    pub grid_points: usize,
}

/// `RC` on a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct ReliabilityCurve {
    /// The grid, even on [0, 1].
    pub grid: Vec<f64>,
    /// `RC` at each grid point.
    pub reliability: Vec<f64>,
    /// The bandwidth used.
    pub bandwidth: f64,
    /// The kernel used.
    pub kernel: Kernel,
}

impl ReliabilityCurve {
    /// `LCE = RC - s` at each grid point.
    pub fn lce(&self) -> Vec<f64> {
        self.grid.iter().zip(&self.reliability).map(|(s, rc)| rc - s).collect()
    }
}

impl ReliabilityCurveConfig {
    /// The curve of `pairs` on the grid.
    ///
    /// ```
    /// use calib_core::curve::ReliabilityCurveConfig;
    /// use calib_core::pairs::ScorePairs;
    /// let scores: Vec<f64> = (0..400).map(|i| (i as f64 + 0.5) / 400.0).collect();
    /// let outcomes = scores.iter().map(|&s| f64::from(u8::from(s > 0.5))).collect();
    /// let curve = ReliabilityCurveConfig::new().curve(&ScorePairs { scores, outcomes }).unwrap();
    /// assert_eq!(curve.grid.len(), 1000);
    /// assert!(curve.reliability[100] < 0.01 && curve.reliability[900] > 0.99);
    /// ```
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for a bad bandwidth or grid, or no pairs; constant scores
    /// without a given bandwidth (Silverman's rule gives 0).
    pub fn curve(&self, pairs: &ScorePairs) -> Result<ReliabilityCurve> {
        Ok(self.curve_of(&self.smoother(pairs)?))
    }

    /// [`Self::curve`] of pairs with sample weights (`None`: each 1): the kernel sums and the
    /// bandwidth rule weighted.
    ///
    /// # Errors
    /// As [`Self::curve`].
    pub fn curve_weighted(
        &self,
        pairs: &ScorePairs,
        weights: Option<&[f64]>,
    ) -> Result<ReliabilityCurve> {
        self.validate()?;
        let (sorted, rows) = pairs.sorted();
        let w = weights.map(|w| rows.iter().map(|&i| w[i]).collect());
        Ok(self.curve_of(&self.smoother_of_sorted(
            &sorted.scores,
            sorted.outcomes,
            w,
            self.bandwidth,
        )?))
    }

    /// `RC` of `smoother` on this configuration's grid.
    fn curve_of(&self, smoother: &KernelSmoother) -> ReliabilityCurve {
        let grid = even_grid(self.grid_points);
        let reliability = evaluate(smoother, &grid);
        ReliabilityCurve { grid, reliability, bandwidth: smoother.bandwidth(), kernel: self.kernel }
    }

    /// `lce_ece = (1/N) sum_i |RC(s_i) - s_i|`. Constant scores (Silverman's bandwidth 0)
    /// give the limit as h -> 0, `|mean(y) - s|`.
    ///
    /// # Errors
    /// As [`Self::curve`], except for constant scores.
    pub fn lce_ece(&self, pairs: &ScorePairs) -> Result<f64> {
        self.lce_ece_weighted(pairs, None)
    }

    /// [`Self::lce_ece`] with pair `i` weighted by `weights[i]` (sample weights): the curve's
    /// kernel sums and bandwidth rule weighted, and `lce_ece = (1/W) sum_i w_i |LCE(s_i)|`,
    /// so whole-number weights give the repeated pairs' value.
    ///
    /// # Errors
    /// As [`Self::lce_ece`].
    pub fn lce_ece_weighted(&self, pairs: &ScorePairs, weights: Option<&[f64]>) -> Result<f64> {
        self.validate()?;
        let (sorted, rows) = pairs.sorted();
        let w: Option<Vec<f64>> = weights.map(|w| rows.iter().map(|&i| w[i]).collect());
        let weight = |i: usize| w.as_ref().map_or(1.0, |w| w[i]);
        let total: f64 = (0..pairs.len()).map(weight).sum();
        if self.bandwidth.is_none()
            && !pairs.is_empty()
            && sorted.scores.first() == sorted.scores.last()
        {
            let hits: f64 = (0..pairs.len()).map(|i| weight(i) * sorted.outcomes[i]).sum();
            return Ok((hits / total - pairs.scores[0]).abs());
        }
        let smoother =
            self.smoother_of_sorted(&sorted.scores, sorted.outcomes, w, self.bandwidth)?;
        let rc = evaluate(&smoother, &sorted.scores);
        let sum: f64 = (rc.iter().zip(&sorted.scores).enumerate())
            .map(|(i, (r, s))| smoother.weight(i) * (r - s).abs())
            .sum();
        Ok(sum / total)
    }

    /// The smoother of `pairs` under these settings (the bandwidth resolved).
    ///
    /// # Errors
    /// As [`Self::curve`].
    pub fn smoother(&self, pairs: &ScorePairs) -> Result<KernelSmoother> {
        self.validate()?;
        let (sorted, _) = pairs.sorted();
        self.smoother_of_sorted(&sorted.scores, sorted.outcomes, None, self.bandwidth)
    }

    /// The smoother of pairs sorted by score, at `bandwidth` or the rule's.
    fn smoother_of_sorted(
        &self,
        scores: &[f64],
        outcomes: Vec<f64>,
        weights: Option<Vec<f64>>,
        bandwidth: Option<f64>,
    ) -> Result<KernelSmoother> {
        if scores.is_empty() {
            return Err(CalibError::InvalidConfig("the reliability curve needs scores".into()));
        }
        let positions = self.positions(scores);
        let bandwidth = match bandwidth {
            Some(h) => h,
            None => self
                .bandwidth_rule
                .bandwidth(&positions, &outcomes, weights.as_deref(), self.kernel, self.scale, None)
                .ok_or_else(|| {
                    CalibError::InvalidConfig(
                        "the scores are constant, so no bandwidth follows from them: give one"
                            .into(),
                    )
                })?,
        };
        Ok(self.smoother_at(positions, outcomes, weights, bandwidth))
    }

    /// Sorted scores as positions on the configured scale.
    fn positions(&self, scores: &[f64]) -> Vec<f64> {
        scores.iter().map(|&s| self.scale.position(s)).collect()
    }

    /// The smoother of pairs at sorted `positions` (with their `weights`, if any) with
    /// bandwidth `h`.
    fn smoother_at(
        &self,
        positions: Vec<f64>,
        outcomes: Vec<f64>,
        weights: Option<Vec<f64>>,
        h: f64,
    ) -> KernelSmoother {
        KernelSmoother::weighted_on_scale(positions, outcomes, weights, h, self.kernel, self.scale)
    }

    fn validate(&self) -> Result<()> {
        if let Some(h) = self.bandwidth
            && !(h > 0.0 && h.is_finite())
        {
            return Err(CalibError::InvalidConfig(format!("bandwidth must be positive, got {h}")));
        }
        if self.grid_points < 2 {
            return Err(CalibError::InvalidConfig(format!(
                "the grid needs at least 2 points, got {}",
                self.grid_points
            )));
        }
        Ok(())
    }
}

/// `points` even points on [0, 1] (numpy's linspace: the last exactly 1).
pub fn even_grid(points: usize) -> Vec<f64> {
    let step = 1.0 / (points - 1) as f64;
    (0..points).map(|j| if j == points - 1 { 1.0 } else { j as f64 * step }).collect()
}

/// `RC` at each of `points`, split across the machine's threads (each point's value does not
/// depend on the split).
fn evaluate(smoother: &KernelSmoother, points: &[f64]) -> Vec<f64> {
    let threads = calib_kernels::threads();
    let per = points.len().div_ceil(threads).max(4096);
    std::thread::scope(|scope| {
        let handles: Vec<_> = points
            .chunks(per)
            .map(|chunk| {
                scope.spawn(move || chunk.iter().map(|&s| smoother.at(s)).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("curve thread")).collect()
    })
}

#[cfg(test)]
mod tests;
