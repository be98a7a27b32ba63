//! `calib sql`: a query with calib's aggregates, in this process or on `calib worker`s; and
//! `calib worker`, which serves them.

use std::path::Path;

use calib_datafusion::datafusion::error::DataFusionError;
use calib_datafusion::datafusion::prelude::SessionContext;
use calib_datafusion::distributed::{
    ClusterSettings, DataRoot, TlsCa, WorkerIdentity, WorkerSettings, WorkerToken,
};
use calib_datafusion::{distributed, sql};
use serde_json::Value;

use super::context::print;
use crate::cli::{Format, SqlArgs, WorkerArgs};
use crate::error::{CliError, Result};
use crate::table::Table;

pub(super) fn run(args: &SqlArgs) -> Result<()> {
    let ctx = context(args)?;
    if args.explain {
        let plan = if args.workers.is_empty() {
            sql::explain_blocking(&ctx, &args.query)
        } else {
            distributed::explain_blocking(&ctx, &args.query)
        };
        return print(&format!("{}\n", plan.map_err(query_error)?.trim_end()));
    }
    let limit = seconds("--timeout", args.timeout)?;
    let batches = sql::run_blocking_within(&ctx, &args.query, limit).map_err(query_error)?;
    let text = match args.format {
        Format::Json => {
            let rows: Vec<Value> =
                sql::to_json_rows(&batches).into_iter().map(Value::Object).collect();
            format!("{}\n", Value::Array(rows))
        }
        Format::Table | Format::Csv => {
            let (names, rows) = sql::to_text_rows(&batches).map_err(query_error)?;
            let mut table = Table::new(names);
            rows.into_iter().for_each(|r| table.push(r));
            if args.format == Format::Csv { table.to_csv() } else { table.render() }
        }
    };
    print(&text)
}

/// The session `args` ask for: local, or a coordinator over `--workers`.
fn context(args: &SqlArgs) -> Result<SessionContext> {
    if args.workers.is_empty() {
        if args.bytes_per_task.is_some() {
            return Err(CliError::Usage("--bytes-per-task applies with --workers only".into()));
        }
        return Ok(sql::local_context());
    }
    if args.bytes_per_task == Some(0) {
        return Err(CliError::Usage("--bytes-per-task must be at least 1".into()));
    }
    let ca = args.tls_ca.as_deref().map(read_ca).transpose()?;
    let urls = distributed::worker_urls(&args.workers, ca.is_some())
        .map_err(|e| CliError::Usage(one_line(&e)))?;
    if ca.is_none()
        && let Some(url) = urls.iter().find(|u| u.scheme() == "https")
    {
        return Err(CliError::Usage(format!(
            "worker {url}: an https:// worker needs --tls-ca CA to check its certificate"
        )));
    }
    let plain = urls.iter().find(|u| u.scheme() == "http" && !distributed::is_loopback(u));
    if let Some(url) = plain.filter(|_| !args.no_tls) {
        return Err(CliError::Usage(format!(
            "worker {}: traffic to a worker off loopback crosses the network readable, the token \
             included; give --tls-ca CA (the workers serving with --tls-cert), or --no-tls where \
             the network is encrypted already (docs/security.md)",
            url.authority()
        )));
    }
    let token = token(args.token_file.as_deref())?;
    let settings = ClusterSettings { token, ca, bytes_per_partition: args.bytes_per_task };
    distributed::cluster_context(urls, &settings).map_err(|e| CliError::Usage(one_line(&e)))
}

