//! The options of the binary maps and of top-label calibration, which fits any of them per
//! predicted class.

use calib_train::{
    AffineLogitScalingConfig, BandwidthRule, BayesianBinningConfig, BetaCalibrationConfig,
    BetaForm, BinStrategy, CdfSplineCalibrationConfig, CentredIsotonicRegressionConfig, FitAny,
    HistogramBinningConfig, IsotonicRegressionConfig, Kernel, LceCalibrationConfig, Method,
    PlattMapConfig, QuadraticLogitScalingConfig, Reduction, Scale, ScalingBinningConfig,
    SplineCalibrationConfig, VennAbersConfig,
};
use clap::{Args, ValueEnum};

use super::options::{FitInput, MethodOptions};
use crate::cli::{BandwidthRuleArg, ScaleArg};
use crate::error::{CliError, Result};

/// The options of every binary map (each map reads its own; top-label passes them to its
/// base).
#[derive(Debug, Clone, Default, Args)]
pub struct MapOptions {
    /// histogram, scaling-binning: number of bins.
    #[arg(long, value_name = "B")]
    pub bins: Option<usize>,
    /// histogram, bbq: equal-width or equal-mass bins.
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyArg>,
    /// histogram: average the maps of M bootstrap resamples (Nixon et al.'s bootstrap
    /// histogram binning).
    #[arg(long, value_name = "M")]
    pub bootstrap: Option<usize>,
    /// histogram: seed of the bootstrap resamples.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// beta: the parametrisation.
    #[arg(long, value_enum)]
    pub form: Option<BetaFormArg>,
    /// scaling-binning: fit Platt on the first half of the rows, the bins on the second (the
    /// paper's split; default: both on all rows, as uncertainty-calibration does).
    #[arg(long)]
    pub paper_split: bool,
    /// lce: the kernel bandwidth on --scale (default: --bandwidth-rule per problem).
    #[arg(long, value_name = "H")]
    pub bandwidth: Option<f64>,
    /// lce: how the bandwidth is chosen when none is given (default loo: the leave-one-out
    /// log-likelihood's minimiser; silverman: the poster's rule of thumb).
    #[arg(long, value_enum, conflicts_with = "bandwidth")]
    pub bandwidth_rule: Option<BandwidthRuleArg>,
    /// lce: where the kernel smooths (default logit: the scores' log-odds; probability: the
    /// scores reflected at 0 and 1, as the poster).
    #[arg(long, value_enum)]
    pub scale: Option<ScaleArg>,
    /// lce: the kernel.
    #[arg(long, value_enum)]
    pub kernel: Option<KernelArg>,
    /// affine, quadratic: ridge (R/2)(a^2 + c^2) on the non-intercept coefficients (default 0).
    #[arg(long, value_name = "R")]
    pub ridge: Option<f64>,
}

/// `--strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Equal-width bins.
    Width,
    /// Equal-mass bins.
    Mass,
}

/// `--form`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BetaFormArg {
    /// a, b, c free.
    Abm,
    /// a = b.
    Am,
    /// m = 1/2.
    Ab,
}

/// `--kernel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelArg {
    /// Gaussian.
    Gaussian,
    /// Triweight.
    Triweight,
}

/// Declares the options type of a binary map: its [`MapOptions`].
macro_rules! map_options {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Default, Args)]
        pub struct $name {
            #[command(flatten)]
            map: MapOptions,
        }
    )*};
}

map_options! {
    /// `calib fit isotonic`.
    Isotonic;
    /// `calib fit histogram`.
    Histogram;
    /// `calib fit beta`.
    Beta;
    /// `calib fit scaling-binning`.
    ScalingBinning;
    /// `calib fit venn-abers`.
    VennAbers;
    /// `calib fit lce`.
    Lce;
    /// `calib fit spline`.
    Spline;
    /// `calib fit affine`.
    Affine;
    /// `calib fit quadratic`.
    Quadratic;
    /// `calib fit cir`.
    Cir;
    /// `calib fit bbq`.
    Bbq;
    /// `calib fit cdf-spline`.
    CdfSpline;
}

impl MethodOptions for Isotonic {
    fn about() -> &'static str {
        "Isotonic regression (Zadrozny & Elkan 2002)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(Box::new(IsotonicRegressionConfig::new().with_reduction(input.reduction)))
    }
}

impl MethodOptions for Histogram {
    fn about() -> &'static str {
        "Histogram binning, equal width or mass, optionally bootstrapped (Zadrozny & Elkan 2001)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let o = &self.map;
        let mut config = HistogramBinningConfig::new().with_reduction(input.reduction);
        config.n_bins = o.bins.unwrap_or(config.n_bins);
        config.strategy = strategy(o.strategy);
        config.bootstrap = o.bootstrap.unwrap_or(config.bootstrap);
        config.seed = o.seed.unwrap_or(config.seed);
        Ok(Box::new(config))
    }
}

impl MethodOptions for Beta {
    fn about() -> &'static str {
        "Beta calibration (Kull et al. 2017)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let form = self.map.form.map_or_else(BetaForm::default, |f| match f {
            BetaFormArg::Abm => BetaForm::Abm,
            BetaFormArg::Am => BetaForm::Am,
            BetaFormArg::Ab => BetaForm::Ab,
        });
        Ok(Box::new(BetaCalibrationConfig::new().with_reduction(input.reduction).with_form(form)))
    }
}

impl MethodOptions for ScalingBinning {
    fn about() -> &'static str {
        "Scaling-binning: Platt, then bins of its outputs (Kumar et al. 2019)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let mut config = ScalingBinningConfig::new().with_reduction(input.reduction);
        config.n_bins = self.map.bins.unwrap_or(config.n_bins);
        config.split = self.map.paper_split;
        Ok(Box::new(config))
    }
}

