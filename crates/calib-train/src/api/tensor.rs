//! [`SavedTensor`]: a parameter as saved files hold it.

use burn::tensor::{DType, Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::error::{FitError, Result};
use crate::fit::params::read_all;

/// A parameter as saved: shape and row-major values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedTensor {
    /// Shape (`[1]`, `[K]`, `[K, K]`).
    pub shape: Vec<usize>,
    /// Row-major values.
    pub values: Vec<f64>,
}

impl SavedTensor {
    /// Reads a parameter tensor back from its device.
    pub(crate) fn read(tensor: Tensor<1>, shape: Vec<usize>) -> Result<Self> {
        let values = read_all(vec![tensor])?.remove(0);
        Ok(Self { shape, values })
    }

    /// Uploads as a tensor of rank `D` on `device` in `dtype`.
    pub(crate) fn tensor<const D: usize>(
        &self,
        name: &str,
        expected: [usize; D],
        device: &Device,
        dtype: DType,
    ) -> Result<Tensor<D>> {
        if self.shape != expected || self.values.len() != expected.iter().product::<usize>() {
            return Err(FitError::Format(format!(
                "parameter `{name}` has shape {:?} with {} values, expected {expected:?}",
                self.shape,
                self.values.len()
            )));
        }
        if let Some(v) = self.values.iter().find(|v| !v.is_finite()) {
            return Err(FitError::Format(format!("parameter `{name}` holds {v}")));
        }
        Ok(Tensor::from_data(TensorData::new(self.values.clone(), expected), (device, dtype)))
    }
}
