//! Platt scaling (Platt 1999, "Probabilistic outputs for support vector machines"), for binary
//! scores.
//!
//! ```text
//! p = sigmoid(a x + b),   x = logit(s) = ln s - ln(1 - s)   (or x = s on raw scores)
//! soft targets (optional, Platt §2.2): t+ = (N+ + 1) / (N+ + 2),  t- = 1 / (N- + 2)
//! ```
//!
//! `s` is the positive-class score of `docs/conventions.md`'s binary convention. On the logit scale
//! `a = 1, b = 0` is the identity; scores of exactly 0 or 1 are clipped to `[eps, 1 - eps]`
//! (eps = 1e-12 in f64, 1e-7 in f32) before the logit. Soft targets keep `a` finite on
//! separable data, which is why Platt introduced them; they are on by default, as in Platt's
//! paper and scikit-learn's sigmoid calibration.

use std::collections::BTreeMap;

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::activation::sigmoid;
use burn::tensor::{DType, Device, Tensor, TensorData};
use calib_core::input::{Predictions, ScoreKind};

use crate::api::Fit;
use crate::api::{Calibrator, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::{FitError, Result};
use crate::fit::{CalibrationMap, FitConfig, FitData, Optimizer, Progress, minimise_on};

/// A Platt-scaling calibrator.
///
/// # Parameters
/// - `slope`: `[1]`, `a`; `intercept`: `[1]`, `b`.
#[derive(Module, Debug)]
pub struct PlattScaling {
    /// `a`, shape `[1]`.
    pub slope: Param<Tensor<1>>,
    /// `b`, shape `[1]`.
    pub intercept: Param<Tensor<1>>,
    /// True: `x = logit(s)`; false: `x = s`.
    pub on_logit: bool,
}

impl PlattScaling {
    /// `sigmoid(a x + b)` with the given `a`, `b`.
    pub fn new(slope: f64, intercept: f64, on_logit: bool, device: &Device, dtype: DType) -> Self {
        let t = |v: f64| Tensor::from_data(TensorData::new(vec![v], [1]), (device, dtype));
        Self {
            slope: Param::from_tensor(t(slope)),
            intercept: Param::from_tensor(t(intercept)),
            on_logit,
        }
    }

    /// `x` from scores `[N, 1]`.
    fn features(&self, scores: Tensor<2>) -> Tensor<2> {
        if !self.on_logit {
            return scores;
        }
        let eps = if scores.dtype() == DType::F64 { super::platt_map::LOGIT_CLIP } else { 1e-7 };
        let s = scores.clamp(eps, 1.0 - eps);
        s.clone().log() - s.neg().add_scalar(1.0).log()
    }

    /// `a x + b`, `[N, 1]`.
    fn linear(&self, x: Tensor<2>) -> Tensor<2> {
        x * self.slope.val().reshape([1, 1]) + self.intercept.val().reshape([1, 1])
    }
}

impl CalibrationMap for PlattScaling {
    fn parameter_dtype(&self) -> DType {
        self.slope.val().dtype()
    }

    fn prepare(&self, scores: Tensor<2>) -> Tensor<2> {
        self.features(scores)
    }

    /// Two-class logits `[0, a x + b]`, so the shared NLL is the binary cross-entropy.
    fn forward_features(&self, x: Tensor<2>) -> Tensor<2> {
        let z = self.linear(x);
        Tensor::cat(vec![z.zeros_like(), z], 1)
    }
}

impl Calibrator for PlattScaling {
    const METHOD: Method = Method::Platt;

    fn n_classes(&self) -> usize {
        2
    }

    fn device(&self) -> Device {
        self.slope.val().device()
    }

    fn dtype(&self) -> DType {
        self.slope.val().dtype()
    }

    fn output_kind(&self) -> ScoreKind {
        ScoreKind::Binary
    }

    /// Positive-class probabilities `[N, 1]` from scores `[N, 1]`.
    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        let m = self.valid();
        sigmoid(m.linear(m.features(scores)))
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        Ok(BTreeMap::from([
            ("slope".into(), SavedTensor::read(self.slope.val().detach(), vec![1])?),
            ("intercept".into(), SavedTensor::read(self.intercept.val().detach(), vec![1])?),
        ]))
    }

    fn settings(&self) -> SavedSettings {
        SavedSettings { on_logit: Some(self.on_logit), ..SavedSettings::default() }
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        settings: &SavedSettings,
        _n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let dtype = calib_core::Precision::Auto.dtype(device);
        let a = super::param(parameters, "slope")?.tensor("slope", [1], device, dtype)?;
        let b = super::param(parameters, "intercept")?.tensor("intercept", [1], device, dtype)?;
        let on_logit = settings.on_logit.unwrap_or(true);
        Ok(Self { slope: Param::from_tensor(a), intercept: Param::from_tensor(b), on_logit })
    }
}

