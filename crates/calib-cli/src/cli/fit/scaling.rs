//! The options of the scaling family: temperature, vector, matrix, Dirichlet, Platt,
//! ECE-optimised temperature, structured matrix and vector scaling, ensemble temperature
//! scaling and kernel calibration.

use calib_train::{
    CrossValidation, DirichletCalibrationConfig, EceTemperatureConfig,
    EnsembleTemperatureScalingConfig, EtsLoss, FitAny, FitConfig, KernelBandwidth,
    KernelCalibrationConfig, MatrixScalingConfig, PlattMapConfig, PlattScalingConfig,
    Regularisation, RidgeStrengths, StructuredMatrixScalingConfig, StructuredVectorScalingConfig,
    TemperatureScalingConfig, VectorScalingConfig,
};
use clap::Args;

use super::options::{FitInput, MethodOptions};
use crate::error::{CliError, Result};

/// The optimiser's options.
#[derive(Debug, Clone, Default, Args)]
pub struct Optimiser {
    /// Iteration cap of the optimiser.
    #[arg(long, value_name = "N")]
    pub max_iter: Option<usize>,
}

impl Optimiser {
    fn fit(&self) -> FitConfig {
        let fit = FitConfig::new();
        match self.max_iter {
            Some(n) => fit.with_max_iter(n),
            None => fit,
        }
    }
}

/// A fixed ODIR penalty.
#[derive(Debug, Clone, Default, Args)]
pub struct Odir {
    /// Fixed ODIR strength λ (default: dirichlet chooses λ = μ by 5-fold cross-validation;
    /// matrix does so when N < K(K+1), MS-ODIR, and is unregularised otherwise; --lambda 0
    /// forces the unregularised fit).
    #[arg(long, value_name = "L")]
    pub lambda: Option<f64>,
    /// Fixed intercept strength μ (with --lambda; default μ = λ).
    #[arg(long, value_name = "M")]
    pub mu: Option<f64>,
}

impl Odir {
    /// The penalty asked for, if any.
    fn regularisation(&self) -> Result<Option<Regularisation>> {
        match (self.lambda, self.mu) {
            (None, Some(_)) => Err(CliError::Usage("--mu needs --lambda".into())),
            (Some(lambda), mu) => {
                Ok(Some(Regularisation::Odir { lambda, mu: mu.unwrap_or(lambda) }))
            }
            (None, None) => Ok(None),
        }
    }
}

/// `calib fit temperature`.
#[derive(Debug, Clone, Default, Args)]
pub struct Temperature {
    #[command(flatten)]
    optimiser: Optimiser,
}

impl MethodOptions for Temperature {
    fn about() -> &'static str {
        "Temperature scaling: softmax(z / T), T by NLL (Guo et al. 2017)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(Box::new(TemperatureScalingConfig::new().with_fit(self.optimiser.fit())))
    }
}

/// `calib fit vector`.
#[derive(Debug, Clone, Default, Args)]
pub struct Vector {
    #[command(flatten)]
    optimiser: Optimiser,
}

impl MethodOptions for Vector {
    fn about() -> &'static str {
        "Vector scaling: softmax(w * z + b) (Guo et al. 2017)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(Box::new(VectorScalingConfig::new().with_fit(self.optimiser.fit())))
    }
}

/// `calib fit matrix`.
#[derive(Debug, Clone, Default, Args)]
pub struct Matrix {
    #[command(flatten)]
    optimiser: Optimiser,
    #[command(flatten)]
    odir: Odir,
}

impl MethodOptions for Matrix {
    fn about() -> &'static str {
        "Matrix scaling: softmax(W z + b); ODIR by cross-validation when N < K(K + 1)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        let config = MatrixScalingConfig::new().with_fit(self.optimiser.fit());
        // An explicit --lambda (0 included) is fitted as asked.
        Ok(Box::new(match self.odir.regularisation()? {
            Some(reg) => config.with_regularisation(reg).with_underdetermined(None),
            None => config,
        }))
    }
}

