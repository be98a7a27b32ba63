//! Detecting data on which the NLL has no minimum.

use calib_core::input::{HostValues, Predictions};

use crate::error::Result;

/// True when every row's label has the strictly largest score of its row: then scaling the
/// logits up (T -> 0) drives the NLL to 0 and no finite temperature minimises it.
pub(crate) fn labels_separated(preds: &Predictions) -> Result<bool> {
    let (values, labels) = preds.host_rows()?;
    let k = preds.n_columns();
    fn all<T: Copy + PartialOrd>(v: &[T], labels: &[i64], k: usize) -> bool {
        v.chunks_exact(k).zip(labels).all(|(row, &y)| {
            let zy = row[y as usize];
            row.iter().enumerate().all(|(j, &z)| j == y as usize || z < zy)
        })
    }
    Ok(match values {
        HostValues::F32(v) => all(&v, &labels, k),
        HostValues::F64(v) => all(&v, &labels, k),
    })
}
