//! [`RowChunk`]: rows read at once, whatever the file.

use crate::array::Scores;

/// Rows read at once from a table or a `.npy` (with its labels).
#[derive(Debug, Clone, PartialEq)]
pub struct RowChunk {
    /// Its first row in the file.
    pub start: usize,
    /// Scores `[n, C]` row-major.
    pub scores: Scores,
    /// C.
    pub n_columns: usize,
    /// Labels.
    pub labels: Vec<i64>,
    /// Per-row sample weights, from a table's weight column.
    pub weights: Option<Vec<f64>>,
}