/// `calib fit dirichlet`.
#[derive(Debug, Clone, Default, Args)]
pub struct Dirichlet {
    #[command(flatten)]
    optimiser: Optimiser,
    #[command(flatten)]
    odir: Odir,
    /// The strengths the cross-validation searches (λ = μ), comma-separated (default
    /// 1e-4,1e-3,...,1e6).
    #[arg(long, value_name = "L1,L2,...", value_delimiter = ',', conflicts_with = "lambda")]
    lambdas: Option<Vec<f64>>,
}

impl MethodOptions for Dirichlet {
    fn about() -> &'static str {
        "Dirichlet calibration with ODIR (Kull et al. 2019)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        let config = DirichletCalibrationConfig::new().with_fit(self.optimiser.fit());
        Ok(Box::new(match (self.odir.regularisation()?, &self.lambdas) {
            (Some(reg), _) => config.with_regularisation(reg),
            (None, Some(lambdas)) => config.with_cross_validation(CrossValidation {
                lambdas: lambdas.clone(),
                ..CrossValidation::default()
            }),
            (None, None) => config,
        }))
    }
}

/// `calib fit platt`: Platt scaling on binary scores, its maps one-vs-rest on K classes.
#[derive(Debug, Clone, Default, Args)]
pub struct Platt {
    #[command(flatten)]
    optimiser: Optimiser,
}

impl MethodOptions for Platt {
    fn about() -> &'static str {
        "Platt scaling: sigmoid(a logit(s) + b) on Platt's targets (one-vs-rest on K classes)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(if input.binary {
            Box::new(PlattScalingConfig::new().with_fit(self.optimiser.fit()))
        } else {
            Box::new(PlattMapConfig::new().with_reduction(input.reduction))
        })
    }
}

/// `calib fit ece-temperature`.
#[derive(Debug, Clone, Default, Args)]
pub struct EceTemperature {
    /// The binned metric to minimise (ece, sce, ace, tace, rmsce, ...).
    #[arg(long, value_name = "NAME")]
    metric: Option<String>,
    /// Bins (and ranges) of its metric.
    #[arg(long, value_name = "B")]
    bins: Option<usize>,
}

impl MethodOptions for EceTemperature {
    fn about() -> &'static str {
        "ECE-optimised temperature (Nixon et al. 2019)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        let mut config = EceTemperatureConfig::new();
        if let Some(name) = &self.metric {
            config.metric = calib_core::Metric::from_name(name.trim())
                .map_err(|e| CliError::Usage(e.to_string()))?;
        }
        config.n_bins = self.bins.unwrap_or(config.n_bins);
        config.n_ranges = self.bins.unwrap_or(config.n_ranges);
        Ok(Box::new(config))
    }
}

/// The ridge of structured scaling: strength `lambda K^rho / N^tau` on the intercepts and the
/// diagonal, `lambda ((K (K - 1))^rho / N^tau` off the diagonal.
#[derive(Debug, Clone, Default, Args)]
pub struct Ridge {
    /// Multiplier of the intercepts' strength (default 1).
    #[arg(long, value_name = "L")]
    pub lambda_intercept: Option<f64>,
    /// Multiplier of the diagonal's strength (default 1).
    #[arg(long, value_name = "L")]
    pub lambda_diagonal: Option<f64>,
    /// Exponent of K in the strengths (default 1).
    #[arg(long, value_name = "R")]
    pub rho: Option<f64>,
    /// Exponent of N in the strengths (default 1).
    #[arg(long, value_name = "T")]
    pub tau: Option<f64>,
}

impl Ridge {
    fn strengths(&self, off_diagonal: Option<f64>) -> RidgeStrengths {
        let d = RidgeStrengths::new();
        RidgeStrengths {
            intercept: self.lambda_intercept.unwrap_or(d.intercept),
            diagonal: self.lambda_diagonal.unwrap_or(d.diagonal),
            off_diagonal: off_diagonal.unwrap_or(d.off_diagonal),
            rho: self.rho.unwrap_or(d.rho),
            tau: self.tau.unwrap_or(d.tau),
        }
    }
}

