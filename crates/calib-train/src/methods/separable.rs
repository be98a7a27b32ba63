//! Detecting data on which the NLL has no minimum.

use calib_core::input::{HostValues, Predictions};

use crate::error::Result;

/// True when every row's label has the strictly largest score of its row: then scaling the
/// logits up (T -> 0) drives the NLL to 0 and no finite temperature minimises it.
pub(crate) fn labels_separated(preds: &Predictions) -> Result<bool> {
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
