//! Output arrays as `.npy` or `.npz`, written atomically (temporary file, then rename), so an
//! interrupted run never leaves a half-written file or clobbers an existing one.

use std::io::{Cursor, Write};
use std::path::Path;

use npyz::WriterBuilder;

use crate::array::Scores;
use crate::atomic::write_atomic;
use crate::error::{IoError, Result};

/// One named output array.
#[derive(Debug, Clone, PartialEq)]
pub struct OutArray {
    /// Name (the key in a `.npz`).
    pub name: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Values.
    pub values: OutValues,
}

/// Values of an output array.
#[derive(Debug, Clone, PartialEq)]
pub enum OutValues {
    /// Floats in the input's precision.
    Float(Scores),
    /// int64 labels.
    Int(Vec<i64>),
}

fn npy_bytes(array: &OutArray, out: &mut impl Write) -> std::io::Result<()> {
    let shape: Vec<u64> = array.shape.iter().map(|&d| d as u64).collect();
    macro_rules! put {
        ($v:expr, $t:ty) => {{
            let mut w = npyz::WriteOptions::<$t>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut *out)
                .begin_nd()?;
            w.extend($v.iter().copied())?;
            w.finish()
        }};
    }
    match &array.values {
        OutValues::Float(Scores::F32(v)) => put!(v, f32),
        OutValues::Float(Scores::F64(v)) => put!(v, f64),
        OutValues::Int(v) => put!(v, i64),
    }
}

/// Writes `arrays` to `path`: a `.npz` holds them all by name; a `.npy` holds the first.
///
/// # Errors
/// [`IoError::Output`] for other extensions or when the file cannot be written; an existing
/// file at `path` is replaced only once the new one is complete.
pub fn write_arrays(path: &Path, arrays: &[OutArray]) -> Result<()> {
    let fail = |e: &dyn std::fmt::Display| IoError::output(path.display(), e);
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let bytes = match ext.as_deref() {
        Some("npy") => {
            let mut buf = Vec::new();
            npy_bytes(&arrays[0], &mut buf).map_err(|e| fail(&e))?;
            buf
        }
        Some("npz") => {
            let mut zip = npyz::npz::NpzWriter::new(Cursor::new(Vec::new()));
            let options = zip::write::FileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            for array in arrays {
                zip.zip_writer()
                    .start_file(npyz::npz::file_name_from_array_name(&array.name), options)
                    .map_err(|e| fail(&e))?;
                npy_bytes(array, zip.zip_writer()).map_err(|e| fail(&e))?;
            }
            zip.zip_writer().finish().map_err(|e| fail(&e))?.into_inner()
        }
        _ => return Err(fail(&"the output must end in .npy or .npz")),
    };
    write_file(path, &bytes)
}

/// Writes `bytes` to `path` atomically ([`write_atomic`]).
///
/// # Errors
/// [`IoError::Output`] naming the path.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, bytes).map_err(|e| IoError::output(path.display(), e))
}