impl MethodOptions for VennAbers {
    fn about() -> &'static str {
        "Inductive Venn-ABERS (Vovk et al. 2015)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(Box::new(VennAbersConfig::new().with_reduction(input.reduction)))
    }
}

impl MethodOptions for Lce {
    fn about() -> &'static str {
        "LCE calibration: a kernel-smoothed reliability curve (Posocco & Bonnefoy)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let o = &self.map;
        let kernel = o.kernel.map_or_else(Kernel::default, |k| match k {
            KernelArg::Gaussian => Kernel::Gaussian,
            KernelArg::Triweight => Kernel::Triweight,
        });
        let rule = o.bandwidth_rule.map_or(BandwidthRule::LeaveOneOut, |r| match r {
            BandwidthRuleArg::Loo => BandwidthRule::LeaveOneOut,
            BandwidthRuleArg::Silverman => BandwidthRule::Silverman,
        });
        let scale = o.scale.map_or(Scale::Logit, |s| match s {
            ScaleArg::Logit => Scale::Logit,
            ScaleArg::Probability => Scale::Probability,
        });
        Ok(Box::new(
            LceCalibrationConfig::new()
                .with_reduction(input.reduction)
                .with_bandwidth(o.bandwidth)
                .with_kernel(kernel)
                .with_bandwidth_rule(rule)
                .with_scale(scale),
        ))
    }
}

impl MethodOptions for Spline {
    fn about() -> &'static str {
        "Spline calibration on the log-odds (Lucena 2018)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(Box::new(SplineCalibrationConfig::new().with_reduction(input.reduction)))
    }
}

impl MethodOptions for Affine {
    fn about() -> &'static str {
        "Affine logistic calibration: sigmoid(a z + b) on the logit, maximum likelihood"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let config = AffineLogitScalingConfig::new().with_reduction(input.reduction);
        Ok(Box::new(config.with_ridge(self.map.ridge.unwrap_or(0.0))))
    }
}

impl MethodOptions for Quadratic {
    fn about() -> &'static str {
        "Quadratic logistic calibration: sigmoid(a z + b + c z^2) on the logit"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let config = QuadraticLogitScalingConfig::new().with_reduction(input.reduction);
        Ok(Box::new(config.with_ridge(self.map.ridge.unwrap_or(0.0))))
    }
}

impl MethodOptions for Cir {
    fn about() -> &'static str {
        "Centred isotonic regression: strictly increasing (Oron & Flournoy 2017)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(Box::new(CentredIsotonicRegressionConfig::new().with_reduction(input.reduction)))
    }
}

impl MethodOptions for Bbq {
    fn about() -> &'static str {
        "Bayesian binning into quantiles: histograms averaged by BIC (Naeini et al. 2015)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let config = BayesianBinningConfig::new().with_reduction(input.reduction);
        Ok(Box::new(config.with_strategy(strategy(self.map.strategy))))
    }
}

impl MethodOptions for CdfSpline {
    fn about() -> &'static str {
        "CDF-spline calibration (Gupta et al. 2021)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        Ok(Box::new(CdfSplineCalibrationConfig::new().with_reduction(input.reduction)))
    }
}

/// `--strategy` as the library's (equal width by default).
fn strategy(arg: Option<StrategyArg>) -> BinStrategy {
    match arg {
        Some(StrategyArg::Mass) => BinStrategy::Mass,
        Some(StrategyArg::Width) | None => BinStrategy::Width,
    }
}

/// `calib fit top-label`: a binary map fitted per predicted class.
#[derive(Debug, Clone, Default, Args)]
pub struct TopLabel {
    /// The binary map fitted per predicted class (default isotonic): platt, isotonic,
    /// histogram, beta, scaling-binning, venn-abers, lce, spline, affine, quadratic, cir, bbq
    /// or cdf-spline.
    #[arg(long, value_name = "METHOD", value_parser = parse_base)]
    base: Option<Method>,
    #[command(flatten)]
    map: MapOptions,
}

impl MethodOptions for TopLabel {
    fn about() -> &'static str {
        "Top-label calibration: a binary map per predicted class (Gupta & Ramdas 2021)"
    }

    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>> {
        let input = FitInput { reduction: Reduction::TopLabel, ..input };
        let map = self.map.clone();
        let base: Box<dyn MethodOptions> = match self.base.unwrap_or(Method::Isotonic) {
            Method::Platt => {
                return Ok(Box::new(PlattMapConfig::new().with_reduction(input.reduction)));
            }
            Method::Isotonic => Box::new(Isotonic { map }),
            Method::Histogram => Box::new(Histogram { map }),
            Method::Beta => Box::new(Beta { map }),
            Method::ScalingBinning => Box::new(ScalingBinning { map }),
            Method::VennAbers => Box::new(VennAbers { map }),
            Method::Lce => Box::new(Lce { map }),
            Method::Spline => Box::new(Spline { map }),
            Method::Affine => Box::new(Affine { map }),
            Method::Quadratic => Box::new(Quadratic { map }),
            Method::Cir => Box::new(Cir { map }),
            Method::Bbq => Box::new(Bbq { map }),
            Method::CdfSpline => Box::new(CdfSpline { map }),
            other => {
                return Err(CliError::Usage(format!(
                    "`{other}` is not a base of top-label calibration"
                )));
            }
        };
        base.config(input)
    }
}

/// A binary map's name, as `--base` takes it.
fn parse_base(name: &str) -> std::result::Result<Method, String> {
    Method::from_name(name.trim())
        .ok()
        .filter(|m| m.is_binary_map() && *m != Method::TopLabel)
        .ok_or_else(|| format!("`{name}` is not a binary map"))
}
