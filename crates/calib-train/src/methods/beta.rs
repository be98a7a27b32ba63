//! Beta calibration (Kull, Silva Filho & Flach 2017).
//!
//! ```text
//! logit P(y = 1 | s) = a ln s - b ln(1 - s) + c,    s clipped to [eps, 1 - eps], eps = 2^-52
//! abm: a, b, c free;  am: a = b (logistic on logit s);  ab: c = (a - b) ln 2 (betacal's
//! no-intercept fit on ln 2s and ln 2(1 - s))
//! ```
//!
//! Fitted by maximum likelihood (host Newton, [`crate::binary`]'s logistic regression on the
//! form's features), the model of the `betacal` 1.1.0 package: for `abm`, a negative `a` or
//! `b` is refitted without its feature (that parameter becomes 0), as betacal does. betacal
//! itself stops its L-BFGS early (scikit-learn's default tolerance), about 4e-5 in probability
//! off this optimum on real scores; calib solves to a gradient of 1e-11.
//!
//! # Example
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use calib_core::input::Predictions;
//! use calib_train::{BetaCalibrationConfig, BetaForm, Fit};
//!
//! let device = Device::flex();
//! let scores = Tensor::<1>::from_floats([0.1, 0.3, 0.4, 0.6, 0.7, 0.9, 0.2, 0.8], &device);
//! let labels = Tensor::<1, Int>::from_ints([0, 0, 1, 0, 1, 1, 1, 0], &device);
//! let preds = Predictions::binary(scores, labels)?;
//! let fitted = BetaCalibrationConfig::new().with_form(BetaForm::Am).fit(&preds)?;
//! let [a, b, _c] = fitted.calibrator.maps()[0].coefficients();
//! assert_eq!(a, b);
//! # Ok::<(), calib_train::FitError>(())
//! ```

use std::collections::BTreeMap;

use burn::config::Config;
use calib_kernels::ln_positive;
use serde::{Deserialize, Serialize};

use crate::api::{Method, SavedTensor};
use crate::binary::{
    BinaryFit, BinaryFitted, BinaryMap, LogisticFit, LogisticProblem, MapCalibrator, Reduction,
    sigmoid, sigmoid_fast,
};
use crate::error::{FitError, Result};

/// The parametrisations of beta calibration (betacal's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BetaForm {
    /// a, b and c free (a, b >= 0 enforced by refitting).
    #[default]
    Abm,
    /// a = b.
    Am,
    /// m = 1/2: no intercept on `ln 2s`, `ln 2(1 - s)`.
    Ab,
}

/// A fitted beta map `sigmoid(a ln s - b ln(1 - s) + c)`.
#[derive(Debug, Clone, PartialEq)]
pub struct BetaMap {
    abc: [f64; 3],
}

/// Beta calibration as a calibrator ([`MapCalibrator`] of [`BetaMap`]s).
pub type BetaCalibration = MapCalibrator<BetaMap>;

/// betacal's clip: `np.finfo(np.float64).eps`.
const EPS: f64 = f64::EPSILON;

impl BetaMap {
    /// `[a, b, c]`.
    pub fn coefficients(&self) -> [f64; 3] {
        self.abc
    }
}

impl BinaryMap for BetaMap {
    const METHOD: Method = Method::Beta;

    fn predict(&self, s: f64) -> f64 {
        let s = s.clamp(EPS, 1.0 - EPS);
        let [a, b, c] = self.abc;
        sigmoid(a * s.ln() - b * (1.0 - s).ln() + c)
    }

    #[inline(always)]
    fn predict_fast(&self, s: f64) -> f64 {
        let ((l, m), [a, b, c]) = (logs(s), self.abc);
        sigmoid_fast(a * l + b * m + c)
    }

    fn identity() -> Self {
        Self { abc: [1.0, 1.0, 0.0] }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "abc", self.abc.to_vec());
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let abc = crate::binary::table(parameters, prefix, "abc")?;
        let abc: [f64; 3] = abc
            .try_into()
            .map_err(|_| FitError::Format(format!("beta map `{prefix}abc` needs 3 values")))?;
        Ok(Self { abc })
    }
}

