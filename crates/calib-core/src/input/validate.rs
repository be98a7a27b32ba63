//! Validation of raw predictions, once, at the boundary.
//!
//! The rules (docs/conventions.md): N >= 1, K >= 2 for multiclass input, labels in
//! `[0, K)` (binary: `{0, 1}`), every value finite, probabilities in `[0, 1]` with rows summing to
//! 1 within a tolerance. Each failure names the first offending row.

use super::ScoreKind;
use crate::error::{CalibError, Result};

/// Default tolerance on `|sum_k p[i,k] - 1|` for probability input.
///
/// float32 softmax outputs of K = 1000 classes sum to 1 within ~1e-5; 1e-3 also accepts
/// probabilities that were stored rounded to a few digits (CSV dumps).
pub const DEFAULT_ROW_SUM_TOLERANCE: f64 = 1e-3;

/// Checks `values` (`[n_samples, n_columns]`, row-major) and `labels` on the host.
///
/// `n_columns` is 1 for [`ScoreKind::Binary`]. `row_offset` is added to reported rows, so chunks
/// of a larger input report positions in the whole.
pub(crate) fn validate_host<T: Copy + Into<f64>>(
    kind: ScoreKind,
    values: &[T],
    n_columns: usize,
    labels: &[i64],
    tolerance: f64,
    row_offset: usize,
) -> Result<()> {
    let n_classes = match kind {
        ScoreKind::Binary => 2,
        _ => n_columns,
    };
    let n_rows = values.len() / n_columns.max(1);
    for (i, row) in values.chunks_exact(n_columns).enumerate() {
        let row_index = i + row_offset;
        let mut sum = 0.0f64;
        for (column, &v) in row.iter().enumerate() {
            let v: f64 = v.into();
            if !v.is_finite() {
                return Err(CalibError::NonFinite { row: row_index, column, value: v });
            }
            if kind != ScoreKind::Logits && !(0.0..=1.0).contains(&v) {
                return Err(CalibError::ProbabilityOutOfRange { row: row_index, column, value: v });
            }
            sum += v;
        }
        if kind == ScoreKind::Probabilities && (sum - 1.0).abs() > tolerance {
            return Err(CalibError::RowSum { row: row_index, sum, tolerance });
        }
        let label = labels[i];
        if label < 0 || label as u64 >= n_classes as u64 {
            return Err(CalibError::LabelOutOfRange { row: row_index, label, n_classes });
        }
    }
    debug_assert_eq!(n_rows, labels.len());
    Ok(())
}

/// Shape checks shared by every constructor.
pub(crate) fn validate_shape(
    kind: ScoreKind,
    n_samples: usize,
    n_columns: usize,
    n_labels: usize,
) -> Result<()> {
    if n_samples == 0 {
        return Err(CalibError::Empty);
    }
    if kind != ScoreKind::Binary && n_columns < 2 {
        return Err(CalibError::TooFewClasses { n_classes: n_columns });
    }
    if n_samples != n_labels {
        return Err(CalibError::LengthMismatch { n_scores: n_samples, n_labels });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_first_offending_row() {
        let v = [0.1f32, 0.9, 0.2, f32::NAN, f32::INFINITY, 0.0];
        let err = validate_host(ScoreKind::Logits, &v, 2, &[0, 1, 0], 1e-3, 10).unwrap_err();
        assert!(matches!(err, CalibError::NonFinite { row: 11, column: 1, .. }), "{err}");
    }

    #[test]
    fn probabilities_must_sum_to_one() {
        let v = [0.5f64, 0.5, 0.6, 0.6];
        let err = validate_host(ScoreKind::Probabilities, &v, 2, &[0, 1], 1e-3, 0).unwrap_err();
        assert!(matches!(err, CalibError::RowSum { row: 1, .. }), "{err}");
    }

    #[test]
    fn binary_labels_are_zero_or_one() {
        let v = [0.5f64, 0.2];
        let err = validate_host(ScoreKind::Binary, &v, 1, &[1, 2], 1e-3, 0).unwrap_err();
        assert_eq!(err, CalibError::LabelOutOfRange { row: 1, label: 2, n_classes: 2 });
    }
}
