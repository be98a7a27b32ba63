//! One file per command; [`run`] dispatches.

mod apply;
mod arena;
mod bench;
mod compare;
mod context;
mod eval;
mod fit;
mod merge;
mod plot;
#[cfg(feature = "sql")]
mod sql;
mod study;

pub use context::Context;

use crate::cli::{Cli, Command};
use crate::error::{CliError, Result, plain};

/// Runs the command `cli` names.
///
/// # Errors
/// [`CliError`] for bad input, unknown backends and failed writes.
pub fn run(cli: &Cli) -> Result<()> {
    match cli.threads {
        Some(0) => return Err(CliError::Usage("--threads must be at least 1".into())),
        Some(n) => calib_kernels::set_threads(n),
        None => {}
    }
    if cli.trace {
        calib_kernels::trace::set_tracing(true);
    }
    let out = run_command(cli);
    if calib_kernels::trace::enabled() {
        crate::trace::print();
    }
    out
}

fn run_command(cli: &Cli) -> Result<()> {
    match &cli.command {
        Command::Bench(args) => return bench::run(args, cli.quiet), // picks its own backends
        Command::Sql(args) => return sql::run(args),                // DataFusion's host engine
        Command::Worker(args) => return sql::worker(args),
        _ => {}
    }
    let device =
        calib_core::backend::open_device(&cli.backend).map_err(|e| CliError::Usage(plain(e)))?;
    let ctx = Context { device, backend: cli.backend.clone(), quiet: cli.quiet };
    match &cli.command {
        Command::Eval(args) => eval::run(args, &ctx),
        Command::Fit(args) => fit::run(args, &ctx),
        Command::Apply(args) => apply::run(args, &ctx),
        Command::Plot(args) => plot::run(args, &ctx),
        Command::Compare(args) => compare::run(args, &ctx),
        Command::Study(args) => study::run(args, &ctx),
        Command::Arena(args) => arena::run(args, &ctx),
        Command::Merge(args) => merge::run(args, &ctx),
        Command::Bench(_) | Command::Sql(_) | Command::Worker(_) => unreachable!("handled above"),
    }
}

/// `calib sql` and `calib worker` in a build without DataFusion: one line saying how to get them.
#[cfg(not(feature = "sql"))]
mod sql {
    use crate::cli::{SqlArgs, WorkerArgs};
    use crate::error::{CliError, Result};

    fn missing(command: &str) -> CliError {
        CliError::Usage(format!(
            "`calib {command}` is not in this build; install it with \
             `cargo install --path crates/calib-cli --features sql`"
        ))
    }

    pub(super) fn run(_: &SqlArgs) -> Result<()> {
        Err(missing("sql"))
    }

    pub(super) fn worker(_: &WorkerArgs) -> Result<()> {
        Err(missing("worker"))
    }
}
