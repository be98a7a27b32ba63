//! Arrow columns to calib's host rows: scores as one list column (`FixedSizeList`, `List` or
//! `LargeList` of floats), as K float columns, or as one float column (binary: the
//! positive-class score); labels as one integer or boolean column.
//!
//! Shared by the SQL aggregates and by `calib eval`'s Parquet and Arrow IPC reader, so a table
//! means the same thing to both.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, GenericListArray, OffsetSizeTrait,
};
use arrow_cast::cast;
use arrow_schema::DataType;

use super::rows_error::{Result, RowsError};
use crate::array::Scores;

/// Rows gathered from Arrow columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Scores `[n, n_columns]` row-major, f32 or f64 as stored (f16 widens to f32).
    pub scores: Scores,
    /// C: K, or 1 for one float column (binary).
    pub n_columns: usize,
    /// Class labels.
    pub labels: Vec<i64>,
}

/// Whether `data_type` can hold scores: a float, or a list of floats.
pub fn is_score_type(data_type: &DataType) -> bool {
    match data_type {
        DataType::FixedSizeList(f, _) | DataType::List(f) | DataType::LargeList(f) => {
            f.data_type().is_floating()
        }
        t => t.is_floating(),
    }
}

/// Whether `data_type` can hold class labels: an integer or a boolean.
pub fn is_label_type(data_type: &DataType) -> bool {
    data_type.is_integer() || *data_type == DataType::Boolean
}

/// The rows `rows` (all when `None`) of one score column and one label column.
///
/// # Errors
/// [`RowsError`] for a score column that is not a float or a list of floats, list rows of
/// different lengths, a null inside a score list, a null score row or label among the rows
/// asked for, and labels that are not integers or booleans.
pub fn gather(scores: &dyn Array, labels: &dyn Array, rows: Option<&[usize]>) -> Result<Rows> {
    let labels = gather_labels(labels, rows)?;
    let (scores, n_columns) = match scores.data_type() {
        DataType::FixedSizeList(..) => gather_fixed(scores.as_fixed_size_list(), rows)?,
        DataType::List(_) => gather_list(scores.as_list::<i32>(), rows)?,
        DataType::LargeList(_) => gather_list(scores.as_list::<i64>(), rows)?,
        t if t.is_floating() => (gather_floats(scores, rows)?, 1),
        t => return Err(RowsError::ScoreType(t.to_string())),
    };
    Ok(Rows { scores, n_columns, labels })
}

/// The rows `rows` (all when `None`) of K float score columns (one per class, in order) and
/// one label column.
///
/// # Errors
/// As [`gather`]; the columns must all be floats.
pub fn gather_columns(
    columns: &[&dyn Array],
    labels: &dyn Array,
    rows: Option<&[usize]>,
) -> Result<Rows> {
    let labels = gather_labels(labels, rows)?;
    let per_column: Vec<Scores> =
        columns.iter().map(|c| gather_floats(*c, rows)).collect::<Result<_>>()?;
    let k = columns.len();
    let n = labels.len();
    let scores = if per_column.iter().all(|c| matches!(c, Scores::F32(_))) {
        let cols: Vec<&[f32]> = per_column
            .iter()
            .map(|c| match c {
                Scores::F32(v) => v.as_slice(),
                Scores::F64(_) => unreachable!("checked above"),
            })
            .collect();
        Scores::F32(interleave(&cols, n))
    } else {
        let cols: Vec<Vec<f64>> = per_column.into_iter().map(widen).collect();
        let refs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        Scores::F64(interleave(&refs, n))
    };
    Ok(Rows { scores, n_columns: k, labels })
}

/// Row-major rows from column-major columns.
fn interleave<T: Copy>(columns: &[&[T]], n: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(n * columns.len());
    for i in 0..n {
        out.extend(columns.iter().map(|c| c[i]));
    }
    out
}

fn widen(scores: Scores) -> Vec<f64> {
    match scores {
        Scores::F32(v) => v.into_iter().map(f64::from).collect(),
        Scores::F64(v) => v,
    }
}

