//! The command-line interface (clap derive): commands, arguments and their defaults.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::io::{DataSpec, ScoreInput};

mod eval;
mod fit;
mod plot;
mod sql;

pub use eval::{BootstrapInterval, EvalArgs, MergeArgs};
pub use fit::{
    FitArgs, FitCommand, FitInput, FitMethod, FitParts, MethodOptions, default_options,
    options_command, parse_options,
};
pub use plot::PlotArgs;
pub use sql::{SqlArgs, WorkerArgs};

/// Measure and fix the calibration of classifier probabilities.
#[derive(Debug, Parser)]
#[command(name = "calib", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Backend to compute on: flex, ndarray, wgpu or cuda (those compiled in).
    #[arg(long, global = true, default_value = "flex", value_name = "B")]
    pub backend: String,
    /// No progress bars or notes on stderr (errors and warnings still show).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Threads for calib's CPU passes and file decoding (default: `CALIB_THREADS`, else
    /// `RAYON_NUM_THREADS`, else the cores the process may run on). Results do not depend on
    /// it.
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
    /// Print where each pass's time went on stderr: wall, parallel and serial time, each
    /// thread's busy time, the serial fraction and Amdahl's prediction (also `CALIB_TRACE=1`).
    #[arg(long, global = true)]
    pub trace: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compute calibration metrics of one split, optionally after a fitted calibrator.
    Eval(EvalArgs),
    /// Fit a calibrator on one split (default: val) and save it as JSON.
    Fit(FitArgs),
    /// Apply a saved calibrator and write calibrated probabilities (and logits) as .npy/.npz.
    Apply(ApplyArgs),
    /// Draw a reliability diagram (SVG or PNG).
    Plot(PlotArgs),
    /// Fit every method on val and compare all metrics on test, uncalibrated first.
    Compare(CompareArgs),
    /// Time the metric set and the temperature fit per backend.
    Bench(BenchArgs),
    /// Nixon et al.'s metric study: every method fitted on val, ranked on test under all 32
    /// GCE variants at several bin counts, with the rank correlations per metric property.
    Study(StudyArgs),
    /// A calibration benchmark: every method on every experiment (each a val/test dump),
    /// each method's mean win rate with bootstrap intervals and its mean improvement.
    Arena(ArenaArgs),
    /// Merge evaluation states of shards (`calib eval --save-state`) into the metrics of all
    /// their rows.
    Merge(MergeArgs),
    /// Run SQL with calib's aggregates (`calib_ece(logits, label)`, ...) over Parquet/Arrow
    /// files named in the query (`FROM 'preds/*.parquet'`), here or on `calib worker`s (a
    /// build with feature `sql`).
    Sql(SqlArgs),
    /// Serve a datafusion-distributed worker that runs `calib sql --workers` queries (a build
    /// with feature `sql`).
    Worker(WorkerArgs),
}

/// Where the data is and how to read it.
#[derive(Debug, Clone, Args)]
pub struct DataArgs {
    /// Data file: .npz, .npy (with --labels), .safetensors, .csv, .parquet or Arrow IPC
    /// (.arrow, .feather, .ipc).
    #[arg(value_name = "DATA")]
    pub data: PathBuf,
    /// Split to read (`{split}_logits`, `{split}_labels`); files without splits ignore the
    /// default.
    #[arg(long, value_name = "S")]
    pub split: Option<String>,
    /// Key of the score array (overrides the split rule).
    #[arg(long, value_name = "KEY")]
    pub logits_key: Option<String>,
    /// Key of the label array (overrides the split rule).
    #[arg(long, value_name = "KEY")]
    pub labels_key: Option<String>,
    /// Labels as a separate .npy file (required for .npy data).
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// What the scores are.
    #[arg(long, value_enum, default_value_t = ScoreInput::Logits)]
    pub input: ScoreInput,
    /// Per-row sample weights, a 1-D .npy with one value per row of each split read (finite,
    /// non-negative, at least one positive): every metric, bootstrap and fit weighs row i by
    /// w_i; whole numbers mean repeated rows.
    #[arg(long, value_name = "W.npy", conflicts_with = "weights_key")]
    pub weights: Option<PathBuf>,
    /// Key of the weights array in the data file: `{split}_KEY` when the file has it, else
    /// `KEY` (.npz and .safetensors); a table's number column `KEY` (Parquet, Arrow).
    #[arg(long, value_name = "KEY")]
    pub weights_key: Option<String>,
}

impl DataArgs {
    /// The data spec these arguments describe.
    pub fn spec(&self) -> DataSpec {
        DataSpec {
            path: self.data.clone(),
            split: self.split.clone(),
            logits_key: self.logits_key.clone(),
            labels_key: self.labels_key.clone(),
            labels_path: self.labels.clone(),
            input: self.input,
            weights_path: self.weights.clone(),
            weights_key: self.weights_key.clone(),
        }
    }
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Format {
    /// Aligned text.
    #[default]
    Table,
    /// One JSON object.
    Json,
    /// Comma-separated values with a header.
    Csv,
}

/// `--bandwidth-rule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BandwidthRuleArg {
    /// The leave-one-out log-likelihood's minimiser.
    Loo,
    /// Silverman's rule of thumb.
    Silverman,
}

/// `--scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScaleArg {
    /// The scores' log-odds.
    Logit,
    /// The scores, reflected at 0 and 1.
    Probability,
}

