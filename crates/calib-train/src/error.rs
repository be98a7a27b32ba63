//! The one error type of calib-train.

use calib_core::CalibError;
use thiserror::Error;

/// Everything that can go wrong when fitting, saving, loading or applying a calibrator.
///
/// Parameter errors (a setting that makes no sense) are separate from fit errors (the data or
/// the optimisation went wrong), as in linfa.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum FitError {
    /// The input was rejected by calib-core's validation (shapes, NaN, labels, ...).
    #[error(transparent)]
    Input(#[from] CalibError),
    /// A hyper-parameter or fit setting that makes no sense.
    #[error("invalid setting: {0}")]
    InvalidConfig(String),
    /// The input does not suit the method (binary scores given to a multiclass method, ...).
    #[error("{method} cannot be fitted on this input: {reason}")]
    UnsuitableInput {
        /// The method.
        method: String,
        /// Why.
        reason: String,
    },
    /// The problem is underdetermined and no regularisation was set.
    #[error(
        "{method} has {n_params} parameters but only {n_samples} samples: the fit is \
         underdetermined; {hint}"
    )]
    Underdetermined {
        /// The method.
        method: String,
        /// Number of free parameters.
        n_params: usize,
        /// Number of samples.
        n_samples: usize,
        /// What to do instead.
        hint: String,
    },
    /// The loss or its gradient became NaN or infinite during the fit.
    #[error("{what} became non-finite ({value}) at iteration {iteration}")]
    NonFinite {
        /// What turned non-finite (`loss`, `gradient`).
        what: String,
        /// The iteration (1-based; 0 is the starting point).
        iteration: usize,
        /// The value seen.
        value: f64,
    },
    /// A calibrator applied to logits with a different number of classes.
    #[error("calibrator was fitted for K = {expected} classes, input has K = {found}")]
    ClassMismatch {
        /// K the calibrator was fitted with.
        expected: usize,
        /// K of the input.
        found: usize,
    },
    /// A saved calibrator that cannot be read back.
    #[error("cannot read saved calibrator: {0}")]
    Format(String),
    /// The device failed (read-back, kernel).
    #[error("backend error: {0}")]
    Backend(String),
}

/// `Result` with [`FitError`].
pub type Result<T, E = FitError> = std::result::Result<T, E>;
