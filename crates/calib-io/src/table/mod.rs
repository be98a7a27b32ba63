//! Parquet and Arrow IPC tables (`.parquet`; `.arrow`, `.feather`, `.ipc` files or streams),
//! read batch by batch: a Parquet file's row groups decoded on several threads and handed out
//! in file order, so evaluating a table larger than memory needs memory for a few batches per
//! thread. [`columns`] says which columns are read; [`rows`] what they mean (shared with
//! calib-datafusion's SQL aggregates, so a table means the same thing to both).

pub mod columns;
mod decoder_panics;
mod ipc;
mod ipc_claims;
mod parquet;
pub mod rows;
mod rows_error;
mod source;

use std::path::Path;

use arrow_array::RecordBatch;

use crate::array::{Array, Scores, Values};
use crate::chunk::RowChunk;
use crate::error::{IoError, Result};
use columns::{Layout, TableColumns};
pub use decoder_panics::catching_decoder_panics;
use ipc::open_ipc;
use parquet::open_parquet;
use rows::{Rows, gather, gather_columns, gather_weights};
pub use rows_error::RowsError;
use source::Batches;

/// Whether `path` names a table file by its extension.
pub fn is_table(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    matches!(ext.as_deref(), Some("parquet" | "arrow" | "arrows" | "feather" | "ipc"))
}

/// A table read in row chunks.
pub struct TableChunks {
    origin: String,
    layout: Layout,
    batches: Batches,
    pending: Option<RecordBatch>,
    next_row: usize,
    /// N, when the file says (Parquet and IPC files do; IPC streams do not).
    pub n_rows: Option<usize>,
}

impl TableChunks {
    /// Opens the table at `path` for the columns `request` asks for, to be read in chunks of
    /// at most `rows` rows.
    ///
    /// # Errors
    /// [`IoError::Input`] for a missing or unreadable file, and for score or label columns
    /// that are missing or of the wrong type (naming the columns there are).
    pub fn open(path: &Path, request: &TableColumns, rows: usize) -> Result<Self> {
        let origin = path.display().to_string();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let source = if ext.eq_ignore_ascii_case("parquet") {
            open_parquet(path, request, rows)
        } else {
            open_ipc(path, request)
        };
        let source = source.map_err(|e| IoError::input(&origin, e))?;
        Ok(Self {
            origin,
            layout: source.layout,
            batches: source.batches,
            pending: None,
            next_row: 0,
            n_rows: source.n_rows,
        })
    }

    /// The next chunk of at most `rows` rows: its first row, scores `[n, C]`, C, labels and
    /// the weights of the weight column, if asked for.
    ///
    /// # Errors
    /// [`IoError::Input`] for unreadable batches, nulls, ragged score lists (naming the row).
    pub fn next_chunk(&mut self, rows: usize) -> Result<Option<RowChunk>> {
        let batch = loop {
            let batch = match self.pending.take() {
                Some(b) => b,
                None => match self.batches.next() {
                    None => return Ok(None),
                    Some(b) => b.map_err(|e| IoError::input(&self.origin, e.to_string()))?,
                },
            };
            if batch.num_rows() > 0 {
                break batch;
            }
        };
        let rows = rows.max(1);
        let batch = if batch.num_rows() > rows {
            self.pending = Some(batch.slice(rows, batch.num_rows() - rows));
            batch.slice(0, rows)
        } else {
            batch
        };
        let start = self.next_row;
        let gathered =
            self.gather(&batch).map_err(|e| IoError::input(&self.origin, shift_row(e, start)))?;
        self.next_row += batch.num_rows();
        let (Rows { scores, n_columns, labels }, weights) = gathered;
        Ok(Some(RowChunk { start, scores, n_columns, labels, weights }))
    }

    /// The chunk's rows and weights.
    fn gather(
        &self,
        batch: &RecordBatch,
    ) -> std::result::Result<(Rows, Option<Vec<f64>>), RowsError> {
        let column = |name: &str| batch.column_by_name(name).expect("projected").clone();
        let weights = self.layout.weights.as_deref().map(|w| gather_weights(column(w).as_ref()));
        Ok((self.gather_rows(batch)?, weights.transpose()?))
    }

    fn gather_rows(&self, batch: &RecordBatch) -> std::result::Result<Rows, RowsError> {
        let column = |name: &str| batch.column_by_name(name).expect("projected").clone();
        let labels = column(&self.layout.label);
        match &self.layout.scores[..] {
            [one] => gather(column(one).as_ref(), labels.as_ref(), None),
            many => {
                let columns: Vec<_> = many.iter().map(|n| column(n)).collect();
                let refs: Vec<&dyn arrow_array::Array> =
                    columns.iter().map(|c| c.as_ref()).collect();
                gather_columns(&refs, labels.as_ref(), None)
            }
        }
    }
}

/// The whole table at `path` as a score array (`[N, C]`, or `[N]` for one column), a label
/// array and the weights of the weight column, if asked for.
///
/// # Errors
/// As [`TableChunks::open`] and [`TableChunks::next_chunk`]; an empty table.
pub fn read_table(path: &Path, request: &TableColumns) -> Result<(Array, Array, Option<Vec<f64>>)> {
    let mut chunks = TableChunks::open(path, request, 1 << 16)?;
    let origin = chunks.origin.clone();
    let (mut f32s, mut f64s, mut labels, mut width) = (Vec::new(), Vec::new(), Vec::new(), None);
    let mut weights = chunks.layout.weights.as_ref().map(|_| Vec::new());
    while let Some(chunk) = chunks.next_chunk(1 << 16)? {
        width.get_or_insert(chunk.n_columns);
        // Every batch has the schema's type; should f64 rows follow f32 ones, widen in order.
        match chunk.scores {
            Scores::F32(v) if f64s.is_empty() => f32s.extend(v),
            Scores::F32(v) => f64s.extend(v.into_iter().map(f64::from)),
            Scores::F64(v) => {
                f64s.extend(f32s.drain(..).map(f64::from));
                f64s.extend(v);
            }
        }
        labels.extend(chunk.labels);
        if let (Some(all), Some(w)) = (&mut weights, chunk.weights) {
            all.extend(w);
        }
    }
    let c = width.ok_or_else(|| IoError::input(&origin, "the table has no rows"))?;
    let n = labels.len();
    let values = if f64s.is_empty() { Values::F32(f32s) } else { Values::F64(f64s) };
    let shape = if c == 1 { vec![n] } else { vec![n, c] };
    let dtype = if matches!(values, Values::F32(_)) { "float32" } else { "float64" };
    let scores = Array::new(format!("{origin}:scores"), dtype.into(), shape, values)?;
    let labels =
        Array::new(format!("{origin}:labels"), "int64".into(), vec![n], Values::Int(labels))?;
    Ok((scores, labels, weights))
}

/// A row error of a chunk starting at `start`, with the row in the whole table.
fn shift_row(e: RowsError, start: usize) -> String {
    match e {
        RowsError::NullScore { row } => RowsError::NullScore { row: row + start }.to_string(),
        RowsError::NullLabel { row } => RowsError::NullLabel { row: row + start }.to_string(),
        RowsError::NullWeight { row } => RowsError::NullWeight { row: row + start }.to_string(),
        RowsError::RowLength { row, found, expected } => {
            RowsError::RowLength { row: row + start, found, expected }.to_string()
        }
        other => other.to_string(),
    }
}
