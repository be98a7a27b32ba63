//! The arguments of `calib plot`.

use std::path::PathBuf;

use clap::Args;

use super::{BandwidthRuleArg, DataArgs, ScaleArg};

/// `calib plot`.
#[derive(Debug, Clone, Args)]
pub struct PlotArgs {
    /// The data (default split: test).
    #[command(flatten)]
    pub data: DataArgs,
    /// A calibrator saved by `calib fit`, applied first.
    #[arg(long, value_name = "PARAMS.json")]
    pub calibrator: Option<PathBuf>,
    /// Number of bins (even) or ranges (--adaptive).
    #[arg(long, value_name = "B", default_value_t = 15)]
    pub bins: usize,
    /// Equal-mass ranges instead of even bins.
    #[arg(long)]
    pub adaptive: bool,
    /// Custom bin edges, comma-separated, from 0 to 1 (instead of --bins even bins).
    #[arg(
        long,
        value_name = "E0,E1,...,1",
        value_delimiter = ',',
        allow_hyphen_values = true,
        conflicts_with = "adaptive"
    )]
    pub edges: Option<Vec<f64>>,
    /// One class's diagram (one-vs-rest scores of class K) instead of the top label.
    #[arg(long, value_name = "K")]
    pub class: Option<usize>,
    /// Also draw each bin's confidence interval of its accuracy: clopper-pearson (exact) or
    /// wilson.
    #[arg(long, value_name = "METHOD", num_args = 0..=1, default_missing_value = "clopper-pearson")]
    pub interval: Option<String>,
    /// Level of the acceptance intervals, the accuracy intervals and the curve's band, in
    /// (0, 1).
    #[arg(long, value_name = "L", default_value_t = 0.95)]
    pub level: f64,
    /// Draw the continuous reliability curve (kernel estimate of E[Y | s], Posocco &
    /// Bonnefoy) over the bars.
    #[arg(long)]
    pub curve: bool,
    /// Bandwidth of the curve on --scale (default: --bandwidth-rule on the pairs).
    #[arg(long, value_name = "H", requires = "curve")]
    pub bandwidth: Option<f64>,
    /// How the curve's bandwidth is chosen when none is given: silverman (the convention's
    /// default) or loo (the leave-one-out log-likelihood's minimiser, as LCE calibration).
    #[arg(long, value_enum, default_value_t = BandwidthRuleArg::Silverman, requires = "curve")]
    pub bandwidth_rule: BandwidthRuleArg,
    /// Where the curve's kernel smooths: probability (reflected at 0 and 1, the convention's
    /// default) or logit (the scores' log-odds).
    #[arg(long, value_enum, default_value_t = ScaleArg::Probability, requires = "curve")]
    pub scale: ScaleArg,
    /// Kernel of the curve: gaussian or triweight.
    #[arg(long, value_name = "K", default_value = "gaussian", requires = "curve")]
    pub kernel: String,
    /// Draw the curve's bootstrap band from B replicates (pointwise quantiles at --level).
    #[arg(long, value_name = "B", requires = "curve")]
    pub bootstrap: Option<usize>,
    /// Seed of the band's resampling.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "bootstrap")]
    pub seed: u64,
    /// Output image: .svg or .png.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}
