//! [`Source`]: an opened table, whatever its format: the columns found and their batches.

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;

use super::columns::Layout;

/// Record batches in file order, projected to the layout's columns where the format allows.
pub(super) type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// A table opened for reading.
pub(super) struct Source {
    /// Its score and label columns.
    pub layout: Layout,
    /// Its batches.
    pub batches: Batches,
    /// N, when the file says (Parquet and IPC files do; IPC streams do not).
    pub n_rows: Option<usize>,
}
