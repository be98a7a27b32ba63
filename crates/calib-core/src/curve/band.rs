//! [`CurveBand`]: bootstrap quantile bands of the reliability curve.
//!
//! ```text
//! replicate b: the pairs resampled by the bootstrap's row multiplicities (seed, b), RC_b on the grid
//! band at grid point g: q_{(1-L)/2}, q_{1/2}, q_{(1+L)/2} of RC_1(g) .. RC_B(g)   (numpy's quantile)
//! ```
//! Every replicate keeps the full sample's bandwidth, so the band is the sampling spread of the
//! curve at that smoothing; the same seed gives the same band on any thread count.

use super::{ReliabilityCurve, ReliabilityCurveConfig};
use crate::bootstrap::{BootstrapConfig, Draws, over_replicates, quantile, resampled};
use crate::error::Result;
use crate::pairs::ScorePairs;

/// Pointwise bootstrap quantiles of the reliability curve, on the curve's grid.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveBand {
    /// Coverage of `[lower, upper]` at each grid point.
    pub level: f64,
    /// Number of replicates.
    pub replicates: usize,
    /// The `(1 - level) / 2` quantile.
    pub lower: Vec<f64>,
    /// The replicates' median.
    pub median: Vec<f64>,
    /// The `(1 + level) / 2` quantile.
    pub upper: Vec<f64>,
}

impl ReliabilityCurveConfig {
    /// The curve of `pairs` and its bootstrap band (`bootstrap`'s replicates, level, seed and
    /// threads; its interval kind does not apply).
    ///
    /// ```
    /// use calib_core::bootstrap::BootstrapConfig;
    /// use calib_core::curve::ReliabilityCurveConfig;
    /// use calib_core::pairs::ScorePairs;
    /// let scores: Vec<f64> = (0..500).map(|i| (i as f64 + 0.5) / 500.0).collect();
    /// let outcomes = scores.iter().enumerate().map(|(i, &s)| f64::from(u8::from((i * 7919 % 1000) as f64 / 1000.0 < s))).collect();
    /// let config = ReliabilityCurveConfig::new().with_grid_points(101);
    /// let boot = BootstrapConfig::new().with_replicates(50);
    /// let (curve, band) = config.band(&ScorePairs { scores, outcomes }, &boot).unwrap();
    /// assert!(band.lower[50] <= curve.reliability[50] && curve.reliability[50] <= band.upper[50]);
    /// ```
    ///
    /// # Errors
    /// As [`Self::curve`]; a bootstrap configuration with fewer than 2 replicates or a level
    /// outside (0, 1).
    pub fn band(
        &self,
        pairs: &ScorePairs,
        bootstrap: &BootstrapConfig,
    ) -> Result<(ReliabilityCurve, CurveBand)> {
        self.band_weighted(pairs, None, bootstrap)
    }

    /// [`Self::band`] of pairs with sample weights: the curve weighted, and each replicate
    /// N pairs drawn with probabilities `w_i / W`, then unweighted (the bootstrap's rule).
    ///
    /// # Errors
    /// As [`Self::band`].
    pub fn band_weighted(
        &self,
        pairs: &ScorePairs,
        weights: Option<&[f64]>,
        bootstrap: &BootstrapConfig,
    ) -> Result<(ReliabilityCurve, CurveBand)> {
        bootstrap.validate()?;
        self.validate()?;
        let (sorted, rows) = pairs.sorted();
        let sorted_weights = weights.map(|w| rows.iter().map(|&i| w[i]).collect());
        let outcomes = sorted.outcomes.clone();
        let smoother =
            self.smoother_of_sorted(&sorted.scores, outcomes, sorted_weights, self.bandwidth)?;
        let curve = self.curve_of(&smoother);
        let draws = Draws::new(pairs.len(), weights);
        let replicate = |b: usize| {
            let m = draws.multiplicities(bootstrap.seed, b);
            let r = resampled(&sorted, &rows, &m);
            let positions = self.positions(&r.scores);
            let smoother = self.smoother_at(positions, r.outcomes, None, curve.bandwidth);
            curve.grid.iter().map(|&s| smoother.at(s)).collect::<Vec<f64>>()
        };
        let curves = over_replicates(bootstrap, bootstrap.replicates, |range| {
            range.map(replicate).collect()
        });
        Ok((curve, summarise(&curves, bootstrap)))
    }
}

/// The pointwise quantiles of the replicate curves.
fn summarise(curves: &[Vec<f64>], config: &BootstrapConfig) -> CurveBand {
    let points = curves.first().map_or(0, Vec::len);
    let (lo, hi) = ((1.0 - config.level) / 2.0, (1.0 + config.level) / 2.0);
    let mut band = CurveBand {
        level: config.level,
        replicates: curves.len(),
        lower: Vec::with_capacity(points),
        median: Vec::with_capacity(points),
        upper: Vec::with_capacity(points),
    };
    let mut column = Vec::with_capacity(curves.len());
    for g in 0..points {
        column.clear();
        column.extend(curves.iter().map(|c| c[g]));
        column.sort_by(f64::total_cmp);
        band.lower.push(quantile(&column, lo));
        band.median.push(quantile(&column, 0.5));
        band.upper.push(quantile(&column, hi));
    }
    band
}
