//! [`HostScores`]: the probabilities a binary map reads, on the host in f64.

use calib_core::input::{Predictions, ScoreKind};

use crate::error::Result;

/// Host probabilities `[N, C]` (row-major, f64) with their labels: the positive-class score of
/// binary input (`C = 1`), or the K class probabilities (the softmax of logits, computed
/// stably in f64; probability input as given).
#[derive(Debug, Clone)]
pub(crate) struct HostScores {
    /// `[N, C]`, row-major.
    pub values: Vec<f64>,
    /// C: 1 for binary input, K otherwise.
    pub n_columns: usize,
    /// `[N]`.
    pub labels: Vec<i64>,
}

impl HostScores {
    /// Reads `preds` back once and turns logits into probabilities.
    ///
    /// # Errors
    /// [`crate::FitError::Input`] when the rows cannot be read back.
    pub fn read(preds: &Predictions) -> Result<Self> {
        let (values, labels) = preds.host_rows()?;
        let mut values: Vec<f64> = values.into_f64();
        let n_columns = preds.n_columns();
        if preds.kind() == ScoreKind::Logits {
            // Rows shared out over the cores: at 50,000 x 1,000 this softmax is most of a
            // top-label fit.
            let threads = calib_kernels::threads();
            let rows = labels.len().div_ceil(threads).max(4096);
            std::thread::scope(|scope| {
                for block in values.chunks_mut(rows * n_columns) {
                    scope.spawn(move || {
                        block.chunks_exact_mut(n_columns).for_each(softmax_in_place)
                    });
                }
            });
        }
        Ok(Self { values, n_columns, labels: labels.into_owned() })
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
}

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
    let mut best = 0;
    for (k, &v) in row.iter().enumerate().skip(1) {
        if v > row[best] {
            best = k;
        }
    }
    best
}
