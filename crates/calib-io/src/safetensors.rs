//! `.safetensors` files read with the `safetensors` crate.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use crate::array::{Array, Values};
use crate::error::{IoError, Result};
use crate::store::ArrayStore;

/// A `.safetensors` file, read into memory once.
pub struct SafetensorsStore {
    origin: String,
    bytes: Vec<u8>,
    names: Vec<String>,
}

impl SafetensorsStore {
    /// Reads and parses the header of `path`.
    ///
    /// # Errors
    /// [`IoError::Input`] when the file is missing, truncated or not safetensors.
    pub fn open(path: &Path) -> Result<Self> {
        let origin = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| IoError::input(&origin, e.to_string()))?;
        let names = {
            let st = SafeTensors::deserialize(&bytes).map_err(|e| {
                IoError::input(&origin, format!("not a valid .safetensors file ({e})"))
            })?;
            let mut names: Vec<String> = st.names().into_iter().map(str::to_string).collect();
            names.sort();
            names
        };
        Ok(Self { origin, bytes, names })
    }
}

impl ArrayStore for SafetensorsStore {
    fn origin(&self) -> &str {
        &self.origin
    }

    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn read(&mut self, name: &str) -> Result<Option<Array>> {
        if !self.names.iter().any(|n| n == name) {
            return Ok(None);
        }
        let origin = format!("{}:{name}", self.origin);
        let st = SafeTensors::deserialize(&self.bytes)
            .map_err(|e| IoError::input(&origin, e.to_string()))?;
        let view = st.tensor(name).map_err(|e| IoError::input(&origin, e.to_string()))?;
        let data = view.data();
        fn le<const W: usize, T>(data: &[u8], f: impl Fn([u8; W]) -> T) -> Vec<T> {
            data.chunks_exact(W).map(|c| f(c.try_into().expect("chunk of W bytes"))).collect()
        }
        let (dtype, values) = match view.dtype() {
            Dtype::F16 => {
                ("float16", Values::F32(le(data, |b| half::f16::from_le_bytes(b).to_f32())))
            }
            Dtype::BF16 => {
                ("bfloat16", Values::F32(le(data, |b| half::bf16::from_le_bytes(b).to_f32())))
            }
            Dtype::F32 => ("float32", Values::F32(le(data, f32::from_le_bytes))),
            Dtype::F64 => ("float64", Values::F64(le(data, f64::from_le_bytes))),
            Dtype::I8 => ("int8", Values::Int(le(data, |b| i64::from(i8::from_le_bytes(b))))),
            Dtype::I16 => ("int16", Values::Int(le(data, |b| i64::from(i16::from_le_bytes(b))))),
            Dtype::I32 => ("int32", Values::Int(le(data, |b| i64::from(i32::from_le_bytes(b))))),
            Dtype::I64 => ("int64", Values::Int(le(data, i64::from_le_bytes))),
            Dtype::U8 => ("uint8", Values::Int(le(data, |b: [u8; 1]| i64::from(b[0])))),
            Dtype::U16 => ("uint16", Values::Int(le(data, |b| i64::from(u16::from_le_bytes(b))))),
            Dtype::U32 => ("uint32", Values::Int(le(data, |b| i64::from(u32::from_le_bytes(b))))),
            Dtype::BOOL => ("bool", Values::Int(le(data, |b: [u8; 1]| i64::from(b[0] != 0)))),
            other => {
                return Err(IoError::input(
                    &origin,
                    format!(
                        "unsupported element type {other:?}; expected a float or integer tensor"
                    ),
                ));
            }
        };
        Array::new(origin, dtype.into(), view.shape().to_vec(), values).map(Some)
    }
}
