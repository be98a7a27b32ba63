//! Validation of raw predictions, once, at the boundary.
//!
//! The rules (docs/conventions.md): N >= 1, K >= 2 for multiclass input, labels in
//! `[0, K)` (binary: `{0, 1}`), every value finite, probabilities in `[0, 1]` with rows summing to
//! 1 within a tolerance. Each failure names the first offending row.

use super::ScoreKind;
use crate::error::{CalibError, Result};
use calib_kernels::{LANES, dispatch};

/// Default tolerance on `|sum_k p[i,k] - 1|` for probability input.
///
/// float32 softmax outputs of K = 1000 classes sum to 1 within ~1e-5; 1e-3 also accepts
/// probabilities that were stored rounded to a few digits (CSV dumps).
pub const DEFAULT_ROW_SUM_TOLERANCE: f64 = 1e-3;

/// Checks `values` (`[n_samples, n_columns]`, row-major) and `labels` on the host.
///
/// `n_columns` is 1 for [`ScoreKind::Binary`]. `row_offset` is added to reported rows, so chunks
/// of a larger input report positions in the whole.
pub(crate) fn validate_host<T: Copy + Into<f64> + Sync>(
    kind: ScoreKind,
    values: &[T],
    n_columns: usize,
    labels: &[i64],
    tolerance: f64,
    row_offset: usize,
) -> Result<()> {
    if is_clean_in_pieces(kind, values, n_columns, labels, tolerance) {
        return Ok(());
    }
    first_error(kind, values, n_columns, labels, tolerance, row_offset)
}

/// The first broken rule, row by row (`Ok` when none is).
fn first_error<T: Copy + Into<f64>>(
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

/// Values a piece of [`is_clean_in_pieces`] checks at least (1 MiB of f32): smaller inputs
/// are one piece, on the calling thread.
const PIECE_VALUES: usize = 1 << 18;

/// [`is_clean`] of whole rows in pieces, one per thread: a chunk's check runs beside the
/// others instead of before them (on 10^7 x 100 f32 it was 0.6 s of a pass's serial time).
fn is_clean_in_pieces<T: Copy + Into<f64> + Sync>(
    kind: ScoreKind,
    values: &[T],
    n_columns: usize,
    labels: &[i64],
    tolerance: f64,
) -> bool {
    let (n, c) = (labels.len(), n_columns.max(1));
    if values.len() != n * c {
        return false;
    }
    let pieces = (values.len() / PIECE_VALUES).clamp(1, calib_kernels::threads());
    let per = n.div_ceil(pieces).max(1);
    let starts: Vec<usize> = (0..n).step_by(per).collect();
    let piece = |&a: &usize| {
        let b = (a + per).min(n);
        is_clean(kind, &values[a * c..b * c], c, &labels[a..b], tolerance)
    };
    calib_kernels::in_order(&starts, piece).into_iter().all(|ok| ok)
}

/// Whether every rule holds, by branch-free lane flags that vectorise (the row loop in
/// [`first_error`], which names the first offending row, stops at every value; on a 4 GB input
/// it cost a quarter of a one-pass evaluation). Row sums of probabilities are added in the row
/// loop's order, so both agree on every row.
fn is_clean<T: Copy + Into<f64>>(
    kind: ScoreKind,
    values: &[T],
    n_columns: usize,
    labels: &[i64],
    tolerance: f64,
) -> bool {
    // One range test per value: NaN fails every comparison, and +-inf lie outside both.
    let (lo, hi) = if kind == ScoreKind::Logits { (f64::MIN, f64::MAX) } else { (0.0, 1.0) };
    let n_classes = if kind == ScoreKind::Binary { 2 } else { n_columns } as u64;
    let (values_ok, labels_ok) = dispatch(
        #[inline(always)]
        || {
            let values_ok = !any_lane(values, |v| {
                let v: f64 = v.into();
                !((v >= lo) & (v <= hi))
            });
            // A negative label is above every class count as u64.
            let labels_ok = !any_lane(labels, |l| l as u64 >= n_classes);
            (values_ok, labels_ok)
        },
    );
    let sums_ok = kind != ScoreKind::Probabilities
        || values.chunks_exact(n_columns).all(|row| {
            let sum = row.iter().fold(0.0f64, |s, &v| s + v.into());
            (sum - 1.0).abs() <= tolerance
        });
    values_ok && labels_ok && sums_ok && values.len() == labels.len() * n_columns
}

/// Whether `bad` holds for some element, by [`LANES`] flags ORed without branches (a plain
/// `any` stops at each element and stays scalar).
#[inline(always)]
fn any_lane<T: Copy>(items: &[T], bad: impl Fn(T) -> bool) -> bool {
    let mut flags = [false; LANES];
    let chunks = items.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (f, &v) in flags.iter_mut().zip(c) {
            *f |= bad(v);
        }
    }
    flags.iter().any(|&f| f) || tail.iter().any(|&v| bad(v))
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
    fn the_vectorised_check_agrees_with_the_row_loop() {
        let logits = [0.5f64, -3.0, 1e300, -0.0];
        let unit = [0.0f64, 1.0, 0.25, 0.75];
        let cases: Vec<(ScoreKind, Vec<f64>, usize, Vec<i64>)> = vec![
            (ScoreKind::Logits, logits.to_vec(), 2, vec![0, 1]),
            (ScoreKind::Logits, logits.to_vec(), 2, vec![0, 2]),
            (ScoreKind::Logits, logits.to_vec(), 2, vec![-1, 1]),
            (ScoreKind::Logits, vec![0.5, f64::NAN, 1.0, 2.0], 2, vec![0, 1]),
            (ScoreKind::Logits, vec![0.5, 1.0, f64::NEG_INFINITY, 2.0], 2, vec![0, 1]),
            (ScoreKind::Probabilities, unit.to_vec(), 2, vec![1, 0]),
            (ScoreKind::Probabilities, vec![0.0, 1.0, 0.5, 0.5004], 2, vec![1, 0]),
            (ScoreKind::Probabilities, vec![0.0, 1.0, 0.5, 0.502], 2, vec![1, 0]),
            (ScoreKind::Probabilities, vec![-0.0, 1.0, 1.0000001, 0.0], 2, vec![1, 0]),
            (ScoreKind::Binary, unit.to_vec(), 1, vec![0, 1, 1, 0]),
            (ScoreKind::Binary, vec![0.0, 1.5, 0.2, 0.1], 1, vec![0, 1, 1, 0]),
            (ScoreKind::Binary, unit.to_vec(), 1, vec![0, 1, 2, 0]),
        ];
        for (kind, v, c, y) in cases {
            let slow = first_error(kind, &v, c, &y, 1e-3, 0);
            assert_eq!(is_clean(kind, &v, c, &y, 1e-3), slow.is_ok(), "{kind:?} {v:?} {y:?}");
            // Debug text: a NaN in the error is not equal to itself.
            let fast = validate_host(kind, &v, c, &y, 1e-3, 0);
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
        }
    }

    #[test]
    fn binary_labels_are_zero_or_one() {
        let v = [0.5f64, 0.2];
        let err = validate_host(ScoreKind::Binary, &v, 1, &[1, 2], 1e-3, 0).unwrap_err();
        assert_eq!(err, CalibError::LabelOutOfRange { row: 1, label: 2, n_classes: 2 });
    }
}
