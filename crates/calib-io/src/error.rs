//! [`IoError`]: why a file cannot be read or written, each as one plain line naming the file.

use thiserror::Error;

/// What can go wrong reading or writing a file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IoError {
    /// A file that cannot be read or is malformed; names the file (and array) and the problem.
    #[error("{origin}: {message}")]
    Input {
        /// The file (and array key) it concerns.
        origin: String,
        /// What is wrong.
        message: String,
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

impl IoError {
    /// An input error about `origin`.
    pub fn input(origin: impl std::fmt::Display, message: impl Into<String>) -> Self {
        Self::Input { origin: origin.to_string(), message: message.into() }
    }

    /// An output error for `path`.
    pub fn output(path: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self::Output { path: path.to_string(), message: message.to_string() }
    }
}

/// `Result` with [`IoError`].
pub type Result<T> = std::result::Result<T, IoError>;
