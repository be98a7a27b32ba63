//! Applying a calibrator to new scores, in row chunks.

use burn::tensor::Transaction;
use calib_core::input::{Predictions, ScoreKind};

use crate::calibrator::{Calibrator, host_predictions};
use crate::error::{FitError, Result};
use crate::fit::params::to_f64;

/// Elements per chunk (rows x K): 4 Mi values (16 MiB in f32), well inside every device's
/// buffer limit (wgpu on a software driver fails above ~128 MiB).
pub(crate) const DEFAULT_CHUNK_ROWS: usize = 4 << 20;

/// Calibrated scores of every row of `preds`, computed `chunk_elems / K` rows at a time on the
/// calibrator's device and gathered on the host.
pub(crate) fn calibrate<C: Calibrator>(
    calibrator: &C,
    preds: &Predictions,
    chunk_elems: usize,
) -> Result<Predictions> {
    let want = match calibrator.output_kind() {
        ScoreKind::Binary => ScoreKind::Binary,
        _ => ScoreKind::Logits,
    };
    if preds.kind() != want {
        return Err(FitError::UnsuitableInput {
            method: C::METHOD.name().into(),
            reason: format!("it applies to {want:?} scores, got {:?}", preds.kind()),
        });
    }
    // 0: the calibrator takes any K (temperature scaling).
    if calibrator.n_classes() != 0 && preds.n_classes() != calibrator.n_classes() {
        return Err(FitError::ClassMismatch {
            expected: calibrator.n_classes(),
            found: preds.n_classes(),
        });
    }
    let (n, c) = (preds.n_samples(), preds.n_columns());
    let rows = (chunk_elems / c).max(1);
    let (device, dtype) = (calibrator.device(), calibrator.dtype());
    let mut values = Vec::with_capacity(n * c);
    let mut labels = Vec::with_capacity(n);
    for start in (0..n).step_by(rows) {
        let len = rows.min(n - start);
        let (v, l) = preds.rows_on(start, len, dtype, &device);
        let out = calibrator.forward_scores(v);
        let mut data = Transaction::default()
            .register(out)
            .register(l)
            .try_execute()
            .map_err(|e| FitError::Backend(e.to_string()))?;
        let l = data.pop().expect("two reads").convert::<i64>().try_into_vec::<i64>();
        let l = l.map_err(|e| FitError::Backend(format!("cannot read labels back: {e:?}")))?;
        values.extend(to_f64(data.pop().expect("two reads"))?);
        labels.extend(l);
    }
    host_predictions(values, c, &labels, want, preds.device())
}