/// `calib fit sms`: structured matrix scaling.
#[derive(Debug, Clone, Default, Args)]
pub struct Sms {
    #[command(flatten)]
    optimiser: Optimiser,
    #[command(flatten)]
    ridge: Ridge,
    /// Multiplier of the off-diagonal strength (default 1).
    #[arg(long, value_name = "L")]
    lambda_off_diagonal: Option<f64>,
}

impl MethodOptions for Sms {
    fn about() -> &'static str {
        "Structured matrix scaling: matrix scaling after temperature and mixture, shrunk to it (Berta et al. 2025)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        let strengths = self.ridge.strengths(self.lambda_off_diagonal);
        let config = StructuredMatrixScalingConfig::new().with_fit(self.optimiser.fit());
        Ok(Box::new(config.with_strengths(strengths)))
    }
}

/// `calib fit svs`: structured vector scaling.
#[derive(Debug, Clone, Default, Args)]
pub struct Svs {
    #[command(flatten)]
    optimiser: Optimiser,
    #[command(flatten)]
    ridge: Ridge,
}

impl MethodOptions for Svs {
    fn about() -> &'static str {
        "Structured vector scaling: vector scaling after temperature and mixture, shrunk to it (Berta et al. 2025)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        let strengths = self.ridge.strengths(None);
        let config = StructuredVectorScalingConfig::new().with_fit(self.optimiser.fit());
        Ok(Box::new(config.with_strengths(strengths)))
    }
}

/// `--loss` of ets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EtsLossArg {
    /// Mean squared error over the N x K entries (the paper's).
    Mse,
    /// Mean negative log-likelihood.
    Nll,
}

/// `calib fit ets`: ensemble temperature scaling.
#[derive(Debug, Clone, Default, Args)]
pub struct Ets {
    /// The loss of the temperature and of the weights (default mse).
    #[arg(long, value_enum)]
    loss: Option<EtsLossArg>,
}

impl MethodOptions for Ets {
    fn about() -> &'static str {
        "Ensemble temperature scaling: temperature, then simplex weights with the raw and uniform (Zhang et al. 2020)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        let loss = match self.loss {
            Some(EtsLossArg::Nll) => EtsLoss::Nll,
            Some(EtsLossArg::Mse) | None => EtsLoss::Mse,
        };
        Ok(Box::new(EnsembleTemperatureScalingConfig::new().with_loss(loss)))
    }
}

/// `--bandwidth-rule` of kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelRuleArg {
    /// N^(-2/(d+4)), d = K - 1.
    Rule,
    /// The leave-one-out log-likelihood's maximiser over probmetrics' grid.
    Loo,
}

/// `calib fit kernel`: Nadaraya-Watson calibration with a Dirichlet kernel.
#[derive(Debug, Clone, Default, Args)]
pub struct Kernel {
    /// A fixed bandwidth h (default: --bandwidth-rule).
    #[arg(long, value_name = "H")]
    bandwidth: Option<f64>,
    /// How the bandwidth is chosen when none is given (default rule).
    #[arg(long, value_enum, conflicts_with = "bandwidth")]
    bandwidth_rule: Option<KernelRuleArg>,
}

impl MethodOptions for Kernel {
    fn about() -> &'static str {
        "Kernel calibration: Nadaraya-Watson with a Dirichlet kernel (Popordanoska et al. 2022)"
    }

    fn config(&self, _: FitInput) -> Result<Box<dyn FitAny>> {
        let bandwidth = match (self.bandwidth, self.bandwidth_rule) {
            (Some(bandwidth), _) => KernelBandwidth::Fixed { bandwidth },
            (None, Some(KernelRuleArg::Loo)) => KernelBandwidth::LeaveOneOut,
            (None, _) => KernelBandwidth::Rule,
        };
        Ok(Box::new(KernelCalibrationConfig::new().with_bandwidth(bandwidth)))
    }
}
