//! Row chunks of a `.npy` score matrix, read as a stream, so evaluating a file larger than memory
//! needs memory for one chunk only (see `calib_core::StreamingEvaluation`).
//! Same header parser and block reads as the whole-file reader ([`super`]); a chunk of native
//! float32 or float64 values is read by every thread at once, each its own rows at their
//! offsets (`pread`), so the copy from the page cache is parallel work, not a serial reader's.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::header::{Descr, read_header};
use super::read_floats_into;
use crate::array::Scores;
use crate::error::{IoError, Result};

/// A `.npy` of float scores `[N, C]` (or `[N]`), read `rows` at a time.
pub struct NpyChunks {
    origin: String,
    file: File,
    /// The byte offset of the first value.
    data_start: u64,
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
        let data_start = reader.stream_position().map_err(|e| fail(e.to_string()))?;
        let (file, descr) = (reader.into_inner(), header.descr);
        Ok(Self { origin, file, data_start, descr, n_rows, n_columns, next_row: 0 })
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
        let offset = self.data_start + (start * self.n_columns * self.descr.size) as u64;
        let native = !self.descr.big_endian;
        let read = match (self.descr.size, spare) {
            (4, Some(Scores::F32(v))) if native => {
                self.read_rows(offset, count, v).map(Scores::F32)
            }
            (4, _) if native => self.read_rows(offset, count, vec![]).map(Scores::F32),
            (8, Some(Scores::F64(v))) if native => {
                self.read_rows(offset, count, v).map(Scores::F64)
            }
            (8, _) if native => self.read_rows(offset, count, vec![]).map(Scores::F64),
            (_, spare) => {
                let mut at = At { file: &self.file, offset };
                read_floats_into(&mut at, self.descr, count, true, spare)
            }
        };
        let scores = read.map_err(|e| {
            IoError::input(&self.origin, format!("cannot read rows {start}.. ({e})"))
        })?;
        self.next_row += len;
        Ok(Some((start, scores)))
    }

    /// `count` native values from byte `offset` into `out`'s allocation, in one block of whole
    /// rows per thread (each at least [`ROW_BLOCK_BYTES`]), read at their own offsets.
    fn read_rows<T: bytemuck::Pod + Send>(
        &self,
        offset: u64,
        count: usize,
        mut out: Vec<T>,
    ) -> std::io::Result<Vec<T>> {
        out.truncate(count);
        out.resize(count, T::zeroed());
        let row_bytes = self.n_columns * size_of::<T>();
        let min_rows = ROW_BLOCK_BYTES.div_ceil(row_bytes);
        let failed = std::sync::Mutex::new(None);
        calib_kernels::for_row_blocks(&mut out, self.n_columns, min_rows, |first, block| {
            let at = offset + (first * row_bytes) as u64;
            if let Err(e) = self.file.read_exact_at(bytemuck::cast_slice_mut(block), at)
                && let Ok(mut failed) = failed.lock()
            {
                *failed = Some(e);
            }
        });
        match failed.into_inner().ok().flatten() {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

/// The bytes a thread reads of a chunk, at least (256 KiB): smaller chunks are one block.
const ROW_BLOCK_BYTES: usize = 1 << 18;

/// A file read from `offset` on, by positioned reads (the file's own cursor is not used).
struct At<'a> {
    file: &'a File,
    offset: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1.0 `.npy` of `descr` and shape `[n, k]` holding `data`.
    fn npy(descr: &str, (n, k): (usize, usize), data: &[u8]) -> Vec<u8> {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n}, {k}), }}");
        let padded = (10 + dict.len() + 1).div_ceil(64) * 64;
        let mut header = dict.into_bytes();
        header.resize(padded - 10 - 1, b' ');
        header.push(b'\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header);
        out.extend(data);
        out
    }

    /// Every chunk of `bytes`' file, concatenated, as f64.
    fn read_all(bytes: &[u8], rows: usize) -> Vec<f64> {
        let dir = std::env::temp_dir().join(format!("calib-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}-{rows}.npy", bytes.len()));
        std::fs::write(&path, bytes).unwrap();
        let mut chunks = NpyChunks::open(&path).unwrap();
        let (mut out, mut spare, mut next) = (vec![], None, 0);
        while let Some((start, scores)) = chunks.next_chunk(rows, spare.take()).unwrap() {
            assert_eq!(start, next);
            next += scores.len() / chunks.n_columns;
            out.extend((0..scores.len()).map(|i| scores.get(i)));
            spare = Some(scores);
        }
        std::fs::remove_file(&path).unwrap();
        out
    }

    #[test]
    fn chunks_read_in_parallel_blocks_equal_the_file() {
        // 3,000 x 50 values: a chunk of 2,900 rows is several blocks of 256 KiB.
        let (n, k) = (3000, 50);
        let values: Vec<f64> = (0..n * k).map(|i| (i as f64 * 0.37).sin() * 9.0).collect();
        let f32s: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        let wide: Vec<f64> = f32s.iter().map(|&v| f64::from(v)).collect();
        let le32: Vec<u8> = f32s.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be32: Vec<u8> = f32s.iter().flat_map(|v| v.to_be_bytes()).collect();
        let le64: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        for rows in [2900, 1, 777] {
            assert_eq!(read_all(&npy("<f4", (n, k), &le32), rows), wide, "<f4, {rows}");
            assert_eq!(read_all(&npy(">f4", (n, k), &be32), rows), wide, ">f4, {rows}");
            assert_eq!(read_all(&npy("<f8", (n, k), &le64), rows), values, "<f8, {rows}");
        }
    }

    #[test]
    fn a_file_cut_short_after_opening_names_the_rows() {
        let (n, k) = (4000, 40);
        let data: Vec<u8> = (0..n * k).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let dir = std::env::temp_dir().join(format!("calib-chunks-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut.npy");
        let bytes = npy("<f4", (n, k), &data);
        std::fs::write(&path, &bytes).unwrap();
        let mut chunks = NpyChunks::open(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let err = chunks.next_chunk(n, None).expect_err("the rows are gone");
        assert!(err.to_string().contains("cannot read rows 0.."), "{err}");
        std::fs::remove_file(&path).unwrap();
    }
}