/// Settings of a beta-calibration fit.
#[derive(Config, Debug, PartialEq)]
pub struct BetaCalibrationConfig {
    /// The parametrisation.
    #[config(default = "BetaForm::Abm")]
    pub form: BetaForm,
    /// One-vs-rest or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

/// The features of one score: `(ln s, -ln(1 - s))` after the clip (the fit's vectorised `ln`,
/// within 2 ulp of the C library's that [`BetaMap::predict`] keeps).
#[inline(always)]
fn logs(s: f64) -> (f64, f64) {
    let s = s.clamp(EPS, 1.0 - EPS);
    (ln_positive(s), -ln_positive(1.0 - s))
}

/// [`logs`] of every score, `[N, 2]` row-major (vectorised, rows shared out over the cores).
fn all_logs(scores: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; 2 * scores.len()];
    calib_kernels::for_row_blocks(&mut x, 2, 65_536, |first, x| {
        calib_kernels::dispatch(
            #[inline(always)]
            || {
                for (x, &s) in x.chunks_exact_mut(2).zip(&scores[first..]) {
                    (x[0], x[1]) = logs(s);
                }
            },
        )
    });
    x
}

/// Unpenalised logistic regression of `targets` on `features` `[N, d]` from `w0`, with
/// sample weights when given (unpenalised: their scale does not move the optimum).
fn logistic(
    (features, d): (&[f64], usize),
    targets: &[f64],
    weights: Option<&[f64]>,
    intercept: bool,
    w0: Vec<f64>,
) -> LogisticFit {
    let features = crate::binary::Features::Dense(features);
    LogisticProblem { features, n_features: d, targets, intercept, l2: 0.0, weights }.fit(w0)
}

impl BetaCalibrationConfig {
    /// `abm`: both log features with an intercept; a negative slope refitted without its
    /// feature.
    fn fit_abm(&self, x: &[f64], t: &[f64], v: Option<&[f64]>) -> ([f64; 3], LogisticFit) {
        let fit = logistic((x, 2), t, v, true, vec![1.0, 1.0, 0.0]);
        let (a, b) = (fit.weights[0], fit.weights[1]);
        if a < 0.0 {
            let only_b: Vec<f64> = x.iter().skip(1).step_by(2).copied().collect();
            let fit = logistic((&only_b, 1), t, v, true, vec![1.0, 0.0]);
            ([0.0, fit.weights[0], fit.weights[1]], fit)
        } else if b < 0.0 {
            let only_a: Vec<f64> = x.iter().step_by(2).copied().collect();
            let fit = logistic((&only_a, 1), t, v, true, vec![1.0, 0.0]);
            ([fit.weights[0], 0.0, fit.weights[1]], fit)
        } else {
            ([a, b, fit.weights[2]], fit)
        }
    }
}

impl BinaryFit for BetaCalibrationConfig {
    type Map = BetaMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<BetaMap>> {
        Ok(self.fit_with(scores, outcomes, weights))
    }
}

impl BetaCalibrationConfig {
    /// The fit, with sample weights `v` when given.
    fn fit_with(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        v: Option<&[f64]>,
    ) -> BinaryFitted<BetaMap> {
        let x = all_logs(scores);
        let t: Vec<f64> = outcomes.iter().map(|&o| f64::from(u8::from(o))).collect();
        let (abc, fit) = match self.form {
            BetaForm::Abm => self.fit_abm(&x, &t, v),
            BetaForm::Am => {
                let logit: Vec<f64> = x.chunks_exact(2).map(|p| p[0] + p[1]).collect();
                let fit = logistic((&logit, 1), &t, v, true, vec![1.0, 0.0]);
                ([fit.weights[0], fit.weights[0], fit.weights[1]], fit)
            }
            BetaForm::Ab => {
                let ln2 = std::f64::consts::LN_2;
                let f: Vec<f64> =
                    x.chunks_exact(2).flat_map(|p| [p[0] + ln2, ln2 - p[1]]).collect();
                let fit = logistic((&f, 2), &t, v, false, vec![1.0, -1.0]);
                let (a, b) = (fit.weights[0], -fit.weights[1]);
                ([a, b, (a - b) * ln2], fit)
            }
        };
        let mut fitted = BinaryFitted {
            map: BetaMap { abc },
            iterations: fit.iterations,
            converged: fit.converged,
            warnings: Vec::new(),
            training_nll: None,
        };
        if fit.separable {
            fitted.warnings.push(
                "the scores separate the outcomes: beta calibration has no finite optimum; \
                 the fit stopped early"
                    .into(),
            );
        }
        fitted
    }
}

crate::binary::fit_by_maps!(BetaCalibrationConfig, BetaCalibration);