/// Settings of a Platt-scaling fit.
#[derive(Config, Debug, PartialEq)]
pub struct PlattScalingConfig {
    /// Optimiser, stopping rule, precision.
    #[config(default = "FitConfig::new()")]
    pub fit: FitConfig,
    /// Platt's soft targets.
    #[config(default = true)]
    pub soft_targets: bool,
    /// Fit on `logit(s)` (true) or on the raw score `s`.
    #[config(default = true)]
    pub on_logit: bool,
}

impl Fit for PlattScalingConfig {
    type Calibrator = PlattScaling;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.fit.validate()
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<PlattScaling>> {
        if preds.kind() != ScoreKind::Binary {
            return Err(FitError::UnsuitableInput {
                method: Method::Platt.name().into(),
                reason: format!(
                    "it takes binary positive-class scores, got {:?} (use temperature, vector, \
                     matrix or Dirichlet scaling for multiclass logits)",
                    preds.kind()
                ),
            });
        }
        self.check()?;
        let device = preds.device().clone();
        let host = self.fit.engine.uses_host(&device, self.fit.precision)
            && matches!(self.fit.optimizer, Optimizer::Auto);
        // Sample weights: Platt's targets and the one-outcome test count weights.
        let weight = |i: usize| preds.weights().map_or(1.0, |w| w.values()[i]);
        let (_, host_labels) = preds.host_rows()?;
        let w_pos: f64 = (0..host_labels.len()).filter(|&i| host_labels[i] == 1).map(weight).sum();
        let w_all = preds.total_weight();
        if host && w_pos > 0.0 && w_pos < w_all {
            // One outcome only: the binary maps refuse it; the tensor fit below handles it.
            return self.fit_host(preds);
        }
        let dtype = self.fit.dtype(&device);
        let ad = device.autodiff();
        let init = PlattScaling::new(1.0, 0.0, self.on_logit, &ad, dtype);
        let n = preds.n_samples();
        let plain = ad.clone().without_autodiff();
        let (scores, labels) = preds.rows_on(0, n, dtype, &plain);
        let targets = self.soft_targets.then(|| {
            let (hi, lo) = ((w_pos + 1.0) / (w_pos + 2.0), 1.0 / (w_all - w_pos + 2.0));
            let t: Vec<f64> = host_labels
                .iter()
                .flat_map(|&y| {
                    let t = if y == 1 { hi } else { lo };
                    [1.0 - t, t]
                })
                .collect();
            Tensor::<2>::from_data(TensorData::new(t, [n, 2]), (&plain, dtype))
        });
        let data = FitData {
            features: init.prepare(scores).without_autodiff(),
            labels: labels.reshape([n, 1]),
            targets,
            n_samples: n,
            n_classes: 2,
            host: None,
            weights: None,
            row_weights: None,
        }
        .with_weights(preds.weights().map(|w| w.values()));
        let (map, mut record) = minimise_on(init, &data, &self.fit, progress)?;
        if !self.soft_targets && (w_pos == 0.0 || w_pos == w_all) {
            record.warnings.push(format!(
                "all labels are {}: the slope and intercept have no finite optimum without soft \
                 targets",
                if w_pos == 0.0 { 0 } else { 1 }
            ));
            record.converged = false;
        }
        Ok(Fitted { calibrator: map.valid(), record })
    }
}

impl PlattScalingConfig {
    /// The same model fitted by the host Newton solver of the binary maps (CPU devices, the
    /// default optimiser): exact second order on two parameters, no autodiff graph.
    fn fit_host(&self, preds: &Predictions) -> Result<Fitted<PlattScaling>> {
        let config = super::PlattMapConfig::new()
            .with_soft_targets(self.soft_targets)
            .with_on_logit(self.on_logit);
        let fitted = crate::binary::fit_maps(&config, crate::binary::Reduction::OneVsRest, preds)?;
        let (a, b) = fitted.calibrator.maps()[0].coefficients();
        let device = preds.device();
        let calibrator = PlattScaling::new(a, b, self.on_logit, device, DType::F64);
        Ok(Fitted { calibrator, record: fitted.record })
    }
}
