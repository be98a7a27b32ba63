//! Platt scaling as a binary map: the one-vs-rest (scikit-learn's
//! `CalibratedClassifierCV(method="sigmoid")`) and top-label forms of [`crate::PlattScaling`].
//!
//! ```text
//! m(s) = sigmoid(a x + b),  x = logit(s) (s clipped to [1e-12, 1 - 1e-12]) or x = s
//! targets: Platt's (N+ + 1)/(N+ + 2) and 1/(N- + 2), or plain 0/1
//! ```
//!
//! Fitted by host Newton on the two parameters ([`crate::binary`]); binary input keeps the
//! tensor [`crate::PlattScaling`], which fits the same model.

use std::collections::BTreeMap;
use std::ops::Range;

use burn::config::Config;

use crate::api::{Method, SavedTensor};
use crate::binary::{
    BinaryFit, BinaryFitted, BinaryMap, Features, LogisticProblem, MapCalibrator, Reduction,
    RowFeatures, Targets, sigmoid, sigmoid_fast,
};
use crate::error::{FitError, Result};

/// The clip before the logit (`docs/conventions.md`, "Platt scaling").
pub(crate) const LOGIT_CLIP: f64 = 1e-12;

/// A fitted Platt map `sigmoid(a x + b)`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlattMap {
    slope: f64,
    intercept: f64,
    on_logit: bool,
}

/// Platt scaling one-vs-rest or top-label ([`MapCalibrator`] of [`PlattMap`]s).
pub type PlattMaps = MapCalibrator<PlattMap>;

impl PlattMap {
    /// `(a, b)`.
    pub fn coefficients(&self) -> (f64, f64) {
        (self.slope, self.intercept)
    }

    fn feature(&self, s: f64) -> f64 {
        if self.on_logit { logit(s) } else { s }
    }
}

/// `ln s - ln(1 - s)` after the clip.
pub(crate) fn logit(s: f64) -> f64 {
    let s = s.clamp(LOGIT_CLIP, 1.0 - LOGIT_CLIP);
    (s / (1.0 - s)).ln()
}

/// [`logit`] by the vectorised `ln` (within 2 ulp of the C library's that `predict` keeps).
#[inline(always)]
fn logit_fast(s: f64) -> f64 {
    let s = s.clamp(LOGIT_CLIP, 1.0 - LOGIT_CLIP);
    calib_kernels::ln_positive(s / (1.0 - s))
}

/// The fit's feature on the logit scale: [`logit_fast`] of each score, computed where the
/// fit reads it.
struct Logits<'a>(&'a [f64]);

impl RowFeatures for Logits<'_> {
    fn fill(&self, rows: Range<usize>, out: &mut [Vec<f64>]) {
        let (len, scores) = (rows.len(), &self.0[rows]);
        calib_kernels::dispatch(
            #[inline(always)]
            || {
                for (x, &s) in out[0][..len].iter_mut().zip(scores) {
                    *x = logit_fast(s);
                }
            },
        );
    }
}

impl BinaryMap for PlattMap {
    const METHOD: Method = Method::Platt;

    /// `sigmoid(b + a x)`, `x` the clipped score's logit or the score.
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        use calib_core::engine::{LogisticFeatures, MapTable};
        let (features, clip, floor) = match self.on_logit {
            true => (LogisticFeatures::LogitPowers, (LOGIT_CLIP, 1.0 - LOGIT_CLIP), LOGIT_CLIP),
            false => (LogisticFeatures::Score, (0.0, 1.0), 1e-30),
        };
        let coefficients = [self.intercept, self.slope, 0.0];
        Some(MapTable::Logistic { features, clip, floor, coefficients })
    }

    fn predict(&self, s: f64) -> f64 {
        sigmoid(self.slope * self.feature(s) + self.intercept)
    }

    #[inline(always)]
    fn predict_fast(&self, s: f64) -> f64 {
        let x = if self.on_logit { logit_fast(s) } else { s };
        sigmoid_fast(self.slope * x + self.intercept)
    }

    fn identity() -> Self {
        Self { slope: 1.0, intercept: 0.0, on_logit: true }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        let on = f64::from(u8::from(self.on_logit));
        crate::binary::put(out, prefix, "platt", vec![self.slope, self.intercept, on]);
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        match crate::binary::table(parameters, prefix, "platt")? {
            &[slope, intercept, on] if on == 0.0 || on == 1.0 => {
                Ok(Self { slope, intercept, on_logit: on == 1.0 })
            }
            _ => Err(FitError::Format(format!("platt map `{prefix}platt` needs [a, b, 0|1]"))),
        }
    }
}

