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
    /// Reach the workers through TLS, checking their certificates against this CA (PEM).
    /// Required for workers off loopback, unless --no-tls.
    #[arg(long, value_name = "CA")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Reach workers off loopback in plain text (for a network that is encrypted already: a
    /// VPN, a service mesh, an SSH tunnel).
    #[arg(long, conflicts_with = "tls_ca")]
    pub no_tls: bool,
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
    /// Serve through TLS with this certificate (PEM: this worker's first, then any
    /// intermediates). Required off loopback, unless --no-tls.
    #[arg(long, value_name = "CERT", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "KEY", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Check the certificates of the other workers this one calls against this CA (PEM).
    #[arg(long, value_name = "CA")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Serve off loopback in plain text (for a network that is encrypted already: a VPN, a
    /// service mesh, an SSH tunnel). The token is still required.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub no_tls: bool,
    /// Run at most this many queries at once; a task of another query is refused with an
    /// error saying so. Default: no limit.
    #[arg(long, value_name = "N")]
    pub max_queries: Option<usize>,
    /// The longest gRPC message (a query plan) this worker reads, in bytes. Default: 64 MiB.
    #[arg(long, value_name = "BYTES")]
    pub max_message_size: Option<usize>,
    /// End a query's work here after this many seconds from its first call, with an error
    /// saying so. Default: no limit.
    #[arg(long, value_name = "SECS")]
    pub query_timeout: Option<f64>,
}