pub(super) fn worker(args: &WorkerArgs) -> Result<()> {
    let token = token(args.token_file.as_deref())?;
    if token.is_none() && !args.listen.ip().is_loopback() {
        return Err(CliError::Usage(format!(
            "calib worker on {}: a worker reachable from other machines needs a token, or \
             anyone who reaches the port runs queries on it; make one with `head -c 32 \
             /dev/urandom | base64 > worker.token && chmod 600 worker.token`, copy it to every \
             worker and the coordinator, and pass --token-file worker.token (or set {TOKEN_ENV})",
            args.listen
        )));
    }
    if args.tls_cert.is_none() && !args.no_tls && !args.listen.ip().is_loopback() {
        return Err(CliError::Usage(format!(
            "calib worker on {}: traffic off loopback crosses the network readable, the token \
             included; give --tls-cert CERT --tls-key KEY (a certificate for this host's name \
             or address; docs/security.md shows how to make a CA and one), or --no-tls where the \
             network is encrypted already",
            args.listen
        )));
    }
    for (flag, value) in [
        ("--memory-limit", args.memory_limit),
        ("--max-queries", args.max_queries),
        ("--max-message-size", args.max_message_size),
    ] {
        if value == Some(0) {
            return Err(CliError::Usage(format!("{flag} must be at least 1")));
        }
    }
    let identity = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(read_identity(cert, key)?),
        _ => None,
    };
    let settings = WorkerSettings {
        token,
        data_root: Some(data_root(args.data_root.as_deref())?),
        memory_limit: args.memory_limit,
        identity,
        ca: args.tls_ca.as_deref().map(read_ca).transpose()?,
        max_queries: args.max_queries,
        max_message_size: args.max_message_size,
        max_query_time: seconds("--query-timeout", args.query_timeout)?,
    };
    distributed::serve_blocking(args.listen, settings, |addr| {
        // The bound address on stdout (port 0 picks one), so scripts can read it.
        println!("calib worker listening on {addr}");
    })
    .map_err(|e| CliError::Usage(format!("calib worker on {}: {}", args.listen, one_line(&e))))
}

/// The worker's data root: `dir`, else the current directory; never `/`.
fn data_root(dir: Option<&Path>) -> Result<DataRoot> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| CliError::Usage(format!("calib worker: the current directory: {e}")))?,
    };
    let root = DataRoot::new(&dir).map_err(|e| CliError::input(dir.display(), one_line(&e)))?;
    if root.root().parent().is_none() {
        return Err(CliError::Usage(format!(
            "calib worker: a data root of {} would let every query read every file the \
             worker's user can; give the directory of the prediction files with --data-root DIR",
            root.root().display()
        )));
    }
    Ok(root)
}

/// `secs` of the option `flag` as a duration: a number of seconds above 0.
fn seconds(flag: &str, secs: Option<f64>) -> Result<Option<std::time::Duration>> {
    match secs {
        Some(secs) if !(secs.is_finite() && secs > 0.0 && secs < 1e12) => {
            Err(CliError::Usage(format!("{flag} {secs}: a number of seconds above 0")))
        }
        secs => Ok(secs.map(std::time::Duration::from_secs_f64)),
    }
}

/// The CA certificate in the PEM file `path`.
fn read_ca(path: &Path) -> Result<TlsCa> {
    let pem = std::fs::read(path)
        .map_err(|e| CliError::input(path.display(), format!("TLS CA file: {e}")))?;
    TlsCa::from_pem(pem).map_err(|e| CliError::input(path.display(), one_line(&e)))
}

/// The worker's certificate and key, from their PEM files.
fn read_identity(cert: &Path, key: &Path) -> Result<WorkerIdentity> {
    let read = |path: &Path, what: &str| {
        std::fs::read(path).map_err(|e| CliError::input(path.display(), format!("{what}: {e}")))
    };
    let (cert_pem, key_pem) = (read(cert, "TLS certificate")?, read(key, "TLS key")?);
    WorkerIdentity::from_pem(cert_pem, key_pem).map_err(|e| {
        let text = one_line(&e);
        let named = if text.contains("in the key file") {
            key.display().to_string()
        } else if text.contains("in the certificate file") {
            cert.display().to_string()
        } else {
            format!("{} and {}", cert.display(), key.display())
        };
        CliError::input(named, text)
    })
}

/// The environment variable that holds the workers' token when no `--token-file` is given.
const TOKEN_ENV: &str = "CALIB_WORKER_TOKEN";

/// The workers' token: from `file` if given, else from [`TOKEN_ENV`] if set, else none.
fn token(file: Option<&Path>) -> Result<Option<WorkerToken>> {
    let (text, origin) = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::input(path.display(), format!("token file: {e}")))?;
            (text, path.display().to_string())
        }
        None => match std::env::var(TOKEN_ENV) {
            Ok(text) => (text, TOKEN_ENV.to_string()),
            Err(_) => return Ok(None),
        },
    };
    WorkerToken::new(&text).map(Some).map_err(|e| CliError::input(origin, one_line(&e)))
}

/// A query error as a bad-input error on one line.
fn query_error(e: DataFusionError) -> CliError {
    CliError::input("query", one_line(&e))
}

fn one_line(e: &DataFusionError) -> String {
    e.to_string().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
