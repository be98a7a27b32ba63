//! Affine and quadratic logistic calibration on the logit (CalArena's best binary
//! calibrators, Berta et al. 2026; probmetrics' `BinaryLogisticCalibrator(type="affine" |
//! "quadratic")`).
//!
//! ```text
//! z = ln max(s, 1e-30) - ln max(1 - s, 1e-30)
//! affine:     m(s) = sigmoid(a z + b)
//! quadratic:  m(s) = sigmoid(a z + b + c z^2)
//! minimise    mean log-loss on the 0/1 outcomes + (ridge / 2) (a^2 + c^2)   (ridge 0 by default)
//! ```
//!
//! Maximum likelihood on the plain outcomes, as scikit-learn's unpenalised
//! `LogisticRegression` (probmetrics), where calib's `platt` fits Platt's smoothed targets
//! `(N+ + 1)/(N+ + 2)`, `1/(N- + 2)`: probmetrics and CalArena call this affine map "Platt";
//! scikit-learn's `CalibratedClassifierCV(method="sigmoid")` and netcal's `LogisticCalibration`
//! fit on the score's logit too, scikit-learn with Platt's targets. Host Newton
//! ([`crate::binary`]); separable outcomes have no finite optimum without a ridge and stop
//! early with a warning.

use std::collections::BTreeMap;

use burn::config::Config;

use crate::api::{Method, SavedTensor};
use crate::binary::{
    BinaryFit, BinaryFitted, BinaryMap, Features, LogisticProblem, MapCalibrator, Reduction,
    Targets, sigmoid,
};
use crate::error::{FitError, Result};

/// The floor of `s` and `1 - s` before their logarithms (docs/conventions.md).
const FLOOR: f64 = 1e-30;

/// A fitted map `sigmoid(sum_j c_j z^j)`, `j = 0..=DEGREE`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogitPolynomialMap<const DEGREE: usize> {
    /// `c_0` (the intercept `b`), `c_1` (`a`), `c_2` (`c`, quadratic only).
    coefficients: Vec<f64>,
}

/// The affine map `sigmoid(a z + b)`.
pub type AffineLogitMap = LogitPolynomialMap<1>;
/// The quadratic map `sigmoid(a z + b + c z^2)`.
pub type QuadraticLogitMap = LogitPolynomialMap<2>;
/// Affine logistic calibration as a calibrator.
pub type AffineLogitScaling = MapCalibrator<AffineLogitMap>;
/// Quadratic logistic calibration as a calibrator.
pub type QuadraticLogitScaling = MapCalibrator<QuadraticLogitMap>;

/// `ln max(s, 1e-30) - ln max(1 - s, 1e-30)`.
pub fn floored_logit(s: f64) -> f64 {
    s.max(FLOOR).ln() - (1.0 - s).max(FLOOR).ln()
}

impl<const DEGREE: usize> LogitPolynomialMap<DEGREE> {
    /// `[c_0, c_1, ..., c_DEGREE]`: intercept first.
    pub fn coefficients(&self) -> &[f64] {
        &self.coefficients
    }

    /// Fits by Newton on the outcomes with ridge `ridge` on the non-intercept coefficients.
    /// The fit with sample weights `weights` (`None`: all 1). The logistic problem's loss is
    /// a sum over the N pairs divided by N, so the weights go in scaled by `N / W`: the mean
    /// over the repeated rows, whose ridge is then the same.
    fn fit(
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
        ridge: f64,
    ) -> BinaryFitted<Self> {
        let scaled: Option<Vec<f64>> = weights.map(|w| {
            let per = scores.len() as f64 / w.iter().sum::<f64>();
            w.iter().map(|v| v * per).collect()
        });
        let features: Vec<f64> = scores
            .iter()
            .flat_map(|&s| {
                let z = floored_logit(s);
                (1..=DEGREE).map(move |j| z.powi(j as i32))
            })
            .collect();
        let problem = LogisticProblem {
            features: Features::Dense(&features),
            n_features: DEGREE,
            targets: Targets::hard(outcomes),
            intercept: true,
            l2: ridge,
            weights: scaled.as_deref(),
        };
        // Start at the identity: a = 1, everything else 0 (weights, then the intercept).
        let start = (0..=DEGREE).map(|j| if j == 0 { 1.0 } else { 0.0 }).collect();
        let fit = problem.fit(start);
        let mut coefficients = vec![fit.weights[DEGREE]];
        coefficients.extend_from_slice(&fit.weights[..DEGREE]);
        let mut fitted = BinaryFitted {
            map: Self { coefficients },
            iterations: fit.iterations,
            converged: fit.converged,
            warnings: Vec::new(),
            training_nll: fit.nll,
        };
        if fit.separable {
            fitted.warnings.push(
                "the scores separate the outcomes: the coefficients have no finite optimum \
                 without a ridge; the fit stopped early"
                    .into(),
            );
        }
        fitted
    }
}

