//! The one error type of calib-core.

use thiserror::Error;

/// Everything that can go wrong when measuring calibration.
///
/// Input errors name what is wrong and the first offending position (0-based row and, where it
/// applies, column), so the caller can find it in their data.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CalibError {
    /// The score matrix has no rows.
    #[error("empty input: no samples (N = 0)")]
    Empty,
    /// Fewer than two classes for a multiclass input.
    #[error("need at least 2 classes, got K = {n_classes}")]
    TooFewClasses {
        /// Number of columns found.
        n_classes: usize,
    },
    /// Scores and labels disagree on N.
    #[error("shape mismatch: {n_scores} score rows but {n_labels} labels")]
    LengthMismatch {
        /// Rows of the score matrix.
        n_scores: usize,
        /// Length of the label vector.
        n_labels: usize,
    },
    /// A score is NaN or infinite.
    #[error("non-finite value {value} at row {row}, column {column}")]
    NonFinite {
        /// Row of the first offending value.
        row: usize,
        /// Column of the first offending value.
        column: usize,
        /// The value itself (NaN or ±inf).
        value: f64,
    },
    /// A sample weight that is negative, NaN or infinite.
    #[error("weight {value} at row {row}: weights must be finite and non-negative")]
    BadWeight {
        /// Row of the first offending weight.
        row: usize,
        /// The weight itself.
        value: f64,
    },
    /// A label outside `[0, K)`.
    #[error("label {label} at row {row} is out of range [0, {n_classes})")]
    LabelOutOfRange {
        /// Row of the first offending label.
        row: usize,
        /// The label.
        label: i64,
        /// Number of classes K.
        n_classes: usize,
    },
    /// A probability outside `[0, 1]`.
    #[error("probability {value} at row {row}, column {column} is outside [0, 1]")]
    ProbabilityOutOfRange {
        /// Row of the first offending value.
        row: usize,
        /// Column of the first offending value.
        column: usize,
        /// The value.
        value: f64,
    },
    /// A probability row that does not sum to one.
    #[error("probabilities in row {row} sum to {sum}, not 1 (tolerance {tolerance})")]
    RowSum {
        /// Row of the first offending row sum.
        row: usize,
        /// The sum found.
        sum: f64,
        /// The tolerance allowed.
        tolerance: f64,
    },
    /// A configuration value that makes no sense (zero bins, unsorted edges, ...).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// Two statistics that cannot be merged (different bins or groups).
    #[error("cannot merge statistics: {0}")]
    Incompatible(String),
    /// The metric asked for needs more than the input has (e.g. per-class scores of binary input).
    #[error("metric `{metric}` is not defined for this input: {reason}")]
    Unsupported {
        /// Name of the metric.
        metric: String,
        /// Why.
        reason: String,
    },
    /// The backend failed to execute or read back a tensor.
    #[error("backend error: {0}")]
    Backend(String),
}

/// Result alias used across calib-core.
pub type Result<T, E = CalibError> = core::result::Result<T, E>;
