//! NumPy scores read in place: the one `unsafe` of this crate (audited in the workspace's
//! lint list).
#![allow(unsafe_code)]

use std::borrow::Cow;

use calib_core::input::{HostValues, ScoreBuffer};
use numpy::{PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A C-contiguous `float32` or `float64` NumPy array's values, borrowed for calib.
///
/// The array is kept alive by `_owner`, so its buffer is neither freed nor reallocated while
/// this exists (NumPy refuses to resize an array with other references). Another Python
/// thread writing into the array during a computation changes the values read, as it would
/// for any NumPy function that releases the GIL; the docs say so.
#[derive(Debug)]
pub(crate) struct NumpyScores {
    /// Held, never read: the reference that keeps the array alive.
    _owner: Py<PyAny>,
    at: usize,
    len: usize,
    double: bool,
}

impl NumpyScores {
    /// The values of `array` (any shape), which must be C-contiguous `float32` or `float64`.
    pub(crate) fn new(array: &Bound<'_, PyAny>) -> PyResult<Self> {
        let owned = |(at, len), double| Self { _owner: array.clone().unbind(), at, len, double };
        if let Some(span) = span::<f32>(array) {
            return Ok(owned(span?, false));
        }
        if let Some(span) = span::<f64>(array) {
            return Ok(owned(span?, true));
        }
        Err(PyTypeError::new_err("scores must be a float32 or float64 NumPy array"))
    }
}

/// Where `array`'s values start and how many there are, when it is an array of `T` (`None`
/// when it is not).
fn span<T: numpy::Element>(array: &Bound<'_, PyAny>) -> Option<PyResult<(usize, usize)>> {
    let typed = array.cast::<PyArrayDyn<T>>().ok()?;
    let span = typed.try_readonly().map_err(|e| PyTypeError::new_err(format!("scores: {e}")));
    Some(span.and_then(|read| {
        let values = read.as_slice().map_err(|_| not_contiguous())?;
        Ok((values.as_ptr() as usize, values.len()))
    }))
}

fn not_contiguous() -> PyErr {
    PyTypeError::new_err("scores must be C-contiguous (numpy.ascontiguousarray)")
}

impl ScoreBuffer for NumpyScores {
    fn values(&self) -> HostValues<'_> {
        // SAFETY: `at .. at + len` are the elements of a C-contiguous array of this element
        // type, checked when `self` was made; `_owner` holds a reference to that array, so the
        // memory stays allocated and in place for `self`'s lifetime, which bounds the borrow.
        unsafe {
            if self.double {
                HostValues::F64(Cow::Borrowed(std::slice::from_raw_parts(
                    self.at as *const f64,
                    self.len,
                )))
            } else {
                HostValues::F32(Cow::Borrowed(std::slice::from_raw_parts(
                    self.at as *const f32,
                    self.len,
                )))
            }
        }
    }
}