/// Labels of `rows` as i64 (booleans as 0/1), refusing nulls.
fn gather_labels(labels: &dyn Array, rows: Option<&[usize]>) -> Result<Vec<i64>> {
    let data_type = labels.data_type();
    if !is_label_type(data_type) {
        return Err(RowsError::LabelType(data_type.to_string()));
    }
    let wide: ArrayRef = match data_type {
        DataType::Boolean => {
            let b: &BooleanArray = labels.as_boolean();
            std::sync::Arc::new(arrow_array::Int64Array::from_iter(
                b.iter().map(|v| v.map(i64::from)),
            ))
        }
        DataType::Int64 => arrow_array::make_array(labels.to_data()),
        _ => cast(labels, &DataType::Int64).map_err(|e| RowsError::LabelType(e.to_string()))?,
    };
    let values = wide.as_primitive::<Int64Type>();
    let pick = |i: usize| {
        if values.is_null(i) { Err(RowsError::NullLabel { row: i }) } else { Ok(values.value(i)) }
    };
    match rows {
        Some(rows) => rows.iter().map(|&i| pick(i)).collect(),
        None => (0..values.len()).map(pick).collect(),
    }
}

/// A number column of sample weights as f64, refusing nulls (the checks of their values are
/// calib-core's).
///
/// # Errors
/// [`RowsError::WeightType`] for a column that is not numbers; [`RowsError::NullWeight`].
pub fn gather_weights(column: &dyn Array) -> Result<Vec<f64>> {
    if !column.data_type().is_numeric() {
        return Err(RowsError::WeightType(column.data_type().to_string()));
    }
    if let Some(row) = first_null(column, None) {
        return Err(RowsError::NullWeight { row });
    }
    let wide =
        cast(column, &DataType::Float64).map_err(|e| RowsError::WeightType(e.to_string()))?;
    Ok(wide.as_primitive::<Float64Type>().values().to_vec())
}

/// One float column's `rows`, refusing nulls.
fn gather_floats(column: &dyn Array, rows: Option<&[usize]>) -> Result<Scores> {
    if let Some(row) = first_null(column, rows) {
        return Err(RowsError::NullScore { row });
    }
    let spans: Vec<(usize, usize)> = match rows {
        Some(rows) => rows.iter().map(|&i| (i, 1)).collect(),
        None => vec![(0, column.len())],
    };
    floats_of(column, &spans).map_err(|t| RowsError::ScoreType(t.to_string()))
}

/// The first null among `rows` of `column`.
fn first_null(column: &dyn Array, rows: Option<&[usize]>) -> Option<usize> {
    column.null_count().checked_sub(1)?;
    match rows {
        Some(rows) => rows.iter().copied().find(|&i| column.is_null(i)),
        None => (0..column.len()).find(|&i| column.is_null(i)),
    }
}

/// Rows of a fixed-size list of floats.
fn gather_fixed(list: &FixedSizeListArray, rows: Option<&[usize]>) -> Result<(Scores, usize)> {
    if let Some(row) = first_null(list, rows) {
        return Err(RowsError::NullScore { row });
    }
    let k = usize::try_from(list.value_length()).unwrap_or(0);
    let spans: Vec<(usize, usize)> = match rows {
        Some(rows) => rows.iter().map(|&i| (list.value_offset(i) as usize, k)).collect(),
        None => vec![(list.value_offset(0).max(0) as usize, k * list.len())],
    };
    Ok((gather_spans(list.values(), &spans)?, k))
}

/// Rows of a variable-size list of floats, every row of one length.
fn gather_list<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    rows: Option<&[usize]>,
) -> Result<(Scores, usize)> {
    if let Some(row) = first_null(list, rows) {
        return Err(RowsError::NullScore { row });
    }
    let offsets = list.value_offsets();
    let span = |i: usize| (offsets[i].as_usize(), (offsets[i + 1] - offsets[i]).as_usize());
    let spans: Vec<(usize, usize)> = match rows {
        Some(rows) => rows.iter().map(|&i| span(i)).collect(),
        None => (0..list.len()).map(span).collect(),
    };
    let k = spans.first().map_or(0, |s| s.1);
    if let Some(at) = spans.iter().position(|s| s.1 != k) {
        let row = rows.map_or(at, |r| r[at]);
        return Err(RowsError::RowLength { row, found: spans[at].1, expected: k });
    }
    Ok((gather_spans(list.values(), &spans)?, k))
}

/// The float values of `spans` (offset, length) of a list's child array, in order.
fn gather_spans(values: &ArrayRef, spans: &[(usize, usize)]) -> Result<Scores> {
    if values.null_count() > 0 {
        let nulls = spans.iter().any(|&(o, l)| (o..o + l).any(|j| values.is_null(j)));
        if nulls {
            return Err(RowsError::NullInList);
        }
    }
    floats_of(values.as_ref(), spans).map_err(|t| RowsError::ScoreType(format!("list of {t}")))
}

