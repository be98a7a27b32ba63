//! `calib sql`: a query with calib's aggregates, in this process or on `calib worker`s; and
//! `calib worker`, which serves them.

use calib_datafusion::datafusion::error::DataFusionError;
use calib_datafusion::datafusion::prelude::SessionContext;
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
    let batches = sql::run_blocking(&ctx, &args.query).map_err(query_error)?;
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
    let urls =
        distributed::worker_urls(&args.workers).map_err(|e| CliError::Usage(one_line(&e)))?;
    distributed::cluster_context(urls, args.bytes_per_task)
        .map_err(|e| CliError::Usage(one_line(&e)))
}

pub(super) fn worker(args: &WorkerArgs) -> Result<()> {
    distributed::serve_blocking(args.listen, |addr| {
        // The bound address on stdout (port 0 picks one), so scripts can read it.
        println!("calib worker listening on {addr}");
    })
    .map_err(|e| CliError::Usage(format!("calib worker on {}: {}", args.listen, one_line(&e))))
}

/// A query error as a bad-input error on one line.
fn query_error(e: DataFusionError) -> CliError {
    CliError::input("query", one_line(&e))
}

fn one_line(e: &DataFusionError) -> String {
    e.to_string().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
