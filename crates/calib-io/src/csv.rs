//! CSV input: one row per sample, K score columns and a label column.
//!
//! The label column is the one headed `label` (any case) when there is a header, else the last.
//! The header is optional: a first record with any field that is not a number is a header.

use std::path::Path;

use crate::array::{Array, Values};
use crate::error::{IoError, Result};

/// Scores `[N, C]` (f64) and labels `[N]` of a CSV file.
///
/// # Errors
/// [`IoError::Input`] naming the file, line and column of the first field that is not a
/// number, ragged rows, or a file with no rows.
pub fn read_csv(path: &Path) -> Result<(Array, Array)> {
    let origin = path.display().to_string();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| IoError::input(&origin, e.to_string()))?;
    let mut records = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| IoError::input(&origin, e.to_string()))?;
        if !(record.len() == 1 && record[0].is_empty()) {
            records.push(record);
        }
    }
    let is_number = |s: &str| s.parse::<f64>().is_ok();
    let header = records.first().filter(|r| !r.iter().all(is_number)).cloned();
    let first_line = if header.is_some() { 2 } else { 1 };
    let rows = &records[usize::from(header.is_some())..];
    let width = records.first().map_or(0, |r| r.len());
    if rows.is_empty() {
        return Err(IoError::input(&origin, "no data rows"));
    }
    if width < 2 {
        return Err(IoError::input(&origin, "needs at least two columns (scores and a label)"));
    }
    let label_col = header
        .as_ref()
        .and_then(|h| h.iter().position(|f| f.eq_ignore_ascii_case("label")))
        .unwrap_or(width - 1);
    let (mut scores, mut labels) = (Vec::new(), Vec::with_capacity(rows.len()));
    for (i, row) in rows.iter().enumerate() {
        let line = first_line + i;
        for (j, field) in row.iter().enumerate() {
            let v: f64 = field.parse().map_err(|_| {
                IoError::input(
                    &origin,
                    format!("line {line}, column {}: `{field}` is not a number", j + 1),
                )
            })?;
            if j == label_col {
                labels.push(v);
            } else {
                scores.push(v);
            }
        }
    }
    let (n, c) = (rows.len(), width - 1);
    let scores = Array::new(
        format!("{origin} (scores)"),
        "float64".into(),
        vec![n, c],
        Values::F64(scores),
    )?;
    let labels =
        Array::new(format!("{origin} (labels)"), "float64".into(), vec![n], Values::F64(labels))?;
    Ok((scores, labels))
}
