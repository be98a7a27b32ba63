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
//! off this optimum on real scores; calib solves to a gradient of 1e-11 or a Newton decrement of
//! 1e-18 (the mean NLL within 1e-18 of its minimum).
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
use std::ops::Range;

use burn::config::Config;
use calib_kernels::ln_positive;
use serde::{Deserialize, Serialize};

use crate::api::{Method, SavedTensor};
use crate::binary::{
    BinaryFit, BinaryFitted, BinaryMap, Features, LogisticFit, LogisticProblem, MapCalibrator,
    Reduction, RowFeatures, Targets, sigmoid, sigmoid_fast,
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

    /// `sigmoid(c + a l_0 - b l_1)` of the score clipped to `[EPS, 1 - EPS]`.
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        let [a, b, c] = self.abc;
        Some(calib_core::engine::MapTable::Logistic {
            features: calib_core::engine::LogisticFeatures::Logs,
            clip: (EPS, 1.0 - EPS),
            floor: EPS,
            coefficients: [c, a, -b],
        })
    }

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

/// The features a beta form fits on, computed from the scores where the fit reads them
/// ([`logs`]: `l = ln s`, `m = -ln(1 - s)`).
#[derive(Debug, Clone, Copy)]
enum Columns {
    /// `(l, m)`: abm.
    Both,
    /// `l` alone: abm refitted with `b = 0`.
    Ln,
    /// `m` alone: abm refitted with `a = 0`.
    LnComplement,
    /// `l + m = logit s`: am.
    Logit,
    /// `(l + ln 2, ln 2 - m) = (ln 2s, ln 2(1 - s))`: ab.
    Halves,
}

/// The scores and the features of one form.
struct BetaFeatures<'a> {
    scores: &'a [f64],
    columns: Columns,
}

impl RowFeatures for BetaFeatures<'_> {
    fn fill(&self, rows: Range<usize>, out: &mut [Vec<f64>]) {
        let (len, scores) = (rows.len(), &self.scores[rows]);
        let ln2 = std::f64::consts::LN_2;
        calib_kernels::dispatch(
            #[inline(always)]
            || match (self.columns, out) {
                (Columns::Both, [a, b]) => {
                    for ((a, b), &s) in a[..len].iter_mut().zip(&mut b[..len]).zip(scores) {
                        (*a, *b) = logs(s);
                    }
                }
                (Columns::Halves, [a, b]) => {
                    for ((a, b), &s) in a[..len].iter_mut().zip(&mut b[..len]).zip(scores) {
                        let (l, m) = logs(s);
                        (*a, *b) = (l + ln2, ln2 - m);
                    }
                }
                (Columns::Ln, [a]) => a[..len].iter_mut().zip(scores).for_each(|(a, &s)| {
                    *a = logs(s).0;
                }),
                (Columns::LnComplement, [b]) => {
                    b[..len].iter_mut().zip(scores).for_each(|(b, &s)| {
                        *b = logs(s).1;
                    })
                }
                (Columns::Logit, [x]) => x[..len].iter_mut().zip(scores).for_each(|(x, &s)| {
                    let (l, m) = logs(s);
                    *x = l + m;
                }),
                _ => unreachable!("a form's feature count"),
            },
        );
    }
}

/// Unpenalised logistic regression of the outcomes on the form's `columns` (`d` of them)
/// from `w0`, with sample weights when given (unpenalised: their scale does not move the
/// optimum).
fn logistic(
    (scores, columns, d): (&[f64], Columns, usize),
    outcomes: &[bool],
    weights: Option<&[f64]>,
    intercept: bool,
    w0: Vec<f64>,
) -> LogisticFit {
    let features = BetaFeatures { scores, columns };
    let problem = LogisticProblem {
        features: Features::Computed(&features),
        n_features: d,
        targets: Targets::hard(outcomes),
        intercept,
        l2: 0.0,
        weights,
    };
    problem.fit(w0)
}

impl BetaCalibrationConfig {
    /// `abm`: both log features with an intercept; a negative slope refitted without its
    /// feature.
    fn fit_abm(&self, s: &[f64], y: &[bool], v: Option<&[f64]>) -> ([f64; 3], LogisticFit) {
        let fit = logistic((s, Columns::Both, 2), y, v, true, vec![1.0, 1.0, 0.0]);
        let [a, b, c] = [fit.weights[0], fit.weights[1], fit.weights[2]];
        // A refit starts where the first fit left the feature it keeps (the optimum is unique:
        // only the iterations to reach it change).
        if a < 0.0 {
            let fit = logistic((s, Columns::LnComplement, 1), y, v, true, vec![b, c]);
            ([0.0, fit.weights[0], fit.weights[1]], fit)
        } else if b < 0.0 {
            let fit = logistic((s, Columns::Ln, 1), y, v, true, vec![a, c]);
            ([fit.weights[0], 0.0, fit.weights[1]], fit)
        } else {
            ([a, b, c], fit)
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
        let (abc, fit) = match self.form {
            BetaForm::Abm => self.fit_abm(scores, outcomes, v),
            BetaForm::Am => {
                let fit = logistic((scores, Columns::Logit, 1), outcomes, v, true, vec![1.0, 0.0]);
                ([fit.weights[0], fit.weights[0], fit.weights[1]], fit)
            }
            BetaForm::Ab => {
                let fit =
                    logistic((scores, Columns::Halves, 2), outcomes, v, false, vec![1.0, -1.0]);
                let (a, b) = (fit.weights[0], -fit.weights[1]);
                ([a, b, (a - b) * std::f64::consts::LN_2], fit)
            }
        };
        let mut fitted = BinaryFitted {
            map: BetaMap { abc },
            iterations: fit.iterations,
            converged: fit.converged,
            warnings: Vec::new(),
            training_nll: fit.nll,
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
