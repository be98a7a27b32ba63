//! Fitting any calibration method by name, with one set of settings.

use calib_core::input::Predictions;
use calib_train::{
    BandwidthRule, BetaCalibrationConfig, BetaForm, BinStrategy, CrossValidation,
    DirichletCalibrationConfig, EceTemperatureConfig, FitAny, FitConfig, HistogramBinningConfig,
    IsotonicRegressionConfig, Kernel, LceCalibrationConfig, MatrixScalingConfig, Method,
    PlattMapConfig, PlattScalingConfig, Progress, Reduction, Regularisation, SavedCalibrator,
    Scale, ScalingBinningConfig, SplineCalibrationConfig, TemperatureScalingConfig,
    VectorScalingConfig, VennAbersConfig,
};

use crate::error::{CliError, Result};

/// Settings shared by every method of `calib fit` and `calib compare`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FitSettings {
    /// Iteration cap (default: the method's).
    pub max_iter: Option<usize>,
    /// Fixed ODIR `(lambda, mu)` for Dirichlet and matrix scaling; `None`: Dirichlet
    /// cross-validates, matrix cross-validates when N < K(K + 1) and is unregularised
    /// otherwise.
    pub odir: Option<(f64, f64)>,
    /// The strengths Dirichlet's cross-validation searches (`None`: its default grid).
    pub grid: Option<Vec<f64>>,
    /// Histogram binning: bins, strategy, bootstrap resamples and their seed.
    pub bins: Option<usize>,
    /// Histogram binning: equal width or equal mass.
    pub strategy: Option<BinStrategy>,
    /// Histogram binning: bootstrap resamples (0: none).
    pub bootstrap: Option<usize>,
    /// Seed of the bootstrap.
    pub seed: Option<u64>,
    /// Beta calibration's parametrisation.
    pub beta_form: Option<BetaForm>,
    /// Top-label calibration's base method (default isotonic).
    pub base: Option<Method>,
    /// LCE calibration: bandwidth (default: the bandwidth rule's).
    pub bandwidth: Option<f64>,
    /// LCE calibration: how the bandwidth is chosen (default leave-one-out).
    pub bandwidth_rule: Option<BandwidthRule>,
    /// LCE calibration: where the kernel smooths (default the log-odds).
    pub scale: Option<Scale>,
    /// LCE calibration's kernel.
    pub kernel: Option<Kernel>,
    /// Scaling-binning: the paper's split of the calibration set.
    pub split: bool,
    /// The metric ece-temperature minimises (default ece).
    pub metric: Option<calib_core::Metric>,
    /// How the binary maps calibrate K-class input (default one-vs-rest; `top-label` is the
    /// `top-label` method with that map as its base).
    pub reduction: Option<Reduction>,
}

/// The settings that fit `method`, from the command line's shared settings.
///
/// # Errors
/// [`CliError::Usage`] for a method this command line does not offer.
pub fn config_for(
    method: Method,
    settings: &FitSettings,
    binary_input: bool,
) -> Result<Box<dyn FitAny>> {
    let mut fit = FitConfig::new();
    if let Some(max_iter) = settings.max_iter {
        fit = fit.with_max_iter(max_iter);
    }
    let odir = settings.odir.map(|(lambda, mu)| Regularisation::Odir { lambda, mu });
    Ok(match method {
        Method::Temperature => Box::new(TemperatureScalingConfig::new().with_fit(fit)),
        Method::Vector => Box::new(VectorScalingConfig::new().with_fit(fit)),
        Method::Matrix => {
            let config = MatrixScalingConfig::new().with_fit(fit);
            // An explicit --lambda (0 included) is fitted as asked.
            Box::new(match odir {
                Some(reg) => config.with_regularisation(reg).with_underdetermined(None),
                None => config,
            })
        }
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
        Method::Platt if binary_input => Box::new(PlattScalingConfig::new().with_fit(fit)),
        Method::EceTemperature => {
            let mut config = EceTemperatureConfig::new();
            if let Some(metric) = settings.metric {
                config.metric = metric;
            }
            config.n_bins = settings.bins.unwrap_or(config.n_bins);
            config.n_ranges = settings.bins.unwrap_or(config.n_ranges);
            Box::new(config)
        }
        Method::TopLabel => {
            let base = settings.base.unwrap_or(Method::Isotonic);
            binary_config(base, Reduction::TopLabel, settings)?
        }
        m if m.is_binary_map() => {
            binary_config(m, settings.reduction.unwrap_or(Reduction::OneVsRest), settings)?
        }
        other => return Err(CliError::Usage(format!("`{other}` cannot be fitted from here"))),
    })
}

/// The settings of a binary-map method in `reduction`.
fn binary_config(
    method: Method,
    reduction: Reduction,
    settings: &FitSettings,
) -> Result<Box<dyn FitAny>> {
    Ok(match method {
        Method::Isotonic => Box::new(IsotonicRegressionConfig::new().with_reduction(reduction)),
        Method::Histogram => {
            let mut config = HistogramBinningConfig::new().with_reduction(reduction);
            config.n_bins = settings.bins.unwrap_or(config.n_bins);
            config.strategy = settings.strategy.unwrap_or(config.strategy);
            config.bootstrap = settings.bootstrap.unwrap_or(config.bootstrap);
            config.seed = settings.seed.unwrap_or(config.seed);
            Box::new(config)
        }
        Method::Platt => Box::new(PlattMapConfig::new().with_reduction(reduction)),
        Method::VennAbers => Box::new(VennAbersConfig::new().with_reduction(reduction)),
        Method::Spline => Box::new(SplineCalibrationConfig::new().with_reduction(reduction)),
        Method::Lce => Box::new(
            LceCalibrationConfig::new()
                .with_reduction(reduction)
                .with_bandwidth(settings.bandwidth)
                .with_kernel(settings.kernel.unwrap_or_default())
                .with_bandwidth_rule(settings.bandwidth_rule.unwrap_or(BandwidthRule::LeaveOneOut))
                .with_scale(settings.scale.unwrap_or(Scale::Logit)),
        ),
        Method::ScalingBinning => {
            let mut config = ScalingBinningConfig::new().with_reduction(reduction);
            config.n_bins = settings.bins.unwrap_or(config.n_bins);
            config.split = settings.split;
            Box::new(config)
        }
        Method::Beta => Box::new(
            BetaCalibrationConfig::new()
                .with_reduction(reduction)
                .with_form(settings.beta_form.unwrap_or_default()),
        ),
        other => {
            return Err(CliError::Usage(format!(
                "`{other}` is not a base of top-label calibration"
            )));
        }
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
    config_for(method, settings, preds.kind() == calib_core::input::ScoreKind::Binary)?
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
