//! SVS, structured vector scaling (Berta et al. 2025, arXiv 2511.03685; probmetrics'
//! `SVSCalibrator`): vector scaling on the log-probabilities of a temperature-and-mixture
//! fit, with a ridge that shrinks it back to that fit.
//!
//! ```text
//! x = ln((1 - e) softmax(z / T) + e / K),   e = 1 / (N + 1)       (TemperatureMixture)
//! p = softmax((1 + d) ⊙ x + b)
//! minimise  mean NLL + l_b |b|^2 + l_d |d|^2,   l_b = l_d = K^rho / N^tau   (RidgeStrengths)
//! ```
//!
//! Started at `d = 0, b = 0`. The parameters kept are `w = 1 + d` and `b`. Host L-BFGS on
//! the fused objective on CPU, the device passes on a GPU.

use std::collections::BTreeMap;

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{DType, Device, Tensor};
use calib_core::input::Predictions;

use super::ridge_strengths::RidgeStrengths;
use super::structured_fit::fit_structured;
use super::temperature_mixture::TemperatureMixture;
use crate::api::{Calibrator, Fit, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::{FitError, Result};
use crate::fit::{
    AffineShape, CalibrationMap, FitConfig, HostForm, HostObjectiveMap, Progress, Regularisation,
};

/// A structured-vector-scaling calibrator.
///
/// # Parameters
/// - `weight`: `[K]` (`1 + d`); `bias`: `[K]`;
/// - `temperature`, `mixture`: `[1]` each, the first step.
#[derive(Module, Debug)]
pub struct StructuredVectorScaling {
    /// `w = 1 + d`, shape `[K]`.
    pub weight: Param<Tensor<1>>,
    /// `b`, shape `[K]`.
    pub bias: Param<Tensor<1>>,
    /// K.
    pub n_classes: usize,
    /// The ridge it is fitted under.
    #[module(skip)]
    pub regularisation: Regularisation,
    /// The temperature-and-mixture step before the map.
    #[module(skip)]
    pub mixture: TemperatureMixture,
}

impl StructuredVectorScaling {
    /// The temperature-and-mixture step alone (`w = 1`, `b = 0`).
    pub fn at_start(
        mixture: TemperatureMixture,
        k: usize,
        reg: Regularisation,
        device: &Device,
        dtype: DType,
    ) -> Self {
        Self {
            weight: Param::from_tensor(Tensor::ones([k], (device, dtype))),
            bias: Param::from_tensor(Tensor::zeros([k], (device, dtype))),
            n_classes: k,
            regularisation: reg,
            mixture,
        }
    }
}

impl CalibrationMap for StructuredVectorScaling {
    fn parameter_dtype(&self) -> DType {
        self.weight.val().dtype()
    }

    fn prepare(&self, logits: Tensor<2>) -> Tensor<2> {
        self.mixture.features(logits)
    }

    fn forward_features(&self, features: Tensor<2>) -> Tensor<2> {
        let k = self.n_classes;
        features * self.weight.val().reshape([1, k]) + self.bias.val().reshape([1, k])
    }

    fn penalty(&self) -> Option<Tensor<1>> {
        let Regularisation::Ridge { intercept, diagonal, .. } = self.regularisation else {
            return None;
        };
        let moved = self.weight.val().sub_scalar(1.0).powi_scalar(2).sum().mul_scalar(diagonal);
        Some(moved + self.bias.val().powi_scalar(2).sum().mul_scalar(intercept))
    }
}

impl HostObjectiveMap for StructuredVectorScaling {
    fn host_form(&self) -> HostForm {
        HostForm { shape: AffineShape::Diagonal, penalty: self.regularisation }
    }
}

impl Calibrator for StructuredVectorScaling {
    const METHOD: Method = Method::Svs;

    fn n_classes(&self) -> usize {
        self.n_classes
    }

    fn device(&self) -> Device {
        self.weight.val().device()
    }

    fn dtype(&self) -> DType {
        self.weight.val().dtype()
    }

    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        self.valid().forward(scores)
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        let k = self.n_classes;
        let mut out = BTreeMap::from([
            ("weight".into(), SavedTensor::read(self.weight.val().detach(), vec![k])?),
            ("bias".into(), SavedTensor::read(self.bias.val().detach(), vec![k])?),
        ]);
        self.mixture.save(&mut out);
        Ok(out)
    }

    fn hyperparameters(&self) -> BTreeMap<String, f64> {
        self.regularisation.strengths().into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    fn settings(&self) -> SavedSettings {
        SavedSettings { regularisation: Some(self.regularisation), ..SavedSettings::default() }
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        settings: &SavedSettings,
        n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let dtype = calib_core::Precision::Auto.dtype(device);
        let k = n_classes;
        let w = super::param(parameters, "weight")?.tensor("weight", [k], device, dtype)?;
        let b = super::param(parameters, "bias")?.tensor("bias", [k], device, dtype)?;
        let regularisation = settings.regularisation.unwrap_or_default();
        regularisation
            .validate()
            .map_err(|_| FitError::Format(format!("invalid regularisation {regularisation:?}")))?;
        Ok(Self {
            weight: Param::from_tensor(w),
            bias: Param::from_tensor(b),
            n_classes: k,
            regularisation,
            mixture: TemperatureMixture::load(parameters)?,
        })
    }
}

/// Settings of a structured-vector-scaling fit.
#[derive(Config, Debug, PartialEq)]
pub struct StructuredVectorScalingConfig {
    /// Optimiser, stopping rule, precision (of both steps).
    #[config(default = "FitConfig::new()")]
    pub fit: FitConfig,
    /// The ridge's multipliers and exponents (`off_diagonal` is unused).
    #[config(default = "RidgeStrengths::new()")]
    pub strengths: RidgeStrengths,
}

impl Fit for StructuredVectorScalingConfig {
    type Calibrator = StructuredVectorScaling;

    fn check(&self) -> Result<()> {
        self.fit.validate()?;
        self.strengths.check()
    }

    fn fit_with_progress(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<StructuredVectorScaling>> {
        self.check()?;
        let method = (Method::Svs, false);
        let start = StructuredVectorScaling::at_start;
        let (map, record) =
            fit_structured(&self.fit, &self.strengths, preds, method, start, progress)?;
        Ok(Fitted { calibrator: map.valid(), record })
    }
}