/// `calib apply`.
#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    /// A calibrator saved by `calib fit`.
    #[arg(value_name = "PARAMS.json")]
    pub params: PathBuf,
    /// The data (default split: test).
    #[command(flatten)]
    pub data: DataArgs,
    /// Output: .npz (`probs`, `logits` where the method has them, `pred` and `confidence`
    /// for top-label calibrators, `labels`) or .npy (probs). A top-label calibrator's `probs`
    /// floor the confidence at 1/K; its prediction and calibrated confidence are `pred` and
    /// `confidence`.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Float type of the written scores (default: the input's).
    #[arg(long, value_enum)]
    pub dtype: Option<DtypeArg>,
}

/// `--dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DtypeArg {
    /// float32.
    F32,
    /// float64.
    F64,
}

/// `calib compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The data (fitted on --fit-split, measured on --split).
    #[command(flatten)]
    pub data: DataArgs,
    /// Split to fit the calibrators on.
    #[arg(long, value_name = "S", default_value = "val")]
    pub fit_split: String,
    /// Methods, comma-separated, or `all` (every method that applies to the input). Default:
    /// temperature, vector, matrix, dirichlet, sms (platt, affine, isotonic, histogram, beta
    /// for binary input).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub methods: Option<Vec<String>>,
    /// Bins of the even-bin metrics and ranges of the adaptive ones.
    #[arg(long, value_name = "B", default_value_t = 15)]
    pub bins: usize,
    /// How the binary maps calibrate K-class input: one map per class, rows renormalised
    /// (may change predictions), or one map per predicted class on the top-label confidence
    /// (keeps every prediction; the metrics read its predictions and confidences).
    #[arg(long, value_enum, default_value_t = ReductionArg::OneVsRest)]
    pub reduction: ReductionArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `--reduction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReductionArg {
    /// One map per class on its probability column, rows renormalised.
    OneVsRest,
    /// One map per predicted class on the top-label confidence.
    TopLabel,
}

/// `calib study`.
#[derive(Debug, Clone, Args)]
pub struct StudyArgs {
    /// The data (fitted on --fit-split, measured on --split).
    #[command(flatten)]
    pub data: DataArgs,
    /// Split to fit the calibrators on.
    #[arg(long, value_name = "S", default_value = "val")]
    pub fit_split: String,
    /// Methods, comma-separated, or `all` (the default: every method that applies).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub methods: Option<Vec<String>>,
    /// Bin counts (even bins and adaptive ranges), comma-separated.
    #[arg(long, value_name = "B,...", value_delimiter = ',', default_value = "10,20,30,40,50")]
    pub bins: Vec<usize>,
    /// Also draw the ranks as a heatmap (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Output format (csv: one row per method, bin count and variant).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `calib arena`.
#[derive(Debug, Clone, Args)]
pub struct ArenaArgs {
    /// Experiments: val/test dumps (.npz, .safetensors, .parquet, Arrow IPC), or folders of
    /// them.
    #[arg(value_name = "DIR|FILE", required = true)]
    pub paths: Vec<PathBuf>,
    /// Split the calibrators are fitted on (measured on test).
    #[arg(long, value_name = "S", default_value = "val")]
    pub fit_split: String,
    /// What the scores are.
    #[arg(long, value_enum, default_value_t = ScoreInput::Logits)]
    pub input: ScoreInput,
    /// Per-row sample weights, a 1-D .npy with one value per row of each split read (so
    /// for one experiment); fits and metrics weigh row i by w_i.
    #[arg(long, value_name = "W.npy", conflicts_with = "weights_key")]
    pub weights: Option<PathBuf>,
    /// Key of the weights array in each experiment's file: `{split}_KEY` when the file has
    /// it, else `KEY`.
    #[arg(long, value_name = "KEY")]
    pub weights_key: Option<String>,
    /// Methods, comma-separated, or `all` (the default: every method that applies to each
    /// experiment).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub methods: Option<Vec<String>>,
    /// Metrics, comma-separated; the first ranks the methods (NLL floored at 1e-30, as
    /// CalArena).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "nll,brier,ece,accuracy"
    )]
    pub metrics: Vec<String>,
    /// Bins of the even-bin metrics and ranges of the adaptive ones.
    #[arg(long, value_name = "B", default_value_t = 15)]
    pub bins: usize,
    /// How the binary maps calibrate K-class input.
    #[arg(long, value_enum, default_value_t = ReductionArg::OneVsRest)]
    pub reduction: ReductionArg,
    /// Bootstrap resamples of the experiments for the win-rate intervals.
    #[arg(long, value_name = "B", default_value_t = 1000)]
    pub bootstrap: usize,
    /// Coverage of the intervals, in (0, 1).
    #[arg(long, value_name = "L", default_value_t = 0.9)]
    pub level: f64,
    /// Seed of the resamples.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Also draw the win rates with their intervals (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Output format (csv: one row per experiment, method and metric, then the standings).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `calib bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Backends, comma-separated (default: every one compiled in that has a device here).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub backends: Option<Vec<String>>,
    /// Sizes NxK, comma-separated.
    #[arg(
        long,
        value_name = "NxK,...",
        value_delimiter = ',',
        default_value = "10000x10,10000x100"
    )]
    pub sizes: Vec<String>,
    /// Timed repetitions per cell (the median is reported).
    #[arg(long, value_name = "R", default_value_t = 3)]
    pub repeats: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}
