//! [`CliError`]: everything the command line reports, each as one plain line.

use calib_core::CalibError;
use calib_train::FitError;
use thiserror::Error;

/// What can go wrong in a `calib` command. Every variant is bad input or an environment the user
/// can fix, so the binary exits with code 2 and prints the message on one line.
#[derive(Debug, Error)]
pub enum CliError {
    /// A file that cannot be read or is malformed; names the file (and array) and the problem.
    #[error("{origin}: {message}")]
    Input {
        /// The file (and array key) it concerns.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// A command-line setting that makes no sense.
    #[error("{0}")]
    Usage(String),
    /// calib-core rejected the input or failed (validation names the first offending row).
    #[error("{context}: {source}")]
    Core {
        /// What was being done (usually the data file).
        context: String,
        /// The error.
        source: CalibError,
    },
    /// calib-train failed to fit, load or apply a calibrator.
    #[error("{context}: {source}")]
    Train {
        /// What was being done.
        context: String,
        /// The error.
        source: FitError,
    },
    /// Writing an output file failed (nothing was left half-written).
    #[error("cannot write {path}: {message}")]
    Output {
        /// The output path.
        path: String,
        /// Why.
        message: String,
    },
}

impl CliError {
    /// An input error about `origin`.
    pub fn input(origin: impl std::fmt::Display, message: impl Into<String>) -> Self {
        Self::Input { origin: origin.to_string(), message: message.into() }
    }

    /// A calib-core error while doing `context`.
    pub fn core(context: impl std::fmt::Display, source: CalibError) -> Self {
        Self::Core { context: context.to_string(), source }
    }

    /// A calib-train error while doing `context`.
    pub fn train(context: impl std::fmt::Display, source: FitError) -> Self {
        match source {
            FitError::Input(source) => Self::core(context, source),
            source => Self::Train { context: context.to_string(), source },
        }
    }

    /// An output error for `path`.
    pub fn output(path: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self::Output { path: path.to_string(), message: message.to_string() }
    }
}

impl From<calib_io::IoError> for CliError {
    fn from(e: calib_io::IoError) -> Self {
        match e {
            calib_io::IoError::Input { origin, message } => Self::Input { origin, message },
            calib_io::IoError::Output { path, message } => Self::Output { path, message },
        }
    }
}

/// `Result` with [`CliError`].
pub type Result<T> = std::result::Result<T, CliError>;

/// The message of a configuration or backend error, without its category prefix.
pub(crate) fn plain(e: CalibError) -> String {
    match e {
        CalibError::InvalidConfig(m) | CalibError::Backend(m) => m,
        other => other.to_string(),
    }
}
