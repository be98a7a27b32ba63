//! [`HostScores`]: the probabilities a binary map reads, on the host in f64.

use std::borrow::Cow;

use calib_core::input::{HostValues, Predictions, ScoreKind};

use crate::error::Result;

/// Host probabilities `[N, C]` (row-major, f64) with their labels: the positive-class score of
/// binary input (`C = 1`), or the K class probabilities (the softmax of logits, computed
/// stably in f64; probability input as given). f64 probabilities held on the host are
/// borrowed, not copied (a fit only reads them).
#[derive(Debug, Clone)]
pub(crate) struct HostScores<'a> {
    /// `[N, C]`, row-major.
    pub values: Cow<'a, [f64]>,
    /// C: 1 for binary input, K otherwise.
    pub n_columns: usize,
    /// `[N]`.
    pub labels: Cow<'a, [i64]>,
}

impl<'a> HostScores<'a> {
    /// Reads `preds` back once and turns logits into probabilities.
    ///
    /// # Errors
    /// [`crate::FitError::Input`] when the rows cannot be read back.
    pub fn read(preds: &'a Predictions) -> Result<Self> {
        let (values, labels) = preds.host_rows()?;
        let n_columns = preds.n_columns();
        if preds.kind() != ScoreKind::Logits {
            let values = match values {
                HostValues::F64(v) => v,
                f32 => Cow::Owned(f32.into_f64()),
            };
            return Ok(Self { values, n_columns, labels });
        }
        let mut values: Vec<f64> = values.into_f64();
        // Rows shared out over the cores: at 50,000 x 1,000 this softmax is most of a
        // top-label fit.
        calib_kernels::for_row_blocks(&mut values, n_columns, 4096, |_, block| {
            block.chunks_exact_mut(n_columns).for_each(softmax_in_place)
        });
        Ok(Self { values: Cow::Owned(values), n_columns, labels })
    }

    /// N.
    pub fn n_samples(&self) -> usize {
        self.labels.len()
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.n_columns..(i + 1) * self.n_columns]
    }

    /// Column `k` (a copy).
    pub fn column(&self, k: usize) -> Vec<f64> {
        self.values.iter().skip(k).step_by(self.n_columns).copied().collect()
    }

    /// `f(k, column k)` for every column, in column order: the columns copied out a few at a
    /// time (four cache lines of each row per group), the groups shared out over the cores. A
    /// column at a time would read every cache line of the rows once per column.
    pub fn map_columns<R: Send>(&self, f: impl Fn(usize, Vec<f64>) -> R + Sync) -> Vec<R> {
        let c = self.n_columns;
        // Every core a group, while a group is at most COLUMN_GROUP columns (K = 10 on two
        // cores: two groups of five, not one of ten on one core).
        let group = c.div_ceil(calib_kernels::threads()).clamp(1, COLUMN_GROUP);
        let groups: Vec<usize> = (0..c).step_by(group).collect();
        let per_group = calib_kernels::in_order(&groups, |&k0| {
            let k1 = (k0 + group).min(c);
            let n = self.n_samples();
            let mut columns = vec![Vec::with_capacity(n); k1 - k0];
            for i in 0..n {
                // The hardware prefetcher stops at page boundaries; the rows are 8 c bytes
                // apart (prefetching measured 4-10 % faster at 50,000 x 1,000).
                if i + PREFETCH_ROWS < n {
                    let ahead = (i + PREFETCH_ROWS) * c;
                    calib_kernels::prefetch(&self.values[ahead + k0..ahead + k1]);
                }
                for (column, &v) in columns.iter_mut().zip(&self.values[i * c + k0..i * c + k1]) {
                    column.push(v);
                }
            }
            columns.into_iter().enumerate().map(|(j, column)| f(k0 + j, column)).collect()
        });
        per_group.into_iter().flat_map(|g: Vec<R>| g).collect()
    }
}

/// Columns copied out together by [`HostScores::map_columns`]: four cache lines of f64 (one
/// line: one-vs-rest fits at 50,000 x 1,000 7-13 % slower).
const COLUMN_GROUP: usize = 32;
/// How many rows ahead [`HostScores::map_columns`] prefetches.
const PREFETCH_ROWS: usize = 8;

/// Softmax of one row of logits, in place, by max-subtraction.
pub(crate) fn softmax_in_place(row: &mut [f64]) {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for z in row.iter_mut() {
        *z = (*z - max).exp();
        sum += *z;
    }
    row.iter_mut().for_each(|p| *p /= sum);
}

/// The index of the largest value (ties to the lowest index, as every metric breaks them).
pub(crate) fn argmax(row: &[f64]) -> usize {
    calib_kernels::max_and_argmax(row).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_in_groups_are_the_columns() {
        for c in [1, 7, 8, 9, 31, 32, 33, 70] {
            let values: Vec<f64> = (0..50 * c).map(|v| v as f64 * 0.5).collect();
            let scores =
                HostScores { values: values.into(), n_columns: c, labels: vec![0; 50].into() };
            let columns = scores.map_columns(|k, column| (k, column));
            assert_eq!(columns.len(), c);
            for (k, (at, column)) in columns.into_iter().enumerate() {
                assert_eq!((at, column), (k, scores.column(k)));
            }
        }
    }
}
