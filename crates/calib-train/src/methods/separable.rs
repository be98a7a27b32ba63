//! Detecting data on which the NLL has no minimum.

use burn::tensor::{DType, Transaction};
use calib_core::input::{HostValues, Predictions};

use crate::error::{FitError, Result};

/// True when every row's label has the strictly largest score of its row: then scaling the
/// logits up (T -> 0) drives the NLL to 0 and no finite temperature minimises it.
/// Unweighted rows that live on a GPU (f32 there) are checked there: one word comes back.
/// Elsewhere the rows are read as stored, so f64 scores compare in f64.
pub(crate) fn labels_separated(preds: &Predictions) -> Result<bool> {
    let on_gpu = preds.on_device() && !calib_core::BackendKind::of(preds.device()).is_cpu();
    if on_gpu && preds.weights().is_none() {
        return separated_on_device(preds);
    }
    let (values, labels) = preds.host_rows()?;
    let k = preds.n_columns();
    // Rows of weight 0 are not part of the fit.
    let counts = |i: usize| preds.weights().is_none_or(|w| w.values()[i] > 0.0);
    Ok(match values {
        HostValues::F32(v) => all_rows(&v, &labels, k, counts),
        HostValues::F64(v) => all_rows(&v, &labels, k, counts),
    })
}

/// Whether every counted row's label has the strictly largest value of its row.
fn all_rows<T: Copy + PartialOrd>(
    v: &[T],
    labels: &[i64],
    k: usize,
    counts: impl Fn(usize) -> bool,
) -> bool {
    v.chunks_exact(k).zip(labels).enumerate().filter(|(i, _)| counts(*i)).all(|(_, (row, &y))| {
        let zy = row[y as usize];
        row.iter().enumerate().all(|(j, &z)| j == y as usize || z < zy)
    })
}

/// [`labels_separated`] on the device: a row's label is strictly its largest score exactly
/// when one score of the row (the label's own) is at or above the label's.
fn separated_on_device(preds: &Predictions) -> Result<bool> {
    let (n, k) = (preds.n_samples(), preds.n_columns());
    let (values, labels) = preds.rows_on(0, n, DType::F32, preds.device());
    let at_label = values.clone().gather(1, labels.reshape([n, 1])).expand([n, k]);
    let at_or_above = values.greater_equal(at_label).int().sum_dim(1);
    let not_separated = at_or_above.greater_elem(1).int().sum();
    let data = calib_core::engine::read_back(Transaction::default().register(not_separated))?;
    let count = data.into_iter().next().map(|d| d.convert::<i64>().try_into_vec::<i64>());
    match count {
        Some(Ok(v)) => Ok(v.first() == Some(&0)),
        _ => Err(FitError::Backend("the device sent no separation count back".into())),
    }
}
