//! The [`Calibrator`] trait every method implements, and [`Fitted`]: a calibrator with the
//! record of its fit.

use std::collections::BTreeMap;

use burn::tensor::{DType, Device, Tensor, TensorData};
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use serde::{Deserialize, Serialize};

use crate::error::{FitError, Result};
use crate::fit::FitRecord;
use crate::fit::params::read_all;

/// The calibration methods, as named on the command line and in saved files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Method {
    /// [`crate::TemperatureScaling`].
    Temperature,
    /// [`crate::VectorScaling`].
    Vector,
    /// [`crate::MatrixScaling`].
    Matrix,
    /// [`crate::DirichletCalibration`].
    Dirichlet,
    /// [`crate::PlattScaling`] (binary scores).
    Platt,
    /// [`crate::IsotonicRegressionConfig`].
    Isotonic,
    /// [`crate::HistogramBinningConfig`].
    Histogram,
    /// [`crate::BetaCalibrationConfig`].
    Beta,
    /// Top-label calibration (Gupta & Ramdas 2021) over a binary base method.
    TopLabel,
    /// [`crate::ScalingBinningConfig`].
    ScalingBinning,
    /// [`crate::VennAbersConfig`].
    VennAbers,
    /// [`crate::LceCalibrationConfig`].
    Lce,
    /// [`crate::SplineCalibrationConfig`].
    Spline,
    /// [`crate::EceTemperatureConfig`]: temperature scaling fitted to a binned metric (saved
    /// as `temperature`).
    EceTemperature,
}

impl Method {
    /// Every method, in the order `calib compare` lists them.
    pub const ALL: [Method; 14] = [
        Self::Temperature,
        Self::Vector,
        Self::Matrix,
        Self::Dirichlet,
        Self::Platt,
        Self::Isotonic,
        Self::Histogram,
        Self::Beta,
        Self::ScalingBinning,
        Self::VennAbers,
        Self::Lce,
        Self::Spline,
        Self::TopLabel,
        Self::EceTemperature,
    ];

    /// The name used on the command line and in saved files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Temperature => "temperature",
            Self::Vector => "vector",
            Self::Matrix => "matrix",
            Self::Dirichlet => "dirichlet",
            Self::Platt => "platt",
            Self::Isotonic => "isotonic",
            Self::Histogram => "histogram",
            Self::Beta => "beta",
            Self::TopLabel => "top-label",
            Self::ScalingBinning => "scaling-binning",
            Self::VennAbers => "venn-abers",
            Self::Lce => "lce",
            Self::Spline => "spline",
            Self::EceTemperature => "ece-temperature",
        }
    }

    /// True for the methods that calibrate binary scores (and K-class input one-vs-rest or
    /// top-label).
    pub fn is_binary_map(self) -> bool {
        matches!(
            self,
            Self::Platt
                | Self::Isotonic
                | Self::Histogram
                | Self::Beta
                | Self::ScalingBinning
                | Self::VennAbers
                | Self::Lce
                | Self::Spline
                | Self::TopLabel
        )
    }

    /// The number saved for a top-label base (hyperparameters are numbers). Fixed for each
    /// method: never renumber, saved files depend on it.
    pub(crate) fn code(self) -> f64 {
        match self {
            Self::Temperature => 0.0,
            Self::Vector => 1.0,
            Self::Matrix => 2.0,
            Self::Dirichlet => 3.0,
            Self::Platt => 4.0,
            Self::Isotonic => 5.0,
            Self::Histogram => 6.0,
            Self::Beta => 7.0,
            Self::TopLabel => 8.0,
            Self::ScalingBinning => 9.0,
            Self::VennAbers => 10.0,
            Self::Lce => 11.0,
            Self::Spline => 12.0,
            Self::EceTemperature => 13.0,
        }
    }

    /// The method of [`Method::code`].
    pub(crate) fn from_code(code: f64) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.code() == code)
    }

    /// Parses a name (as [`Method::name`] writes it).
    ///
    /// # Errors
    /// [`FitError::InvalidConfig`] naming the known methods.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name).ok_or_else(|| {
            FitError::InvalidConfig(format!(
                "unknown method `{name}`; expected one of {}",
                Self::ALL.map(Self::name).join(", ")
            ))
        })
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A parameter as saved: shape and row-major values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedTensor {
    /// Shape (`[1]`, `[K]`, `[K, K]`).
    pub shape: Vec<usize>,
    /// Row-major values.
    pub values: Vec<f64>,
}

impl SavedTensor {
    /// Reads a parameter tensor back from its device.
    pub(crate) fn read(tensor: Tensor<1>, shape: Vec<usize>) -> Result<Self> {
        let values = read_all(vec![tensor])?.remove(0);
        Ok(Self { shape, values })
    }

