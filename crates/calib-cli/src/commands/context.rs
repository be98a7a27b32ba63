//! [`Context`]: what every command needs (the device, how chatty to be), and the steps
//! several commands share: printing and loading a calibrator.

use std::io::Write;
use std::path::Path;

use burn::tensor::Device;
use calib_train::{AnyCalibrator, SavedCalibrator};

use crate::error::{CliError, Result};

/// What every command needs: the device and how chatty to be.
pub struct Context {
    /// The device chosen by `--backend`.
    pub device: Device,
    /// Its name.
    pub backend: String,
    /// `--quiet`.
    pub quiet: bool,
}

impl Context {
    /// Prints a warning on stderr (always, even with `--quiet`).
    pub fn warn(&self, message: &str) {
        eprintln!("warning: {message}");
    }

    /// Prints a note on stderr unless `--quiet`.
    pub fn note(&self, message: &str) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }
}

/// Writes `text` to stdout; a closed pipe (`calib eval ... | head`) is not an error.
pub(crate) fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::output("stdout", e)),
        _ => Ok(()),
    }
}

/// Loads a saved calibrator onto `device`.
pub(crate) fn load_calibrator(path: &Path, device: &Device) -> Result<AnyCalibrator> {
    let context = path.display().to_string();
    if !path.exists() {
        return Err(CliError::input(&context, "no such file"));
    }
    let saved = SavedCalibrator::load(path).map_err(|e| CliError::train(&context, e))?;
    AnyCalibrator::from_saved(&saved, device).map_err(|e| CliError::train(&context, e))
}
