//! The `calib` binary: parses the command line and reports errors as one plain line.
//!
//! Exit codes: 0 on success, 2 on bad input or usage (one line on stderr, no backtrace).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A bug must still read as one line, not a backtrace; a decoder's panic that calib-io
    // turns into an error is that error's alone.
    std::panic::set_hook(Box::new(|info| {
        if calib_io::catching_decoder_panics() {
            return;
        }
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        eprintln!("error: internal error (please report): {what}");
    }));
    let cli = calib_cli::cli::Cli::parse();
    match calib_cli::commands::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