    /// Uploads as a tensor of rank `D` on `device` in `dtype`.
    pub(crate) fn tensor<const D: usize>(
        &self,
        name: &str,
        expected: [usize; D],
        device: &Device,
        dtype: DType,
    ) -> Result<Tensor<D>> {
        if self.shape != expected || self.values.len() != expected.iter().product::<usize>() {
            return Err(FitError::Format(format!(
                "parameter `{name}` has shape {:?} with {} values, expected {expected:?}",
                self.shape,
                self.values.len()
            )));
        }
        if let Some(v) = self.values.iter().find(|v| !v.is_finite()) {
            return Err(FitError::Format(format!("parameter `{name}` holds {v}")));
        }
        Ok(Tensor::from_data(TensorData::new(self.values.clone(), expected), (device, dtype)))
    }
}

/// What every calibrator can do once fitted (or loaded).
///
/// Implemented by [`crate::TemperatureScaling`], [`crate::VectorScaling`],
/// [`crate::MatrixScaling`], [`crate::DirichletCalibration`] and [`crate::PlattScaling`];
/// [`crate::AnyCalibrator`] holds any of them.
pub trait Calibrator: Sized {
    /// The method.
    const METHOD: Method;

    /// The method of this calibrator ([`Calibrator::METHOD`], or [`Method::TopLabel`] for a
    /// binary method in its top-label form).
    fn method(&self) -> Method {
        Self::METHOD
    }

    /// K the calibrator applies to (2 for binary; 0 when any K works, as for temperature
    /// scaling).
    fn n_classes(&self) -> usize;

    /// The device the calibrator's parameters live on.
    fn device(&self) -> Device;

    /// The float type of its parameters.
    fn dtype(&self) -> DType;

    /// Calibrated scores `[N, C]` from scores `[N, C]` on the calibrator's device, outside
    /// autodiff: logits for the multiclass methods (`C = K`), positive-class probabilities for
    /// Platt (`C = 1`). The tensor form of [`Calibrator::calibrate`], one chunk of rows.
    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2>;

    /// What the calibrated scores are ([`ScoreKind::Logits`] or [`ScoreKind::Binary`]).
    fn output_kind(&self) -> ScoreKind {
        ScoreKind::Logits
    }

    /// Named parameters, read back to the host.
    ///
    /// # Errors
    /// [`FitError::Backend`] when the read-back fails.
    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>>;

    /// Hyper-parameters that shape the map (regularisation strengths, ...), for the record.
    fn hyperparameters(&self) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }

    /// Rebuilds the calibrator from saved parameters on `device`.
    ///
    /// # Errors
    /// [`FitError::Format`] when a parameter is missing or has the wrong shape.
    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        hyperparameters: &BTreeMap<String, f64>,
        n_classes: usize,
        device: &Device,
    ) -> Result<Self>;

    /// Applies the calibrator to `preds`: the one way to calibrate [`Predictions`]. Runs in
    /// row chunks on the calibrator's device; the calibrated scores come back as host
    /// [`Predictions`] on `preds`' device (logits for multiclass methods, probabilities for
    /// Platt), labels unchanged.
    ///
    /// # Errors
    /// [`FitError::ClassMismatch`] when K differs; [`FitError::UnsuitableInput`] for the
    /// wrong kind of input.
    fn calibrate(&self, preds: &Predictions) -> Result<Predictions> {
        crate::apply::calibrate(self, preds, crate::apply::DEFAULT_CHUNK_ROWS)
    }
}

/// A fitted calibrator with the record of its fit.
#[derive(Debug, Clone)]
pub struct Fitted<C> {
    /// The calibrator.
    pub calibrator: C,
    /// How the fit went.
    pub record: FitRecord,
}

impl<C: Calibrator> Fitted<C> {
    /// The saved form (JSON-ready), with the fit record.
    ///
    /// # Errors
    /// [`FitError::Backend`] when parameters cannot be read back.
    pub fn to_saved(&self) -> Result<crate::SavedCalibrator> {
        let saved = crate::SavedCalibrator::from_calibrator(&self.calibrator)?;
        Ok(saved.with_record(self.record.clone()))
    }
}

impl Fitted<crate::AnyCalibrator> {
    /// The saved form (JSON-ready), with the fit record.
    ///
    /// # Errors
    /// [`FitError::Backend`] when parameters cannot be read back.
    pub fn to_saved(&self) -> Result<crate::SavedCalibrator> {
        Ok(self.calibrator.to_saved()?.with_record(self.record.clone()))
    }
}

/// Calibrated scores as [`Predictions`] on `device` (host storage).
pub(crate) fn host_predictions(
    values: Vec<f64>,
    n_columns: usize,
    labels: &[i64],
    kind: ScoreKind,
    device: &Device,
) -> Result<Predictions> {
    Ok(Predictions::from_host(&values, n_columns, labels, InputConfig::new(kind), device)?)
}
