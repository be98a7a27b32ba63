//! Reading tensor data back to the host, in one named place.

use burn::tensor::TensorData;

use crate::error::{CalibError, Result};

/// Converts read-back tensor data of any numeric dtype to `f64`.
pub(crate) fn read_f64(data: TensorData) -> Result<Vec<f64>> {
    data.convert::<f64>()
        .try_into_vec::<f64>()
        .map_err(|e| CalibError::Backend(format!("cannot read tensor data: {e:?}")))
}
