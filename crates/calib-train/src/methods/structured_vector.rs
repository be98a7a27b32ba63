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
use burn::module::Module;
use burn::tensor::{DType, Device, Tensor};
use calib_core::input::Predictions;

use super::ridge_strengths::RidgeStrengths;
use super::structured_fit::fit_structured;
use super::temperature_mixture::TemperatureMixture;
use super::vector::VectorScaling;
use crate::api::{Calibrator, Fit, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::Result;
use crate::fit::{
    AffineShape, CalibrationMap, FitConfig, HostForm, HostObjectiveMap, Progress, Regularisation,
};

/// A structured-vector-scaling calibrator.
///
/// # Parameters
/// - `vector.weight`: `[K]` (`1 + d`); `vector.bias`: `[K]`;
/// - `temperature`, `mixture`: `[1]` each, the first step.
#[derive(Module, Debug)]
pub struct StructuredVectorScaling {
    /// `w = 1 + d` and `b`: vector scaling of the mixture step's log-probabilities.
    pub vector: VectorScaling,
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
        Self { vector: VectorScaling::identity(k, device, dtype), regularisation: reg, mixture }
    }
}

impl CalibrationMap for StructuredVectorScaling {
    fn parameter_dtype(&self) -> DType {
        self.vector.parameter_dtype()
    }

    fn prepare(&self, logits: Tensor<2>) -> Tensor<2> {
        self.mixture.features(logits)
    }

    fn forward_features(&self, features: Tensor<2>) -> Tensor<2> {
        self.vector.forward_features(features)
    }

    fn penalty(&self) -> Option<Tensor<1>> {
        let Regularisation::Ridge { intercept, diagonal, .. } = self.regularisation else {
            return None;
        };
        let (w, b) = (self.vector.weight.val(), self.vector.bias.val());
        let moved = w.sub_scalar(1.0).powi_scalar(2).sum().mul_scalar(diagonal);
        Some(moved + b.powi_scalar(2).sum().mul_scalar(intercept))
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
        self.vector.n_classes
    }

    fn device(&self) -> Device {
        self.vector.device()
    }

    fn dtype(&self) -> DType {
        self.vector.dtype()
    }

    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        self.valid().forward(scores)
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        let mut out = self.vector.parameters()?;
        self.mixture.save(&mut out);
        Ok(out)
    }

    fn hyperparameters(&self) -> BTreeMap<String, f64> {
        self.regularisation.strengths()
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
        Ok(Self {
            vector: VectorScaling::from_parameters(parameters, settings, n_classes, device)?,
            regularisation: Regularisation::from_saved(settings.regularisation)?,
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

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.fit.validate()?;
        self.strengths.check()
    }

    fn fit_rows(
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
