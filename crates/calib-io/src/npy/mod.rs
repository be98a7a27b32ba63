//! `.npy` arrays (and the members of `.npz` archives): the header parsed by [`header`],
//! the data read in large blocks straight into the buffer that is kept, so reading costs about
//! one copy from the page cache (or the decompressor).

pub(crate) mod chunks;
mod header;

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

use bytemuck::Pod;

use crate::array::{Array, Scores, Values};
use crate::error::{IoError, Result};
use header::{Descr, read_header};

/// Elements read per block, and the growth step of a buffer whose final size is not trusted.
const BLOCK: usize = 1 << 22;

/// Reads a whole `.npy` file.
///
/// # Errors
/// [`IoError::Input`] naming the file: missing, not an npy file, truncated, or an element type
/// that is not a number.
pub fn read_npy_file(path: &Path) -> Result<Array> {
    let origin = path.display().to_string();
    let file = File::open(path).map_err(|e| IoError::input(&origin, e.to_string()))?;
    let len = file.metadata().map_err(|e| IoError::input(&origin, e.to_string()))?.len();
    read_npy(BufReader::new(file), origin, Some(len))
}

/// Reads one array from a `.npy` stream; `origin` names it in errors. `stream_len`, when known
/// and trusted (a file's length, a stored archive member's), bounds what the header may claim,
/// so a header promising more data than the stream holds is refused before any allocation;
/// otherwise the buffer grows only as data arrives.
pub(crate) fn read_npy(
    mut reader: impl Read,
    origin: String,
    stream_len: Option<u64>,
) -> Result<Array> {
    let header = read_header(&mut reader).map_err(|why| IoError::input(&origin, why))?;
    let (n, descr) = (header.n_elements(), header.descr);
    if let Some(len) = stream_len {
        header.check_fits(len).map_err(|why| IoError::input(&origin, why))?;
    }
    let known = stream_len.is_some();
    let values = read_values(&mut reader, descr, n, known).map_err(|e| match e.kind() {
        ErrorKind::UnexpectedEof => IoError::input(
            &origin,
            format!("truncated: shape {:?} needs {n} values, the data ends early", header.shape),
        ),
        _ => IoError::input(&origin, format!("cannot read values ({e})")),
    })?;
    let mut array = Array::new(origin, descr.name(), header.shape, values)?;
    if header.fortran_order && array.shape.len() == 2 {
        transpose_from_fortran(&mut array);
    }
    Ok(array)
}

/// `n` elements of type `descr`, widened as [`Values`] holds them.
fn read_values(
    reader: &mut impl Read,
    descr: Descr,
    n: usize,
    known: bool,
) -> std::io::Result<Values> {
    let swap = descr.big_endian;
    let ints = |v: Vec<i64>| Values::Int(v);
    Ok(match (descr.kind, descr.size) {
        (b'f', _) => match read_floats(reader, descr, n, known)? {
            Scores::F32(v) => Values::F32(v),
            Scores::F64(v) => Values::F64(v),
        },
        (b'i', 1) => ints(widen(read_pod::<i8>(reader, n, known, swap)?, i64::from)),
        (b'i', 2) => ints(widen(read_pod::<i16>(reader, n, known, swap)?, i64::from)),
        (b'i', 4) => ints(widen(read_pod::<i32>(reader, n, known, swap)?, i64::from)),
        (b'i', _) => ints(read_pod(reader, n, known, swap)?),
        (b'u', 1) => ints(widen(read_pod::<u8>(reader, n, known, swap)?, i64::from)),
        (b'u', 2) => ints(widen(read_pod::<u16>(reader, n, known, swap)?, i64::from)),
        (b'u', 4) => ints(widen(read_pod::<u32>(reader, n, known, swap)?, i64::from)),
        (b'u', _) => {
            let v = read_pod::<u64>(reader, n, known, swap)?;
            let v: Option<Vec<i64>> = v.into_iter().map(|x| i64::try_from(x).ok()).collect();
            ints(v.ok_or_else(|| std::io::Error::other("uint64 value above i64::MAX"))?)
        }
        _ => ints(widen(read_pod::<u8>(reader, n, known, false)?, |b| i64::from(b != 0))),
    })
}

/// `n` float values of type `descr` (`float16` widened to f32 exactly), read as
/// [`read_pod`] does.
pub(crate) fn read_floats(
    reader: &mut impl Read,
    descr: Descr,
    n: usize,
    known: bool,
) -> std::io::Result<Scores> {
    read_floats_into(reader, descr, n, known, None)
}

/// [`read_floats`] into the allocation of `spare` (the scores of an earlier read, done with)
/// where its type matches the file's: a chunk of a large file then costs one copy from the
/// page cache, where a fresh buffer is first zeroed whole (a `memset` of every chunk, or fresh
/// pages from the kernel).
pub(crate) fn read_floats_into(
    reader: &mut impl Read,
    descr: Descr,
    n: usize,
    known: bool,
    spare: Option<Scores>,
) -> std::io::Result<Scores> {
    let swap = descr.big_endian;
    Ok(match (descr.size, spare) {
        (2, _) => Scores::F32(widen(read_pod::<u16>(reader, n, known, swap)?, |b| {
            half::f16::from_bits(b).to_f32()
        })),
        (4, Some(Scores::F32(v))) => Scores::F32(read_pod_into(reader, n, known, swap, v)?),
        (4, _) => Scores::F32(read_pod(reader, n, known, swap)?),
        (8, Some(Scores::F64(v))) => Scores::F64(read_pod_into(reader, n, known, swap, v)?),
        _ => Scores::F64(read_pod(reader, n, known, swap)?),
    })
}

/// `n` plain values read in blocks into one buffer: allocated whole when the length is
/// `known` (checked against the stream), grown block by block otherwise. `swap` reverses the
/// bytes of each value (big-endian data).
fn read_pod<T: Pod>(
    reader: &mut impl Read,
    n: usize,
    known: bool,
    swap: bool,
) -> std::io::Result<Vec<T>> {
    read_pod_into(reader, n, known, swap, Vec::new())
}

/// [`read_pod`] into `out`'s allocation: of a `known` length, only the values past `out`'s
/// length are zeroed before the read overwrites them all.
fn read_pod_into<T: Pod>(
    reader: &mut impl Read,
    n: usize,
    known: bool,
    swap: bool,
    mut out: Vec<T>,
) -> std::io::Result<Vec<T>> {
    if known {
        out.truncate(n);
        out.resize(n, T::zeroed());
    } else {
        out.clear();
    }
    let mut done = 0;
    while done < n {
        let end = n.min(done + BLOCK);
        if !known {
            out.resize(end, T::zeroed());
        }
        reader.read_exact(bytemuck::cast_slice_mut(&mut out[done..end]))?;
        done = end;
    }
    if swap && size_of::<T>() > 1 {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        bytes.chunks_exact_mut(size_of::<T>()).for_each(<[u8]>::reverse);
    }
    Ok(out)
}

fn widen<T: Copy, U>(v: Vec<T>, f: impl Fn(T) -> U) -> Vec<U> {
    v.into_iter().map(f).collect()
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
