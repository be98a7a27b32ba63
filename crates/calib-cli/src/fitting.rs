//! Fitting any calibration method by name, with one set of settings.

use calib_core::input::Predictions;
use calib_train::{
    CrossValidation, DirichletCalibrationConfig, FitAny, FitConfig, MatrixScalingConfig, Method,
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

/// The settings that fit `method`, from the command line's shared settings.
///
/// # Errors
/// [`CliError::Usage`] for a method this command line does not offer.
pub fn config_for(method: Method, settings: &FitSettings) -> Result<Box<dyn FitAny>> {
    let mut fit = FitConfig::new();
    if let Some(max_iter) = settings.max_iter {
        fit = fit.with_max_iter(max_iter);
    }
    let odir = settings.odir.map(|(lambda, mu)| Regularisation::Odir { lambda, mu });
    Ok(match method {
        Method::Temperature => Box::new(TemperatureScalingConfig::new().with_fit(fit)),
        Method::Vector => Box::new(VectorScalingConfig::new().with_fit(fit)),
        Method::Matrix => Box::new(
            MatrixScalingConfig::new().with_fit(fit).with_regularisation(odir.unwrap_or_default()),
        ),
        Method::Dirichlet => {
            let config = DirichletCalibrationConfig::new().with_fit(fit);
            Box::new(match (odir, &settings.grid) {
                (Some(reg), _) => config.with_regularisation(reg),
                (None, Some(lambdas)) => config.with_cross_validation(CrossValidation {
                    lambdas: lambdas.clone(),
                    ..CrossValidation::default()
                }),
                (None, None) => config,
            })
        }
        Method::Platt => Box::new(PlattScalingConfig::new().with_fit(fit)),
        other => return Err(CliError::Usage(format!("`{other}` cannot be fitted from here"))),
    })
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
    config_for(method, settings)?
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
