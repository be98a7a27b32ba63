//! The temperature solver's pass on the device: the NLL of `softmax(s z)` and its derivatives
//! in `s`, summed over the rows without the logits leaving the device.

use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor, Transaction};

use super::kernels::MAX;
use super::ops::CalibKernels;
use super::{device_rows, row_pass};
use crate::backend::BackendKind;
use crate::error::{CalibError, Result};
use crate::host::read_f64;
use crate::input::{Predictions, ScoreKind};

/// Columns summed on the device before the host adds the partial sums in f64.
const BLOCK: usize = 1024;

/// Logits kept on their GPU device with each row's maximum, for repeated passes at different
/// temperatures.
///
/// ```text
/// L(s)   = sum_i [ logsumexp_j(s z_ij) - s z_iy ]
/// L'(s)  = sum_i [ E_p[z_i] - z_iy ],      p = softmax(s z_i)
/// L''(s) = sum_i Var_p[z_i]
/// ```
/// Each pass reads back three numbers per 1,024 rows (summed on the host in f64).
pub struct TemperedRows {
    values: Tensor<2>,
    labels: Tensor<1, Int>,
    max: Tensor<1>,
    n_samples: usize,
}

impl TemperedRows {
    /// Whether the device kernels can take `preds`: logits on a GPU device, at most
    /// `u32::MAX` values.
    pub fn supports(preds: &Predictions) -> bool {
        preds.kind() == ScoreKind::Logits
            && !BackendKind::of(preds.device()).is_cpu()
            && preds.n_samples() * preds.n_columns() <= u32::MAX as usize
    }

    /// The rows of `preds` (see [`Self::supports`]) and their maxima (one kernel).
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] when [`Self::supports`] is false.
    pub fn new(preds: &Predictions) -> Result<Self> {
        if !Self::supports(preds) {
            return Err(CalibError::InvalidConfig(
                "the device temperature pass takes logits on a GPU device".into(),
            ));
        }
        let n_samples = preds.n_samples();
        let (values, labels) = device_rows(preds);
        let (rows, _) = row_pass(values.clone(), labels.clone(), true);
        let max = rows.slice([MAX..MAX + 1, 0..n_samples]).reshape([n_samples]);
        Ok(Self { values, labels, max, n_samples })
    }

    /// Number of rows.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// `(L, L', L'')` summed over every `stride`-th row at `s`, and the number of rows used.
    ///
    /// # Errors
    /// [`CalibError::Backend`] when the read-back fails.
    pub fn sums(&self, s: f64, stride: usize) -> Result<([f64; 3], usize)> {
        let stride = stride.max(1);
        let out = <Dispatch as CalibKernels>::calib_tempered_moments(
            self.values.clone().into_dispatch(),
            self.labels.clone().into_dispatch(),
            self.max.clone().into_dispatch(),
            s as f32,
            stride,
        );
        let out = Tensor::<2>::from_dispatch(out);
        let used = self.n_samples.div_ceil(stride);
        let blocks = used / BLOCK;
        let mut tx = Transaction::default();
        if blocks > 0 {
            let head = out.clone().slice([0..3, 0..blocks * BLOCK]).reshape([3, blocks, BLOCK]);
            tx = tx.register(head.sum_dim(2));
        }
        if used > blocks * BLOCK {
            tx = tx.register(out.slice([0..3, blocks * BLOCK..used]).sum_dim(1));
        }
        let mut sums = [0.0; 3];
        for data in tx.try_execute().map_err(|e| CalibError::Backend(e.to_string()))? {
            let values = read_f64(data)?;
            let per = values.len() / 3;
            for (f, sum) in sums.iter_mut().enumerate() {
                *sum += values[f * per..(f + 1) * per].iter().sum::<f64>();
            }
        }
        Ok((sums, used))
    }
}
