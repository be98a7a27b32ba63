//! Row chunks of a `.npy` score matrix, read as a stream, so evaluating a file larger than memory
//! needs memory for one chunk only (static-bin metrics; see `calib_core::StreamingEvaluation`).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use npyz::{DType, NpyFile, NpyReader, Order, TypeChar};

use super::array::Scores;
use crate::error::{CliError, Result};

enum Reader {
    F16(NpyReader<half::f16, BufReader<File>>),
    F32(NpyReader<f32, BufReader<File>>),
    F64(NpyReader<f64, BufReader<File>>),
}

/// A `.npy` of float scores `[N, C]` (or `[N]`), read `rows` at a time.
pub struct NpyChunks {
    origin: String,
    reader: Reader,
    /// N.
    pub n_rows: usize,
    /// C (1 for a 1-D array).
    pub n_columns: usize,
    next_row: usize,
}

impl NpyChunks {
    /// Opens `path` for chunked reading.
    ///
    /// # Errors
    /// [`CliError::Input`] when the file is missing or not a C-order float array of rank 1 or 2.
    pub fn open(path: &Path) -> Result<Self> {
        let origin = path.display().to_string();
        let file = File::open(path).map_err(|e| CliError::input(&origin, e.to_string()))?;
        let npy = NpyFile::new(BufReader::new(file))
            .map_err(|e| CliError::input(&origin, format!("not a valid .npy file ({e})")))?;
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let (n_rows, n_columns) = match shape[..] {
            [n] => (n, 1),
            [n, k] => (n, k),
            _ => {
                return Err(CliError::input(
                    &origin,
                    format!("scores must be 1-D or 2-D, found shape {shape:?}"),
                ));
            }
        };
        if n_rows == 0 || n_columns == 0 {
            return Err(CliError::input(&origin, format!("no scores (shape {shape:?})")));
        }
        if npy.order() == Order::Fortran && n_columns > 1 {
            return Err(CliError::input(
                &origin,
                "column-major (Fortran-order) arrays cannot be read in row chunks",
            ));
        }
        let ts = match npy.dtype() {
            DType::Plain(ts) if ts.type_char() == TypeChar::Float => ts,
            other => {
                return Err(CliError::input(
                    &origin,
                    format!("scores must be float16, float32 or float64, found {other:?}"),
                ));
            }
        };
        let bad = |e: npyz::DTypeError| CliError::input(&origin, e.to_string());
        let reader = match ts.size_field() {
            2 => Reader::F16(npy.data().map_err(bad)?),
            4 => Reader::F32(npy.data().map_err(bad)?),
            8 => Reader::F64(npy.data().map_err(bad)?),
            _ => return Err(CliError::input(&origin, format!("unsupported float type `{ts}`"))),
        };
        Ok(Self { origin, reader, n_rows, n_columns, next_row: 0 })
    }

    /// The next chunk of at most `rows` rows with the index of its first row, or `None` at the end.
    ///
    /// # Errors
    /// [`CliError::Input`] when the file ends early (truncated).
    pub fn next_chunk(&mut self, rows: usize) -> Result<Option<(usize, Scores)>> {
        let start = self.next_row;
        let len = rows.max(1).min(self.n_rows - start);
        if len == 0 {
            return Ok(None);
        }
        let count = len * self.n_columns;
        let fail =
            |e: std::io::Error| CliError::input(&self.origin, format!("cannot read values ({e})"));
        let scores = match &mut self.reader {
            Reader::F16(r) => Scores::F32(
                r.by_ref()
                    .take(count)
                    .map(|v| v.map(f32::from))
                    .collect::<std::io::Result<_>>()
                    .map_err(fail)?,
            ),
            Reader::F32(r) => {
                Scores::F32(r.by_ref().take(count).collect::<std::io::Result<_>>().map_err(fail)?)
            }
            Reader::F64(r) => {
                Scores::F64(r.by_ref().take(count).collect::<std::io::Result<_>>().map_err(fail)?)
            }
        };
        if scores.len() != count {
            return Err(CliError::input(
                &self.origin,
                format!(
                    "file ends after {} of {} rows",
                    start + scores.len() / self.n_columns,
                    self.n_rows
                ),
            ));
        }
        self.next_row += len;
        Ok(Some((start, scores)))
    }
}