impl<const DEGREE: usize> BinaryMap for LogitPolynomialMap<DEGREE> {
    const METHOD: Method = if DEGREE == 1 { Method::Affine } else { Method::Quadratic };

    /// `sigmoid(c_0 + c_1 z + c_2 z^2)` of the floored logit.
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        let c = &self.coefficients;
        Some(calib_core::engine::MapTable::Logistic {
            features: calib_core::engine::LogisticFeatures::LogitPowers,
            clip: (0.0, 1.0),
            floor: FLOOR,
            coefficients: [c[0], c[1], c.get(2).copied().unwrap_or(0.0)],
        })
    }

    fn predict(&self, s: f64) -> f64 {
        let z = floored_logit(s);
        sigmoid(self.coefficients.iter().rev().fold(0.0, |acc, c| acc * z + c))
    }

    fn identity() -> Self {
        Self { coefficients: (0..=DEGREE).map(|j| if j == 1 { 1.0 } else { 0.0 }).collect() }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "coefficients", self.coefficients.clone());
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let c = crate::binary::table(parameters, prefix, "coefficients")?;
        if c.len() != DEGREE + 1 {
            return Err(FitError::Format(format!(
                "map `{prefix}coefficients` needs {} values, got {}",
                DEGREE + 1,
                c.len()
            )));
        }
        Ok(Self { coefficients: c.to_vec() })
    }
}

/// Declares the settings of a logit-polynomial map of one degree.
macro_rules! logit_polynomial_config {
    ($(#[$doc:meta])* $name:ident, $degree:literal, $calibrator:ty) => {
        $(#[$doc])*
        #[derive(Config, Debug, PartialEq)]
        pub struct $name {
            /// Ridge `(ridge / 2) (a^2 + c^2)` on the non-intercept coefficients (0: none).
            #[config(default = 0.0)]
            pub ridge: f64,
            /// One-vs-rest or top-label on K-class input.
            #[config(default = "Reduction::OneVsRest")]
            pub reduction: Reduction,
        }

        impl BinaryFit for $name {
            type Map = LogitPolynomialMap<$degree>;

            const SAMPLE_WEIGHTS: crate::fit::SampleWeighting =
                crate::fit::SampleWeighting::Weighted;

            fn check(&self) -> Result<()> {
                if self.ridge >= 0.0 && self.ridge.is_finite() {
                    Ok(())
                } else {
                    Err(FitError::InvalidConfig(format!("ridge must be >= 0, got {}", self.ridge)))
                }
            }

            fn fit_pairs(
                &self,
                scores: &[f64],
                outcomes: &[bool],
                weights: Option<&[f64]>,
            ) -> Result<BinaryFitted<Self::Map>> {
                Ok(LogitPolynomialMap::fit(scores, outcomes, weights, self.ridge))
            }

            /// The floored logit's powers, fitted on the device's sums.
            #[cfg(feature = "wgpu")]
            fn device_logistic(&self) -> Option<crate::binary::DeviceLogistic<Self::Map>> {
                Some(crate::binary::DeviceLogistic {
                    spec: calib_core::engine::LogisticSpec {
                        features: calib_core::engine::LogisticFeatures::LogitPowers,
                        clip: (0.0, 1.0),
                        floor: FLOOR,
                    },
                    degree: $degree,
                    soft_targets: false,
                    ridge: self.ridge,
                    map: |c| LogitPolynomialMap { coefficients: c[..=$degree].to_vec() },
                })
            }
        }

        crate::binary::fit_by_maps!($name, $calibrator);
    };
}

logit_polynomial_config!(
    /// Settings of affine logistic calibration on the logit.
    AffineLogitScalingConfig,
    1,
    AffineLogitScaling
);
logit_polynomial_config!(
    /// Settings of quadratic logistic calibration on the logit.
    QuadraticLogitScalingConfig,
    2,
    QuadraticLogitScaling
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Outcomes drawn from sigmoid(2 z - 0.5) are fitted back near (2, -0.5); the quadratic
    /// term stays near 0.
    #[test]
    fn recovers_a_logistic_model() {
        let mut rng = calib_core::synthetic::SplitMix64(5);
        let scores: Vec<f64> = (0..20_000).map(|_| rng.uniform().clamp(1e-6, 1.0 - 1e-6)).collect();
        let outcomes: Vec<bool> =
            scores.iter().map(|&s| rng.uniform() < sigmoid(2.0 * floored_logit(s) - 0.5)).collect();
        let affine = AffineLogitMap::fit(&scores, &outcomes, None, 0.0);
        let c = affine.map.coefficients();
        assert!(
            affine.converged && (c[0] + 0.5).abs() < 0.05 && (c[1] - 2.0).abs() < 0.06,
            "{c:?}"
        );
        let quadratic = QuadraticLogitMap::fit(&scores, &outcomes, None, 0.0);
        assert!(quadratic.map.coefficients()[2].abs() < 0.02, "{:?}", quadratic.map);
        assert!((AffineLogitMap::identity().predict(0.3) - 0.3).abs() < 1e-15);
    }
}
