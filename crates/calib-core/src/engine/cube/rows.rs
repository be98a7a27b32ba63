//! The rows on the device: chunks of at most [`CHUNK_VALUES`] values, uploaded as f32 with i32
//! labels, and the fused row pass over them.

use burn::backend::Dispatch;
use burn::tensor::{DType, Int, Tensor};

use super::ops::CalibKernels;
use crate::input::Predictions;

/// Most values in one chunk of rows (1 GiB of f32): wgpu refuses larger buffers.
pub(super) const CHUNK_VALUES: usize = 1 << 28;

/// Row ranges `(start, len)` of at most `chunk_values` values each (one row at least).
pub(crate) fn row_chunks(
    n_samples: usize,
    n_columns: usize,
    chunk_values: usize,
) -> Vec<(usize, usize)> {
    let step = (chunk_values / n_columns.max(1)).max(1);
    (0..n_samples).step_by(step).map(|start| (start, step.min(n_samples - start))).collect()
}

/// Rows `start..start + len` of the predictions as `[len, K]` f32 and i32 labels, on their
/// device (uploaded from host storage).
pub(crate) fn device_rows(
    preds: &Predictions,
    (start, len): (usize, usize),
) -> (Tensor<2>, Tensor<1, Int>) {
    let (values, labels) = preds.chunk(start, len, DType::F32);
    (values.cast(DType::F32), labels.cast(DType::I32))
}

/// The row pass: `[6, N]` fields and `[N]` predicted classes.
pub(super) fn row_pass(
    values: Tensor<2>,
    labels: Tensor<1, Int>,
    logits: bool,
) -> (Tensor<2>, Tensor<1, Int>) {
    let (rows, pred) = <Dispatch as CalibKernels>::calib_row_pass(
        values.into_dispatch(),
        labels.into_dispatch(),
        logits,
    );
    (Tensor::from_dispatch(rows), Tensor::from_dispatch(pred))
}
