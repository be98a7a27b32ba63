//! [`SavedCalibrator`]: the JSON form of a fitted calibrator, written atomically.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::calibrator::{Calibrator, Fitted};
use super::method::Method;
use super::settings::SavedSettings;
use super::tensor::SavedTensor;
use crate::error::{FitError, Result};
use crate::fit::FitRecord;

/// The format tag of saved calibrators.
pub const FORMAT: &str = "calib-calibrator/2";

/// The earlier format, which coded the settings as f64 hyper-parameters (still read).
const FORMAT_1: &str = "calib-calibrator/1";

/// A calibrator as saved: method, K, parameters (f64, exact), typed settings, real-valued
/// hyper-parameters, fit record and the calib version that wrote it.
///
/// JSON via serde; f64 values round-trip bit-identically (shortest round-trip formatting).
/// Files of format 1 load too: their coded settings are read as [`SavedSettings`].
///
/// # Example
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use calib_core::input::Predictions;
/// use calib_train::{Fit, SavedCalibrator, TemperatureScalingConfig};
///
/// let device = Device::flex();
/// let logits = Tensor::<2>::from_floats([[3.0, 0.0], [0.0, 2.0], [2.5, 0.0], [0.0, 1.0]], &device);
/// let labels = Tensor::<1, Int>::from_ints([0, 1, 1, 1], &device);
/// let preds = Predictions::logits(logits, labels)?;
/// let fitted = TemperatureScalingConfig::new().fit(&preds)?;
/// let json = fitted.to_saved()?.to_json();
/// let back = SavedCalibrator::from_json(&json)?;
/// assert_eq!(back, fitted.to_saved()?);
/// # Ok::<(), calib_train::FitError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedCalibrator {
    /// [`FORMAT`].
    pub format: String,
    /// The calib version that wrote the file.
    pub calib_version: String,
    /// The method.
    pub method: Method,
    /// K.
    pub n_classes: usize,
    /// Named parameters.
    pub parameters: BTreeMap<String, SavedTensor>,
    /// The typed choices that rebuild the calibrator with its parameters.
    #[serde(default)]
    pub settings: SavedSettings,
    /// Real-valued hyper-parameters the fit chose (regularisation strengths), for the record.
    #[serde(default)]
    pub hyperparameters: BTreeMap<String, f64>,
    /// The fit record, when the calibrator was fitted (not built by hand).
    pub fit: Option<FitRecord>,
}

impl SavedCalibrator {
    /// The saved form of `calibrator`, without a fit record ([`crate::Fitted::to_saved`]
    /// attaches one).
    ///
    /// # Errors
    /// [`FitError::Backend`] when parameters cannot be read back.
    pub fn from_calibrator<C: Calibrator>(calibrator: &C) -> Result<Self> {
        Ok(Self {
            format: FORMAT.into(),
            calib_version: env!("CARGO_PKG_VERSION").into(),
            method: calibrator.method(),
            n_classes: calibrator.n_classes(),
            parameters: calibrator.parameters()?,
            settings: calibrator.settings(),
            hyperparameters: calibrator.hyperparameters(),
            fit: None,
        })
    }

    /// Attaches the record of the fit that produced the calibrator; a calibrator that takes
    /// any K (temperature scaling) records the K it was fitted on.
    pub(crate) fn with_record(mut self, record: FitRecord) -> Self {
        if self.n_classes == 0 {
            self.n_classes = record.n_classes;
        }
        self.fit = Some(record);
        self
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serialises")
    }

    /// Parses JSON written by [`Self::to_json`], or a format-1 file (read as format 2).
    ///
    /// # Errors
    /// [`FitError::Format`] for malformed JSON, another format tag, or a format-1 code that
    /// names nothing.
    pub fn from_json(json: &str) -> Result<Self> {
        let mut saved: Self =
            serde_json::from_str(json).map_err(|e| FitError::Format(e.to_string()))?;
        if saved.format == FORMAT_1 {
            saved.settings = SavedSettings::from_codes(&mut saved.hyperparameters)?;
            saved.format = FORMAT.into();
        }
        if saved.format != FORMAT {
            return Err(FitError::Format(format!("format `{}` is not `{FORMAT}`", saved.format)));
        }
        Ok(saved)
    }

    /// Writes the JSON to `path` atomically: a temporary file beside it, then a rename, so an
    /// interrupted write never leaves a partial file or clobbers an existing one.
    ///
    /// # Errors
    /// [`FitError::Format`] naming the path when writing fails.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        calib_io::write_atomic(path, self.to_json().as_bytes())
            .map_err(|e| FitError::Format(format!("{}: {e}", path.display())))
    }

    /// Reads a file written by [`Self::save`].
    ///
    /// # Errors
    /// [`FitError::Format`] naming the path when it cannot be read or parsed.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| FitError::Format(format!("{}: {e}", path.display())))?;
        Self::from_json(&text).map_err(|e| FitError::Format(format!("{}: {e}", path.display())))
    }
}

impl<C: Calibrator> Fitted<C> {
    /// The saved form (JSON-ready), with the fit record.
    ///
    /// # Errors
    /// [`FitError::Backend`] when parameters cannot be read back.
    pub fn to_saved(&self) -> Result<SavedCalibrator> {
        let saved = SavedCalibrator::from_calibrator(&self.calibrator)?;
        Ok(saved.with_record(self.record.clone()))
    }
}
