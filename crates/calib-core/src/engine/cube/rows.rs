//! The rows on the device: chunks of at most [`CHUNK_VALUES`] values, uploaded as f32 with i32
//! labels, and the fused row pass over them; [`Chunks`] walks the chunks of one or more parts.

use burn::backend::Dispatch;
use burn::tensor::{DType, Int, Tensor};

use super::ops::CalibKernels;
use crate::input::{Predictions, ScoreKind};

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

/// One chunk of rows on the device, with its row pass.
pub(super) struct Chunk {
    pub values: Tensor<2>,
    pub labels: Tensor<1, Int>,
    pub rows: Tensor<2>,
    pub pred: Tensor<1, Int>,
    /// The chunk's first row in the whole input (all parts, in order).
    pub first_row: u32,
}

/// The rows of the parts of one input (equal K and kind, in row order) in chunks of at most
/// `chunk_values` values, each with its row pass. The chunks, and their row passes, are kept
/// from one visit to the next when every part lives on the device (a chunk is then a view of
/// its part, and the row pass adds 7 values a row) or when there is one chunk; host rows in
/// several chunks are uploaded again at every visit.
pub(super) struct Chunks<'a> {
    parts: &'a [Predictions],
    /// Per chunk: its part, first row in the part, rows, first row in the whole input.
    ranges: Vec<(usize, usize, usize, usize)>,
    logits: bool,
    keep: bool,
    kept: Vec<Chunk>,
}

impl<'a> Chunks<'a> {
    pub fn new(parts: &'a [Predictions], chunk_values: usize) -> Self {
        let mut ranges = Vec::new();
        let mut first = 0;
        for (at, part) in parts.iter().enumerate() {
            for (start, len) in row_chunks(part.n_samples(), part.n_columns(), chunk_values) {
                ranges.push((at, start, len, first + start));
            }
            first += part.n_samples();
        }
        let keep = ranges.len() == 1 || parts.iter().all(Predictions::on_device);
        let logits = parts.first().is_some_and(|p| p.kind() == ScoreKind::Logits);
        Self { parts, ranges, logits, keep, kept: Vec::new() }
    }

    /// Classes of the rows.
    pub fn n_classes(&self) -> usize {
        self.parts.first().map_or(0, Predictions::n_classes)
    }

    /// Whether the scores are logits.
    pub fn logits(&self) -> bool {
        self.logits
    }

    /// Rows in all parts.
    pub fn n_rows(&self) -> usize {
        self.parts.iter().map(Predictions::n_samples).sum()
    }

    /// Calls `f` on every chunk in row order.
    pub fn visit(&mut self, mut f: impl FnMut(&Chunk)) {
        if !self.keep {
            return self.ranges.iter().for_each(|&r| f(&self.load(r)));
        }
        if self.kept.is_empty() {
            self.kept = self.ranges.iter().map(|&r| self.load(r)).collect();
        }
        self.kept.iter().for_each(f)
    }

    fn load(&self, (part, start, len, first): (usize, usize, usize, usize)) -> Chunk {
        let (values, labels) = device_rows(&self.parts[part], (start, len));
        let (rows, pred) = row_pass(values.clone(), labels.clone(), self.logits);
        Chunk { values, labels, rows, pred, first_row: first as u32 }
    }
}
