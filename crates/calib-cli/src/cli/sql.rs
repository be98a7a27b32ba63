//! The arguments of `calib sql` and `calib worker`.

use clap::Args;

use super::Format;

/// `calib sql`.
#[derive(Debug, Clone, Args)]
pub struct SqlArgs {
    /// The query; quoted paths and globs are tables (`FROM 'preds/*.parquet'`).
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// Output format: an aligned table, CSV, or a JSON array of row objects.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Run on these `calib worker`s (`host:port`, comma-separated) instead of in this
    /// process. Every worker must see the files at the same paths.
    #[arg(long, value_name = "ADDRS", value_delimiter = ',')]
    pub workers: Vec<String>,
    /// Bytes of file per scan task on workers (smaller spreads small files over more tasks).
    #[arg(long, value_name = "BYTES")]
    pub bytes_per_task: Option<usize>,
    /// Print the plan instead of running it (with --workers: its stages and tasks).
    #[arg(long)]
    pub explain: bool,
    /// Give the query up after this many seconds (its tasks on the workers with it), with an
    /// error saying so. Default: no limit.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// The workers' shared token, read from this file (default: `CALIB_WORKER_TOKEN`), sent
    /// with every call to them.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
}

/// `calib worker`.
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    /// Address to listen on (port 0 picks a free port, printed on stdout).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    pub listen: std::net::SocketAddr,
    /// The cluster's shared token, read from this file (default: `CALIB_WORKER_TOKEN`): only
    /// calls that carry it are served. Required off loopback.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// The only directory whose files received queries may read (symlinks followed; default:
    /// the current directory; never `/`).
    #[arg(long, value_name = "DIR")]
    pub data_root: Option<std::path::PathBuf>,
    /// The memory each query may hold (aggregate states, sorts), in bytes; past it the query
    /// fails with "Resources exhausted". Default: no limit.
    #[arg(long, value_name = "BYTES")]
    pub memory_limit: Option<usize>,
}
