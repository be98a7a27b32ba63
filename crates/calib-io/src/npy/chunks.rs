//! Row chunks of a `.npy` score matrix, read as a stream, so evaluating a file larger than memory
//! needs memory for one chunk only (see `calib_core::StreamingEvaluation`).
//! Same header parser and block reads as the whole-file reader ([`super`]).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use super::header::{Descr, read_header};
use super::read_floats_into;
use crate::array::Scores;
use crate::error::{IoError, Result};

/// A `.npy` of float scores `[N, C]` (or `[N]`), read `rows` at a time.
pub struct NpyChunks {
    origin: String,
    reader: BufReader<File>,
    descr: Descr,
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
    /// [`IoError::Input`] when the file is missing, not a C-order float array of rank 1 or 2,
    /// or shorter than its header says.
    pub fn open(path: &Path) -> Result<Self> {
        let origin = path.display().to_string();
        let fail = |why: String| IoError::input(&origin, why);
        let file = File::open(path).map_err(|e| fail(e.to_string()))?;
        let len = file.metadata().map_err(|e| fail(e.to_string()))?.len();
        let mut reader = BufReader::new(file);
        let header = read_header(&mut reader).map_err(fail)?;
        let shape = &header.shape;
        let (n_rows, n_columns) = match shape[..] {
            [n] => (n, 1),
            [n, k] => (n, k),
            _ => return Err(fail(format!("scores must be 1-D or 2-D, found shape {shape:?}"))),
        };
        if n_rows == 0 || n_columns == 0 {
            return Err(fail(format!("no scores (shape {shape:?})")));
        }
        if header.fortran_order && n_columns > 1 {
            return Err(fail(
                "column-major (Fortran-order) arrays cannot be read in row chunks".into(),
            ));
        }
        if header.descr.kind != b'f' {
            let found = header.descr.name();
            return Err(fail(format!("scores must be float16, float32 or float64, found {found}")));
        }
        header.check_fits(len).map_err(fail)?;
        Ok(Self { origin, reader, descr: header.descr, n_rows, n_columns, next_row: 0 })
    }

    /// The next chunk of at most `rows` rows with the index of its first row, or `None` at the end;
    /// read into `spare`'s buffer (an earlier chunk's scores, done with) where it fits.
    ///
    /// # Errors
    /// [`IoError::Input`] when the file cannot be read.
    pub fn next_chunk(
        &mut self,
        rows: usize,
        spare: Option<Scores>,
    ) -> Result<Option<(usize, Scores)>> {
        let start = self.next_row;
        let len = rows.max(1).min(self.n_rows - start);
        if len == 0 {
            return Ok(None);
        }
        let count = len * self.n_columns;
        let read = read_floats_into(&mut self.reader, self.descr, count, true, spare);
        let scores = read.map_err(|e| {
            IoError::input(&self.origin, format!("cannot read rows {start}.. ({e})"))
        })?;
        self.next_row += len;
        Ok(Some((start, scores)))
    }
}