/// Settings of Platt scaling one-vs-rest or top-label.
#[derive(Config, Debug, PartialEq)]
pub struct PlattMapConfig {
    /// Platt's soft targets.
    #[config(default = true)]
    pub soft_targets: bool,
    /// Fit on `logit(s)` (true) or on the raw score `s` (MAPIE's "sigmoid" does the latter).
    #[config(default = true)]
    pub on_logit: bool,
    /// One-vs-rest or top-label.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl BinaryFit for PlattMapConfig {
    type Map = PlattMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<PlattMap>> {
        self.fit_with(scores, outcomes, weights)
    }

    /// The clipped logit or the score, Platt's targets or the outcomes, fitted on the
    /// device's sums.
    #[cfg(feature = "wgpu")]
    fn device_logistic(&self) -> Option<crate::binary::DeviceLogistic<PlattMap>> {
        use calib_core::engine::{LogisticFeatures, LogisticSpec};
        let (spec, map): (_, fn([f64; 3]) -> PlattMap) = match self.on_logit {
            true => (
                LogisticSpec {
                    features: LogisticFeatures::LogitPowers,
                    clip: (LOGIT_CLIP, 1.0 - LOGIT_CLIP),
                    floor: LOGIT_CLIP,
                },
                |c| PlattMap { slope: c[1], intercept: c[0], on_logit: true },
            ),
            false => (
                LogisticSpec { features: LogisticFeatures::Score, clip: (0.0, 1.0), floor: 1e-30 },
                |c| PlattMap { slope: c[1], intercept: c[0], on_logit: false },
            ),
        };
        let soft_targets = self.soft_targets;
        Some(crate::binary::DeviceLogistic { spec, degree: 1, soft_targets, ridge: 0.0, map })
    }
}

impl PlattMapConfig {
    /// The fit with sample weights `v` when given: Platt's targets count the weights of the
    /// positives and negatives (the repeated rows' counts), the likelihood weighs each row.
    fn fit_with(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        v: Option<&[f64]>,
    ) -> Result<BinaryFitted<PlattMap>> {
        let weight = |i: usize| v.map_or(1.0, |v| v[i]);
        let n_pos: f64 = (0..outcomes.len()).filter(|&i| outcomes[i]).map(weight).sum();
        let n_neg = (0..outcomes.len()).map(weight).sum::<f64>() - n_pos;
        let (hi, lo) = if self.soft_targets {
            ((n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
        } else {
            (1.0, 0.0)
        };
        let targets = Targets::Outcomes { outcomes, positive: hi, negative: lo };
        let shape = PlattMap { slope: 1.0, intercept: 0.0, on_logit: self.on_logit };
        let logits = Logits(scores);
        let features =
            if self.on_logit { Features::Computed(&logits) } else { Features::Dense(scores) };
        let problem =
            LogisticProblem { weights: v, ..LogisticProblem::one_feature(features, targets) };
        let fit = problem.fit(vec![1.0, 0.0]);
        let map = PlattMap { slope: fit.weights[0], intercept: fit.weights[1], ..shape };
        let mut fitted = BinaryFitted {
            map,
            iterations: fit.iterations,
            converged: fit.converged,
            warnings: Vec::new(),
            training_nll: fit.nll,
        };
        if fit.separable {
            fitted.warnings.push("the scores separate the outcomes: the slope has no finite optimum without soft targets; the fit stopped early".into());
        }
        Ok(fitted)
    }
}

crate::binary::fit_by_maps!(PlattMapConfig, PlattMaps);
