//! [`SavedCalibrator`]: the JSON form of a fitted calibrator, written atomically.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::calibrator::{Calibrator, Fitted, SavedTensor};
use super::method::Method;
use crate::error::{FitError, Result};
use crate::fit::FitRecord;

/// The format tag of saved calibrators.
pub const FORMAT: &str = "calib-calibrator/1";

/// A calibrator as saved: method, K, parameters (f64, exact), hyper-parameters, fit record and
/// the calib version that wrote it.
///
/// JSON via serde; f64 values round-trip bit-identically (shortest round-trip formatting).
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
    /// Hyper-parameters (regularisation strengths, ...).
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

    /// Parses JSON written by [`Self::to_json`].
    ///
    /// # Errors
    /// [`FitError::Format`] for malformed JSON or another format tag.
    pub fn from_json(json: &str) -> Result<Self> {
        let saved: Self =
            serde_json::from_str(json).map_err(|e| FitError::Format(e.to_string()))?;
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
        write_atomic(path.as_ref(), self.to_json().as_bytes())
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

/// Writes `bytes` to a temporary file in `path`'s directory, syncs it and renames it over
/// `path`. Shared with calib-cli's writers so every output of the project is written one way;
/// not part of the API.
///
/// A symbolic link is followed (the link stays, its target is replaced). An existing path that
/// is not a regular file (`/dev/null`, a pipe, a terminal) is written in place: renaming over
/// it would replace the device with a file, and run as root that breaks the machine.
#[doc(hidden)]
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let fail = |e: std::io::Error| FitError::Format(format!("{}: {e}", path.display()));
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(fail);
        }
        Ok(_) if path.is_symlink() => {
            let target = std::fs::canonicalize(path).map_err(fail)?;
            return write_atomic(&target, bytes);
        }
        _ => {}
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| fail(std::io::ErrorKind::InvalidInput.into()))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("calib-saved-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn replaces_a_file_and_leaves_no_temporary() {
        let dir = scratch("file");
        let path = dir.join("out.json");
        std::fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn follows_links_and_writes_devices_in_place() {
        use std::os::unix::fs::FileTypeExt;
        let dir = scratch("link");
        let (target, link) = (dir.join("target.json"), dir.join("link.json"));
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(link.is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        std::fs::remove_dir_all(dir).unwrap();

        let null = Path::new("/dev/null");
        if std::fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device()) {
            write_atomic(null, b"discarded").unwrap();
            assert!(std::fs::metadata(null).unwrap().file_type().is_char_device());
        }
    }
}
