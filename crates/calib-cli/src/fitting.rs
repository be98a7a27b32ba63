//! Fitting any calibration method by name, with one set of settings.

use calib_core::input::Predictions;
use calib_train::{
    CrossValidation, DirichletCalibrationConfig, FitConfig, MatrixScalingConfig, Method,
    PlattScalingConfig, Progress, Regularisation, SavedCalibrator, TemperatureScalingConfig,
    VectorScalingConfig,
};

use crate::error::{CliError, Result};

/// Settings shared by every method of `calib fit` and `calib compare`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FitSettings {
    /// Iteration cap (default: the method's).
    pub max_iter: Option<usize>,
    /// Fixed ODIR `(lambda, mu)` for Dirichlet and matrix scaling; `None`: Dirichlet
    /// cross-validates, matrix is unregularised.
    pub odir: Option<(f64, f64)>,
    /// The strengths Dirichlet's cross-validation searches (`None`: its default grid).
    pub grid: Option<Vec<f64>>,
}

/// Fits `method` on `preds`, reporting iterations to `progress`; returns the saved form with
/// its fit record.
///
/// # Errors
/// [`CliError::Train`] (or [`CliError::Core`] for rejected input) in `context`.
pub fn fit_method(
    method: Method,
    preds: &Predictions,
    settings: &FitSettings,
    context: &str,
    progress: &mut dyn FnMut(Progress),
) -> Result<SavedCalibrator> {
    let mut fit = FitConfig::new();
    if let Some(max_iter) = settings.max_iter {
        fit = fit.with_max_iter(max_iter);
    }
    let odir = settings.odir.map(|(lambda, mu)| Regularisation::Odir { lambda, mu });
    let saved = match method {
        Method::Temperature => TemperatureScalingConfig::new()
            .with_fit(fit)
            .fit_with_progress(preds, progress)
            .and_then(|f| f.to_saved()),
        Method::Vector => VectorScalingConfig::new()
            .with_fit(fit)
            .fit_with_progress(preds, progress)
            .and_then(|f| f.to_saved()),
        Method::Matrix => MatrixScalingConfig::new()
            .with_fit(fit)
            .with_regularisation(odir.unwrap_or_default())
            .fit_with_progress(preds, progress)
            .and_then(|f| f.to_saved()),
        Method::Dirichlet => {
            let mut config = DirichletCalibrationConfig::new().with_fit(fit);
            if let Some(reg) = odir {
                config = config.with_regularisation(reg);
            } else if let Some(lambdas) = &settings.grid {
                let cv = CrossValidation { lambdas: lambdas.clone(), ..CrossValidation::default() };
                config = config.with_cross_validation(cv);
            }
            config.fit_with_progress(preds, progress).and_then(|f| f.to_saved())
        }
        Method::Platt => PlattScalingConfig::new()
            .with_fit(fit)
            .fit_with_progress(preds, progress)
            .and_then(|f| f.to_saved()),
    };
    saved.map_err(|e| CliError::train(context, e))
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

/// The snake_case name of a stop reason (as saved files write it).
pub fn stop_reason_name(reason: calib_train::StopReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{reason:?}"))
}
