//! SMS, structured matrix scaling (Berta, Holzmüller, Jordan & Bach 2025, arXiv 2511.03685;
//! probmetrics' `SMSCalibrator`): matrix scaling on the log-probabilities of a
//! temperature-and-mixture fit, with a ridge that shrinks it back to that fit.
//!
//! ```text
//! x = ln((1 - e) softmax(z / T) + e / K),   e = 1 / (N + 1)       (TemperatureMixture)
//! p = softmax((I + D) x + b)
//! minimise  mean NLL + l_b |b|^2 + l_d sum_k D_kk^2 + l_o sum_{i != j} D_ij^2
//!           l_b = l_d = K^rho / N^tau,  l_o = (K (K - 1))^rho / N^tau   (RidgeStrengths)
//! ```
//!
//! Started at `D = 0, b = 0` (the temperature-and-mixture fit itself). The penalty makes the
//! problem strictly convex, so it has one minimiser for any `N`, fewer rows than classes
//! included. On CPU it is solved by the host Newton-CG (K <= 256) or L-BFGS, on a GPU by the
//! device passes, as matrix scaling is. CalArena (Berta et al. 2026) ranks it first among
//! multiclass post-hoc calibrators.

use std::collections::BTreeMap;

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{DType, Device, Tensor};
use calib_core::input::Predictions;

use super::affine::AffineMap;
use super::ridge_strengths::RidgeStrengths;
use super::structured_fit::fit_structured;
use super::temperature_mixture::TemperatureMixture;
use crate::api::{Calibrator, Fit, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::Result;
use crate::fit::{CalibrationMap, FitConfig, HostForm, HostObjectiveMap, Progress, Regularisation};

/// A structured-matrix-scaling calibrator.
///
/// # Parameters
/// - `affine.weight`: `[K, K]` (`I + D`); `affine.bias`: `[K]`;
/// - `temperature`, `mixture`: `[1]` each, the first step.
#[derive(Module, Debug)]
pub struct StructuredMatrixScaling {
    /// `I + D` and `b`, with the ridge they were fitted under.
    pub affine: AffineMap,
    /// The temperature-and-mixture step before the map.
    #[module(skip)]
    pub mixture: TemperatureMixture,
}

impl StructuredMatrixScaling {
    /// The temperature-and-mixture step alone (`D = 0`, `b = 0`).
    pub fn at_start(
        mixture: TemperatureMixture,
        k: usize,
        reg: Regularisation,
        device: &Device,
        dtype: DType,
    ) -> Self {
        Self { affine: AffineMap::identity(k, reg, device, dtype), mixture }
    }
}

impl CalibrationMap for StructuredMatrixScaling {
    fn parameter_dtype(&self) -> DType {
        self.affine.weight.val().dtype()
    }

    fn prepare(&self, logits: Tensor<2>) -> Tensor<2> {
        self.mixture.features(logits)
    }

    fn forward_features(&self, features: Tensor<2>) -> Tensor<2> {
        self.affine.forward(features)
    }

    fn penalty(&self) -> Option<Tensor<1>> {
        self.affine.penalty()
    }
}

impl HostObjectiveMap for StructuredMatrixScaling {
    fn host_form(&self) -> HostForm {
        self.affine.host_form()
    }
}

impl Calibrator for StructuredMatrixScaling {
    const METHOD: Method = Method::Sms;

    fn n_classes(&self) -> usize {
        self.affine.n_classes
    }

    fn device(&self) -> Device {
        self.affine.weight.val().device()
    }

    fn dtype(&self) -> DType {
        self.affine.weight.val().dtype()
    }

    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        self.valid().forward(scores)
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        let mut out = self.affine.parameters()?;
        self.mixture.save(&mut out);
        Ok(out)
    }

    fn hyperparameters(&self) -> BTreeMap<String, f64> {
        self.affine.hyperparameters()
    }

    fn settings(&self) -> SavedSettings {
        self.affine.settings()
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        settings: &SavedSettings,
        n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let affine = AffineMap::from_parameters(parameters, settings, n_classes, device)?;
        Ok(Self { affine, mixture: TemperatureMixture::load(parameters)? })
    }
}

/// Settings of a structured-matrix-scaling fit.
#[derive(Config, Debug, PartialEq)]
pub struct StructuredMatrixScalingConfig {
    /// Optimiser, stopping rule, precision (of both steps).
    #[config(default = "FitConfig::new()")]
    pub fit: FitConfig,
    /// The ridge's multipliers and exponents.
    #[config(default = "RidgeStrengths::new()")]
    pub strengths: RidgeStrengths,
}

impl Fit for StructuredMatrixScalingConfig {
    type Calibrator = StructuredMatrixScaling;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.fit.validate()?;
        self.strengths.check()
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<StructuredMatrixScaling>> {
        self.check()?;
        let method = (Method::Sms, true);
        let start = StructuredMatrixScaling::at_start;
        let (map, record) =
            fit_structured(&self.fit, &self.strengths, preds, method, start, progress)?;
        Ok(Fitted { calibrator: map.valid(), record })
    }
}