/// The `spans` of a float array (f16 widened to f32); its type when it is not a float.
fn floats_of(
    values: &dyn Array,
    spans: &[(usize, usize)],
) -> std::result::Result<Scores, DataType> {
    Ok(match values.data_type() {
        DataType::Float64 => {
            Scores::F64(concat(values.as_primitive::<Float64Type>().values(), spans))
        }
        DataType::Float32 => {
            Scores::F32(concat(values.as_primitive::<Float32Type>().values(), spans))
        }
        DataType::Float16 => {
            let wide = cast(values, &DataType::Float32).map_err(|_| DataType::Float16)?;
            Scores::F32(concat(wide.as_primitive::<Float32Type>().values(), spans))
        }
        t => return Err(t.clone()),
    })
}

/// The `spans` (offset, length) of `values`, one after another, in one allocation.
fn concat<T: Copy>(values: &[T], spans: &[(usize, usize)]) -> Vec<T> {
    let mut out = Vec::with_capacity(spans.iter().map(|s| s.1).sum());
    for &(o, l) in spans {
        out.extend_from_slice(&values[o..o + l]);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Float64Type;
    use arrow_array::{Float16Array, Float64Array, Int32Array, ListArray};
    use half::f16;

    use super::*;

    fn list(rows: Vec<Option<Vec<Option<f64>>>>) -> ListArray {
        ListArray::from_iter_primitive::<Float64Type, _, _>(rows)
    }

    #[test]
    fn lists_gather_rows_in_order_and_picks_select() {
        let scores = list(vec![
            Some(vec![Some(1.0), Some(2.0)]),
            Some(vec![Some(3.0), Some(4.0)]),
            Some(vec![Some(5.0), Some(6.0)]),
        ]);
        let labels = BooleanArray::from(vec![true, false, true]);
        let all = gather(&scores, &labels, None).unwrap();
        assert_eq!(all.scores, Scores::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        assert_eq!((all.n_columns, all.labels), (2, vec![1, 0, 1]));
        let picked = gather(&scores.slice(1, 2), &labels.slice(1, 2), Some(&[1, 0])).unwrap();
        assert_eq!(picked.scores, Scores::F64(vec![5.0, 6.0, 3.0, 4.0]));
        assert_eq!(picked.labels, vec![1, 0]);
    }

    #[test]
    fn columns_interleave_and_f16_widens() {
        let a = Float16Array::from(vec![f16::from_f32(0.5), f16::from_f32(0.25)]);
        let b = Float64Array::from(vec![0.5, 0.75]);
        let y = Int32Array::from(vec![0, 1]);
        let rows = gather_columns(&[&a, &b], &y, None).unwrap();
        assert_eq!(rows.scores, Scores::F64(vec![0.5, 0.5, 0.25, 0.75]));
        let one = gather(&a, &y, None).unwrap();
        assert_eq!((one.scores, one.n_columns), (Scores::F32(vec![0.5, 0.25]), 1));
    }

    #[test]
    fn nulls_ragged_rows_and_wrong_types_are_refused() {
        let y = Int32Array::from(vec![Some(0), None]);
        let scores = list(vec![Some(vec![Some(1.0), Some(2.0)]), Some(vec![Some(3.0)])]);
        let e = gather(&scores, &Int32Array::from(vec![0, 1]), None).unwrap_err();
        assert_eq!(e, RowsError::RowLength { row: 1, found: 1, expected: 2 });
        let two = list(vec![Some(vec![Some(1.0), Some(2.0)]), Some(vec![Some(3.0), Some(4.0)])]);
        assert_eq!(gather(&two, &y, None).unwrap_err(), RowsError::NullLabel { row: 1 });
        assert!(gather(&two, &y, Some(&[0])).is_ok(), "a null outside the rows is fine");
        let holes = list(vec![Some(vec![Some(1.0), None])]);
        let e = gather(&holes, &Int32Array::from(vec![0]), None).unwrap_err();
        assert_eq!(e, RowsError::NullInList);
        let floats = Float64Array::from(vec![0.5]);
        let e = gather(&floats, &Float64Array::from(vec![0.0]), None).unwrap_err();
        assert!(matches!(e, RowsError::LabelType(_)), "{e}");
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        let e = gather(ints.as_ref(), &Int32Array::from(vec![0]), None).unwrap_err();
        assert!(matches!(e, RowsError::ScoreType(_)), "{e}");
    }
}
