//! What a computation hands back to Python: its value, calib's error as a Python exception, or
//! a panic caught before it crosses the boundary.

use std::panic::{AssertUnwindSafe, catch_unwind};

use calib_cli::CliError;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// A failed computation: bad input (`ValueError`) or a file that cannot be read or written
/// (`OSError`), each with calib's one-line message.
#[derive(Debug)]
pub(crate) enum Failure {
    /// `ValueError`.
    Value(String),
    /// `OSError`.
    Os(String),
}

/// The result of a computation.
pub(crate) type Outcome<T> = std::result::Result<T, Failure>;

impl From<CliError> for Failure {
    fn from(e: CliError) -> Self {
        match e {
            CliError::Output { .. } => Self::Os(e.to_string()),
            other => Self::Value(other.to_string()),
        }
    }
}

impl From<calib_core::CalibError> for Failure {
    fn from(e: calib_core::CalibError) -> Self {
        Self::Value(e.to_string())
    }
}

impl From<calib_train::FitError> for Failure {
    fn from(e: calib_train::FitError) -> Self {
        Self::Value(e.to_string())
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Value(m) => PyValueError::new_err(m),
            Failure::Os(m) => PyOSError::new_err(m),
        }
    }
}

/// Runs `work` with the GIL released; a panic in it becomes a `RuntimeError`.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Outcome<T> + Send,
) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(failure)) => Err(failure.into()),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(PyRuntimeError::new_err(format!(
                "calib: internal error (please report it): {message}"
            )))
        }
    }
}
