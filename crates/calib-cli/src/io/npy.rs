//! `.npy` arrays (and the members of `.npz` archives) read with `npyz`.

use std::io::Read;
use std::path::Path;

use npyz::{DType, NpyFile, Order, TypeChar};

use super::array::{Array, Values};
use crate::error::{CliError, Result};

/// Reads a whole `.npy` file.
///
/// # Errors
/// [`CliError::Input`] naming the file: missing, not an npy file, truncated, or an element type
/// that is not a number.
pub fn read_npy_file(path: &Path) -> Result<Array> {
    let origin = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| CliError::input(&origin, e.to_string()))?;
    let npy = NpyFile::new(std::io::BufReader::new(file))
        .map_err(|e| CliError::input(&origin, format!("not a valid .npy file ({e})")))?;
    read_npy(npy, origin)
}

/// Reads one array from an opened npy stream; `origin` names it in errors.
pub(crate) fn read_npy<R: Read>(npy: NpyFile<R>, origin: String) -> Result<Array> {
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let fortran = npy.order() == Order::Fortran;
    let DType::Plain(ts) = npy.dtype() else {
        return Err(CliError::input(&origin, "structured (record) arrays are not supported"));
    };
    let fail = |e: std::io::Error| CliError::input(&origin, format!("cannot read values ({e})"));
    let ints = |v: Vec<i64>| Values::Int(v);
    let (dtype, values) = match (ts.type_char(), ts.size_field()) {
        (TypeChar::Float, 2) => (
            "float16",
            Values::F32(
                npy.into_vec::<half::f16>().map_err(fail)?.into_iter().map(f32::from).collect(),
            ),
        ),
        (TypeChar::Float, 4) => ("float32", Values::F32(npy.into_vec::<f32>().map_err(fail)?)),
        (TypeChar::Float, 8) => ("float64", Values::F64(npy.into_vec::<f64>().map_err(fail)?)),
        (TypeChar::Int, 1) => ("int8", ints(widen(npy.into_vec::<i8>().map_err(fail)?))),
        (TypeChar::Int, 2) => ("int16", ints(widen(npy.into_vec::<i16>().map_err(fail)?))),
        (TypeChar::Int, 4) => ("int32", ints(widen(npy.into_vec::<i32>().map_err(fail)?))),
        (TypeChar::Int, 8) => ("int64", ints(npy.into_vec::<i64>().map_err(fail)?)),
        (TypeChar::Uint, 1) => ("uint8", ints(widen(npy.into_vec::<u8>().map_err(fail)?))),
        (TypeChar::Uint, 2) => ("uint16", ints(widen(npy.into_vec::<u16>().map_err(fail)?))),
        (TypeChar::Uint, 4) => ("uint32", ints(widen(npy.into_vec::<u32>().map_err(fail)?))),
        (TypeChar::Uint, 8) => {
            let v = npy.into_vec::<u64>().map_err(fail)?;
            let v: Option<Vec<i64>> = v.into_iter().map(|x| i64::try_from(x).ok()).collect();
            (
                "uint64",
                ints(v.ok_or_else(|| CliError::input(&origin, "uint64 value above i64::MAX"))?),
            )
        }
        (TypeChar::Bool, _) => (
            "bool",
            ints(npy.into_vec::<bool>().map_err(fail)?.into_iter().map(i64::from).collect()),
        ),
        _ => {
            return Err(CliError::input(
                &origin,
                format!("unsupported element type `{ts}`; expected a float or integer array"),
            ));
        }
    };
    let mut array = Array::new(origin, dtype.into(), shape, values)?;
    if fortran && array.shape.len() == 2 {
        transpose_from_fortran(&mut array);
    }
    Ok(array)
}

fn widen<T: Into<i64>>(v: Vec<T>) -> Vec<i64> {
    v.into_iter().map(Into::into).collect()
}

/// Column-major `[N, K]` values to row-major.
fn transpose_from_fortran(array: &mut Array) {
    let (n, k) = (array.shape[0], array.shape[1]);
    fn t<T: Copy>(v: &[T], n: usize, k: usize) -> Vec<T> {
        (0..n * k).map(|idx| v[(idx % k) * n + idx / k]).collect()
    }
    array.values = match &array.values {
        Values::F32(v) => Values::F32(t(v, n, k)),
        Values::F64(v) => Values::F64(t(v, n, k)),
        Values::Int(v) => Values::Int(t(v, n, k)),
    };
}
