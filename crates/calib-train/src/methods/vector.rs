//! Vector scaling (Guo et al. 2017, §4.2): a per-class scale and shift of the logits.
//!
//! ```text
//! p = softmax(w ⊙ z + b),   w, b in R^K   (w = 1, b = 0 at the start: the identity)
//! ```
//!
//! Fitted by minimising the mean NLL (`docs/conventions.md`, "Calibrators"). Unlike temperature
//! scaling it can change the argmax.

use std::collections::BTreeMap;

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{DType, Device, Tensor};
use calib_core::input::Predictions;

use crate::api::Fit;
use crate::api::{Calibrator, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::Result;
use crate::fit::Regularisation;
use crate::fit::{
    AffineShape, CalibrationMap, FitConfig, HostForm, HostObjectiveMap, Progress,
    minimise_affine_on, prepare,
};

/// A vector-scaling calibrator.
///
/// # Parameters
/// - `weight`: `[K]`, the per-class scale `w`.
/// - `bias`: `[K]`, the per-class shift `b`.
#[derive(Module, Debug)]
pub struct VectorScaling {
    /// `w`, shape `[K]`.
    pub weight: Param<Tensor<1>>,
    /// `b`, shape `[K]`.
    pub bias: Param<Tensor<1>>,
    /// K.
    pub n_classes: usize,
}

impl VectorScaling {
    /// The identity map (`w = 1`, `b = 0`) for K classes.
    pub fn identity(n_classes: usize, device: &Device, dtype: DType) -> Self {
        Self {
            weight: Param::from_tensor(Tensor::ones([n_classes], (device, dtype))),
            bias: Param::from_tensor(Tensor::zeros([n_classes], (device, dtype))),
            n_classes,
        }
    }
}

impl CalibrationMap for VectorScaling {
    fn parameter_dtype(&self) -> DType {
        self.weight.val().dtype()
    }

    fn forward_features(&self, logits: Tensor<2>) -> Tensor<2> {
        let k = self.n_classes;
        logits * self.weight.val().reshape([1, k]) + self.bias.val().reshape([1, k])
    }
}

impl HostObjectiveMap for VectorScaling {
    fn host_form(&self) -> HostForm {
        HostForm { shape: AffineShape::Diagonal, penalty: Regularisation::None }
    }
}

impl Calibrator for VectorScaling {
    const METHOD: Method = Method::Vector;

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
        Ok(BTreeMap::from([
            ("weight".into(), SavedTensor::read(self.weight.val().detach(), vec![k])?),
            ("bias".into(), SavedTensor::read(self.bias.val().detach(), vec![k])?),
        ]))
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        _settings: &SavedSettings,
        n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let dtype = calib_core::Precision::Auto.dtype(device);
        let k = n_classes;
        let w = super::param(parameters, "weight")?.tensor("weight", [k], device, dtype)?;
        let b = super::param(parameters, "bias")?.tensor("bias", [k], device, dtype)?;
        Ok(Self { weight: Param::from_tensor(w), bias: Param::from_tensor(b), n_classes: k })
    }
}

/// Settings of a vector-scaling fit.
#[derive(Config, Debug, PartialEq)]
pub struct VectorScalingConfig {
    /// Optimiser, stopping rule, precision.
    #[config(default = "FitConfig::new()")]
    pub fit: FitConfig,
}

impl Fit for VectorScalingConfig {
    type Calibrator = VectorScaling;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.fit.validate()
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<VectorScaling>> {
        self.check()?;
        let k = preds.n_classes();
        let init = |device: &_, dtype| VectorScaling::identity(k, device, dtype);
        let (map, data) = prepare(init, preds, Method::Vector.name(), &self.fit)?;
        let (map, record) = minimise_affine_on(map, &data, &self.fit, progress)?;
        Ok(Fitted { calibrator: map.valid(), record })
    }
}
