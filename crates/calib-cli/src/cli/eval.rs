//! `calib eval` and `calib merge`: the arguments of an evaluation, of its shards' passes and of
//! their merge.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{DataArgs, Format};

/// `calib eval`.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// The data.
    #[command(flatten)]
    pub data: DataArgs,
    /// Metrics, comma-separated (docs/conventions.md names), or `all`. Default: the binned
    /// errors, NLL, Brier and accuracy (not the Brier decomposition, not the binning-free
    /// tests, smooth ECE or LCE-ECE).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub metrics: Option<Vec<String>>,
    /// Bins of the even-bin metrics and ranges of the adaptive ones.
    #[arg(long, value_name = "B", default_value_t = 15)]
    pub bins: usize,
    /// Custom bin edges for the even-bin metrics, comma-separated, from 0 to 1 (e.g.
    /// 0,0.01,0.05,0.1,0.3,0.5,0.75,1); adaptive metrics keep --bins ranges.
    #[arg(long, value_name = "E0,E1,...,1", value_delimiter = ',', allow_hyphen_values = true)]
    pub edges: Option<Vec<f64>>,
    /// A calibrator saved by `calib fit`, applied before measuring.
    #[arg(long, value_name = "PARAMS.json")]
    pub calibrator: Option<PathBuf>,
    /// Clip p_y at E in the NLL (as scikit-learn's log_loss, E = 1e-15); default exact.
    #[arg(long, value_name = "E")]
    pub nll_eps: Option<f64>,
    /// calibration_nll, refinement_nll, calibration_brier, refinement_brier: cross-fit the
    /// temperature-and-mixture refit over K folds (row i in fold i mod K); default: refit on
    /// the evaluated rows.
    #[arg(long, value_name = "K")]
    pub split_fits: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Bootstrap B replicates (rows resampled with replacement) and report an interval for
    /// each metric.
    #[arg(long, value_name = "B")]
    pub bootstrap: Option<usize>,
    /// Coverage of the bootstrap intervals, in (0, 1).
    #[arg(long, value_name = "L", default_value_t = 0.9, requires = "bootstrap")]
    pub level: f64,
    /// Seed of the bootstrap resampling.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "bootstrap")]
    pub seed: u64,
    /// Bootstrap interval: percentile or basic (pivotal).
    #[arg(long, value_enum, default_value_t = BootstrapInterval::Percentile, requires = "bootstrap")]
    pub interval: BootstrapInterval,
    /// Read a .npy of scores R rows at a time, so memory does not grow with N (adaptive
    /// ranges take two or three passes over the file; metrics on sorted pairs are refused).
    /// Default: automatic for .npy files over 256 MiB when the metrics allow it.
    #[arg(long, value_name = "R")]
    pub chunk_rows: Option<usize>,
    /// Also write the evaluation state to FILE (`.json`, else a compact binary form), for
    /// `calib merge`: the one-pass sums (static bins, NLL, Brier, accuracy) and the first pass
    /// of the adaptive ranges (metrics on sorted pairs are left out).
    #[arg(long, value_name = "FILE")]
    pub save_state: Option<PathBuf>,
    /// Run a later pass of the adaptive ranges over this shard, resuming from the state FILE
    /// that `calib merge --save-state` wrote after the previous pass; writes the shard's state
    /// of the pass to --save-state. The metrics and bins are the state's.
    #[arg(
        long,
        value_name = "FILE",
        requires = "save_state",
        conflicts_with_all = ["metrics", "bins", "edges", "nll_eps", "bootstrap", "split_fits"]
    )]
    pub resume: Option<PathBuf>,
    /// With --resume: which shard DATA is, 1 for the first, in the order `calib merge` took
    /// the shards' first-pass states (default 1 when there is one shard).
    #[arg(long, value_name = "I", requires = "resume")]
    pub shard: Option<usize>,
}

/// `calib merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// States written by `calib eval --save-state`, one per shard.
    #[arg(value_name = "STATE", required = true)]
    pub states: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write the merged state to FILE; when adaptive ranges need another pass, the state
    /// that pass resumes from (`calib eval SHARD --resume FILE`).
    #[arg(long, value_name = "FILE")]
    pub save_state: Option<PathBuf>,
    /// The states are only some of the shards: merge them into --save-state without ending
    /// the pass of the adaptive ranges, for a later `calib merge` with the others.
    #[arg(long, requires = "save_state")]
    pub partial: bool,
}

/// `calib eval --interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BootstrapInterval {
    /// The replicates' quantiles.
    Percentile,
    /// The quantiles reflected about the estimate.
    Basic,
}
