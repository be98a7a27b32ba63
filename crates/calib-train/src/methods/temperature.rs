//! Temperature scaling (Guo et al. 2017, "On Calibration of Modern Neural Networks", §4.2).
//!
//! ```text
//! p = softmax(z / T),   T = exp(log_t) > 0
//! ```
//!
//! One parameter, fitted by minimising the mean NLL on a calibration split
//! (`docs/conventions.md`, "Calibrators"). Dividing every logit of a row by the same `T > 0` keeps
//! its order, so accuracy (argmax, ties to the lowest class) is unchanged by construction.

use std::collections::BTreeMap;

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{DType, Device, Tensor, TensorData};
use calib_core::input::Predictions;
use serde::{Deserialize, Serialize};

use super::separable::labels_separated;
use super::temperature_newton::{NewtonSettings, fit_newton};
use crate::api::Fit;
use crate::api::{Calibrator, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::Result;
use crate::fit::{CalibrationMap, FitConfig, Progress, minimise, require_logits};

/// A temperature-scaling calibrator.
///
/// # Parameters
/// - `log_temperature`: `[1]`, the natural log of `T` (so `T > 0` always).
///
/// # Example
/// ```
/// use burn::tensor::{DType, Device, Tensor};
/// use calib_train::{CalibrationMap, TemperatureScaling};
///
/// let device = Device::flex();
/// let t = TemperatureScaling::new(2.0, &device, DType::F64);
/// let out = t.forward(Tensor::<2>::from_floats([[4.0, 2.0]], &device));
/// assert_eq!(out.into_data().convert::<f64>().to_vec::<f64>().unwrap(), vec![2.0, 1.0]);
/// ```
#[derive(Module, Debug)]
pub struct TemperatureScaling {
    /// `log T`, shape `[1]`.
    pub log_temperature: Param<Tensor<1>>,
}

impl TemperatureScaling {
    /// The calibrator with temperature `temperature` on `device` (T = 1 is the identity).
    ///
    /// # Panics
    /// When `temperature` is not finite and positive.
    pub fn new(temperature: f64, device: &Device, dtype: DType) -> Self {
        assert!(temperature > 0.0 && temperature.is_finite(), "temperature {temperature}");
        let value = TensorData::new(vec![temperature.ln()], [1]);
        Self { log_temperature: Param::from_tensor(Tensor::from_data(value, (device, dtype))) }
    }

    /// The temperature `T` (one read-back).
    ///
    /// # Errors
    /// [`crate::FitError::Backend`] when the read-back fails.
    pub fn temperature(&self) -> Result<f64> {
        let p = self.parameters()?;
        Ok(p["log_temperature"].values[0].exp())
    }
}

impl CalibrationMap for TemperatureScaling {
    fn parameter_dtype(&self) -> DType {
        self.log_temperature.val().dtype()
    }

    fn forward_features(&self, logits: Tensor<2>) -> Tensor<2> {
        logits * self.log_temperature.val().neg().exp().reshape([1, 1])
    }
}

impl Calibrator for TemperatureScaling {
    const METHOD: Method = Method::Temperature;

    fn n_classes(&self) -> usize {
        0 // any K: temperature scaling does not depend on it
    }

    fn device(&self) -> Device {
        self.log_temperature.val().device()
    }

    fn dtype(&self) -> DType {
        self.log_temperature.val().dtype()
    }

    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        self.valid().forward(scores)
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        let t = SavedTensor::read(self.log_temperature.val().detach(), vec![1])?;
        Ok(BTreeMap::from([("log_temperature".to_string(), t)]))
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        _settings: &SavedSettings,
        _n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let dtype = calib_core::Precision::Auto.dtype(device);
        let p = super::param(parameters, "log_temperature")?;
        Ok(Self {
            log_temperature: Param::from_tensor(p.tensor("log_temperature", [1], device, dtype)?),
        })
    }
}

/// Which solver fits the temperature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TemperatureSolver {
    /// [`Self::Newton`] on CPU devices, [`Self::Optimizer`] on GPUs.
    #[default]
    Auto,
    /// Safeguarded Newton on `s = 1/T` over host rows in f64 on all cores: the NLL is convex
    /// in `s`, each iteration is one fused pass (no `[N, K]` temporaries), and iterations start
    /// on a strided subsample. The fast path.
    Newton,
    /// The [`FitConfig`]'s optimiser (L-BFGS by default) with burn autodiff on the device: the
    /// reference path, and the one for GPUs.
    Optimizer,
}

