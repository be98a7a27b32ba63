//! Errors of reading rows from Arrow columns.

use thiserror::Error;

/// Why Arrow columns cannot be read as calib's rows.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RowsError {
    /// The score column is not a float or a list of floats.
    #[error("scores must be a float column or a list of floats, found {0}")]
    ScoreType(String),
    /// The label column is not an integer or a boolean.
    #[error("labels must be an integer or boolean column, found {0}")]
    LabelType(String),
    /// A null score row.
    #[error("row {row}: the scores are null")]
    NullScore {
        /// Row in the batch.
        row: usize,
    },
    /// A null inside a score list.
    #[error("a score list holds a null")]
    NullInList,
    /// A null label.
    #[error("row {row}: the label is null")]
    NullLabel {
        /// Row in the batch.
        row: usize,
    },
    /// The weight column is not numeric.
    #[error("weights must be a number column, found {0}")]
    WeightType(String),
    /// A null weight.
    #[error("row {row}: the weight is null")]
    NullWeight {
        /// Row in the batch.
        row: usize,
    },
    /// List rows of different lengths.
    #[error("row {row}: {found} scores, earlier rows {expected}")]
    RowLength {
        /// Row in the batch.
        row: usize,
        /// Its length.
        found: usize,
        /// The first row's length.
        expected: usize,
    },
}

/// Results of this crate's row readers.
pub type Result<T> = std::result::Result<T, RowsError>;
