//! The temperature solver's pass on the device: the NLL of `softmax(s z)` and its derivatives
//! in `s`, summed over the rows without the logits leaving the device.

use burn::backend::Dispatch;
use burn::tensor::{Device, Int, Tensor, Transaction};

use super::kernels::MAX;
use super::ops::CalibKernels;
use super::rows::{CHUNK_VALUES, device_rows, row_chunks, row_pass};
use crate::backend::BackendKind;
use crate::error::{CalibError, Result};
use crate::host::read_f64;
use crate::input::{Predictions, ScoreKind};

/// Columns summed on the device before the host adds the partial sums in f64.
const BLOCK: usize = 1024;

/// One device buffer of rows: values, labels, row maxima, and the rows before it.
pub(super) struct Part {
    pub(super) values: Tensor<2>,
    pub(super) labels: Tensor<1, Int>,
    pub(super) max: Tensor<1>,
    start: usize,
}

/// Logits kept on their GPU device, in parts no larger than one device buffer, with each
/// row's maximum, for repeated passes at different temperatures.
///
/// ```text
/// L(s)   = sum_i [ logsumexp_j(s z_ij) - s z_iy ]
/// L'(s)  = sum_i [ E_p[z_i] - z_iy ],      p = softmax(s z_i)
/// L''(s) = sum_i Var_p[z_i]
/// ```
/// Each pass reads back three numbers per 1,024 rows (summed on the host in f64).
pub struct TemperedRows {
    pub(super) parts: Vec<Part>,
    n_samples: usize,
    n_classes: usize,
    device: Device,
}

impl TemperedRows {
    /// Whether the device kernels can take `preds`: logits on a GPU device.
    pub fn supports(preds: &Predictions) -> bool {
        preds.kind() == ScoreKind::Logits && !BackendKind::of(preds.device()).is_cpu()
    }

    /// The rows of `preds` (see [`Self::supports`]; host rows are uploaded once, a buffer at
    /// a time) and their maxima.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] when [`Self::supports`] is false.
    pub fn new(preds: &Predictions) -> Result<Self> {
        Self::from_parts(std::slice::from_ref(preds))
    }

    /// The rows of several predictions taken as one set, in order: logits larger than one
    /// device buffer (wgpu refuses buffers of a few GiB) held as several tensors.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for no parts, a part [`Self::supports`] refuses, or parts
    /// that differ in their number of classes or device.
    pub fn from_parts(parts: &[Predictions]) -> Result<Self> {
        let first = parts.first().ok_or_else(|| invalid("no rows"))?;
        let (n_classes, device) = (first.n_columns(), first.device().clone());
        let mut rows = Self { parts: Vec::new(), n_samples: 0, n_classes, device };
        for preds in parts {
            if !Self::supports(preds) {
                return Err(invalid("the device temperature pass takes logits on a GPU device"));
            }
            if preds.n_columns() != n_classes || *preds.device() != rows.device {
                return Err(invalid("parts differ in their number of classes or device"));
            }
            for range in row_chunks(preds.n_samples(), n_classes, CHUNK_VALUES) {
                rows.push(device_rows(preds, range));
            }
        }
        Ok(rows)
    }

    fn push(&mut self, (values, labels): (Tensor<2>, Tensor<1, Int>)) {
        let n = values.dims()[0];
        let (rows, _) = row_pass(values.clone(), labels.clone(), true);
        let max = rows.slice([MAX..MAX + 1, 0..n]).reshape([n]);
        self.parts.push(Part { values, labels, max, start: self.n_samples });
        self.n_samples += n;
    }

    /// Number of rows.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// Number of classes.
    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// The device the rows live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// `(L, L', L'')` summed over every `stride`-th row at `s`, and the number of rows used.
    ///
    /// # Errors
    /// [`CalibError::Backend`] when the read-back fails.
    pub fn sums(&self, s: f64, stride: usize) -> Result<([f64; 3], usize)> {
        let stride = stride.max(1);
        let mut tx = Transaction::default();
        let mut used = 0;
        for part in &self.parts {
            let offset = (stride - part.start % stride) % stride;
            let n = part.values.dims()[0];
            if offset >= n {
                continue;
            }
            let out = <Dispatch as CalibKernels>::calib_tempered_moments(
                part.values.clone().into_dispatch(),
                part.labels.clone().into_dispatch(),
                part.max.clone().into_dispatch(),
                s as f32,
                offset,
                stride,
            );
            let count = (n - offset).div_ceil(stride);
            tx = register_blocks(tx, Tensor::<2>::from_dispatch(out), count).0;
            used += count;
        }
        let mut sums = [0.0; 3];
        for data in crate::engine::read_back(tx)? {
            let values = read_f64(data)?;
            let per = values.len() / 3;
            for (f, sum) in sums.iter_mut().enumerate() {
                *sum += values[f * per..(f + 1) * per].iter().sum::<f64>();
            }
        }
        Ok((sums, used))
    }
}

/// Registers the sums of `[F, used]` per block of [`BLOCK`] columns (and of the remainder),
/// and says how many tensors that is (one or two).
pub(super) fn register_blocks(
    tx: Transaction,
    out: Tensor<2>,
    used: usize,
) -> (Transaction, usize) {
    let (fields, blocks) = (out.dims()[0], used / BLOCK);
    let (mut tx, mut registered) = (tx, 0);
    if blocks > 0 {
        let head = out.clone().slice([0..fields, 0..blocks * BLOCK]);
        tx = tx.register(head.reshape([fields, blocks, BLOCK]).sum_dim(2));
        registered += 1;
    }
    if used > blocks * BLOCK {
        tx = tx.register(out.slice([0..fields, blocks * BLOCK..used]).sum_dim(1));
        registered += 1;
    }
    (tx, registered)
}

fn invalid(what: &str) -> CalibError {
    CalibError::InvalidConfig(what.into())
}