/// Settings of a temperature-scaling fit.
///
/// # Example
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use calib_core::input::Predictions;
/// use calib_train::{Fit, TemperatureScalingConfig};
///
/// let device = Device::flex();
/// let logits = Tensor::<2>::from_floats([[4.0, 0.0], [0.0, 3.0], [3.0, 0.0], [0.0, 2.0]], &device);
/// let labels = Tensor::<1, Int>::from_ints([0, 1, 1, 1], &device);
/// let fitted = TemperatureScalingConfig::new().fit(&Predictions::logits(logits, labels)?)?;
/// assert!(fitted.record.converged);
/// assert!(fitted.calibrator.temperature()? > 1.0); // over-confident input: T > 1
/// # Ok::<(), calib_train::FitError>(())
/// ```
#[derive(Config, Debug, PartialEq)]
pub struct TemperatureScalingConfig {
    /// Optimiser, stopping rule, precision (used by the optimiser path; the Newton path uses
    /// its tolerances and `max_iter`).
    #[config(default = "FitConfig::new()")]
    pub fit: FitConfig,
    /// Solver.
    #[config(default = "TemperatureSolver::Auto")]
    pub solver: TemperatureSolver,
}

impl Fit for TemperatureScalingConfig {
    type Calibrator = TemperatureScaling;

    /// The Newton solver weighs rows on the host; the optimiser path through autodiff.
    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.fit.validate()
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<TemperatureScaling>> {
        self.check()?;
        require_logits(preds, Method::Temperature.name())?;
        let device = preds.device().clone();
        let weighted = preds.weights().is_some();
        let host = self.fit.engine.uses_host(&device, self.fit.precision);
        // Weighted rows take the host Newton passes (the device kernels sum unit rows).
        let on_device = !host && !weighted && device_newton(preds, &self.fit);
        let newton = match self.solver {
            TemperatureSolver::Newton => true,
            TemperatureSolver::Optimizer => false,
            TemperatureSolver::Auto => {
                self.fit.optimizer.is_full_batch() && (host || on_device || weighted)
            }
        };
        let (calibrator, mut record) = if newton {
            let dtype = self.fit.dtype(&device);
            // f32 passes resolve the mean gradient to about 1e-7; 1e-6 is their default.
            let (tol_grad, _) = match on_device {
                true => (self.fit.tolerance_grad.unwrap_or(1e-6), 0.0),
                false => self.fit.tolerances(DType::F64),
            };
            let settings = NewtonSettings { tolerance_grad: tol_grad, max_iter: self.fit.max_iter };
            let (log_t, record) = fit_newton(preds, settings, on_device, progress)?;
            (TemperatureScaling::new(log_t.exp(), &device, dtype), record)
        } else {
            let (map, record) = minimise(
                |device, dtype| TemperatureScaling::new(1.0, device, dtype),
                preds,
                Method::Temperature.name(),
                &self.fit,
                progress,
            )?;
            (map.valid(), record)
        };
        if labels_separated(preds)? {
            record.converged = false;
            record.warnings.push(
                "every label has the strictly largest logit of its row: the NLL keeps falling as \
                 T -> 0 and has no minimum; the temperature returned is where the fit stopped"
                    .into(),
            );
        }
        Ok(Fitted { calibrator, record })
    }
}

#[cfg(feature = "wgpu")]
impl TemperatureScalingConfig {
    /// Fits on logits already held on a GPU device ([`calib_core::engine::TemperedRows`],
    /// several tensors when they exceed one device buffer): the Newton solver with one kernel
    /// pass per iteration. Stops at `|dL/d log T| <= 1e-6` unless `fit.tolerance_grad` says
    /// otherwise.
    ///
    /// # Errors
    /// [`crate::FitError`] when a pass fails or a value is not finite.
    pub fn fit_on_device(
        &self,
        rows: &calib_core::engine::TemperedRows,
    ) -> Result<Fitted<TemperatureScaling>> {
        self.check()?;
        let settings = NewtonSettings {
            tolerance_grad: self.fit.tolerance_grad.unwrap_or(1e-6),
            max_iter: self.fit.max_iter,
        };
        let (log_t, record) =
            super::temperature_newton::fit_newton_on_device(rows, settings, &mut |_| {})?;
        let calibrator = TemperatureScaling::new(log_t.exp(), rows.device(), DType::F32);
        Ok(Fitted { calibrator, record })
    }
}

/// Whether the Newton passes run on the device kernels: a GPU device, the kernel (or auto)
/// engine, f32, input the kernels take.
fn device_newton(preds: &Predictions, fit: &FitConfig) -> bool {
    #[cfg(feature = "wgpu")]
    {
        use calib_core::{Engine, Precision};
        matches!(fit.engine, Engine::Auto | Engine::Kernels)
            && fit.precision != Precision::F64
            && calib_core::engine::TemperedRows::supports(preds)
    }
    #[cfg(not(feature = "wgpu"))]
    {
        let _ = (preds, fit);
        false
    }
}
