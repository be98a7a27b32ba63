//! Fitting any calibration method by name, with its command-line options
//! ([`crate::cli::MethodOptions`]).

use calib_core::input::{Predictions, ScoreKind};
use calib_train::{Method, Progress, Reduction, SavedCalibrator};

use crate::cli::{FitInput, MethodOptions};
use crate::error::{CliError, Result};

/// Fits the method `options` belong to on `preds` (binary maps one-vs-rest on K classes),
/// reporting iterations to `progress`; returns the saved form with its fit record.
///
/// # Errors
/// [`CliError::Usage`] for options that make no sense together; [`CliError::Train`] (or
/// [`CliError::Core`] for rejected input) in `context`.
pub fn fit_method(
    options: &dyn MethodOptions,
    preds: &Predictions,
    context: &str,
    progress: &mut dyn FnMut(Progress),
) -> Result<SavedCalibrator> {
    let input =
        FitInput { binary: preds.kind() == ScoreKind::Binary, reduction: Reduction::OneVsRest };
    options
        .config(input)?
        .fit_any(preds, progress)
        .and_then(|fitted| fitted.to_saved())
        .map_err(|e| CliError::train(context, e))
}

/// Parses a method name.
///
/// # Errors
/// [`CliError::Usage`] naming the known methods.
pub fn parse_method(name: &str) -> Result<Method> {
    Method::from_name(name.trim()).map_err(|e| CliError::Usage(strip_setting(e.to_string())))
}

fn strip_setting(message: String) -> String {
    message.strip_prefix("invalid setting: ").map(str::to_string).unwrap_or(message)
}
