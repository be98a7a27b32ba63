//! What a logistic problem reads: its feature rows ([`Features`]) and targets ([`Targets`]),
//! a chunk of rows at a time.
//!
//! Features and targets computed from the scores and outcomes where they are read
//! ([`Features::Computed`], [`Targets::Outcomes`]) cost no array of their own: on this
//! project's VMs a fresh page costs about a microsecond to fault in, so the `[N, 2]` features
//! and `[N]` targets of a fit on 10^6 scores were 17 ms before the first pass.

use std::ops::Range;

use super::local_rows::{CHUNK, LocalRows};

/// The feature rows of a problem.
#[derive(Clone, Copy)]
pub(crate) enum Features<'a> {
    /// `[N, d]`, row-major.
    Dense(&'a [f64]),
    /// `x_i = A c_i` through a local basis (spline bases); no intercept.
    Local(&'a LocalRows),
    /// Computed a chunk at a time where they are read (a map's transform of the scores).
    Computed(&'a dyn RowFeatures),
}

/// Features computed from something each row holds (its score), `d` of them.
pub(crate) trait RowFeatures: Sync {
    /// Writes feature `a` of rows `rows` into `columns[a][..rows.len()]`, for every `a < d`.
    fn fill(&self, rows: Range<usize>, columns: &mut [Vec<f64>]);
}

impl std::fmt::Debug for Features<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Dense(x) => write!(f, "Dense({} values)", x.len()),
            Self::Local(rows) => write!(f, "Local({} rows)", rows.len()),
            Self::Computed(_) => f.write_str("Computed"),
        }
    }
}

impl Features<'_> {
    /// Feature `a` of rows `rows` into `columns[a][..rows.len()]` (`a < d`); local rows have
    /// no columns (their sums are taken in the basis).
    #[inline(always)]
    pub fn columns(&self, d: usize, rows: Range<usize>, columns: &mut [Vec<f64>]) {
        match *self {
            Self::Dense(x) => {
                let block = &x[rows.start * d..rows.end * d];
                for (a, column) in columns.iter_mut().take(d).enumerate() {
                    column[..rows.len()]
                        .iter_mut()
                        .zip(block.iter().skip(a).step_by(d))
                        .for_each(|(c, &v)| *c = v);
                }
            }
            Self::Computed(f) => f.fill(rows, &mut columns[..d]),
            Self::Local(_) => unreachable!("local rows are summed in their basis"),
        }
    }
}

/// Computed features of rows `0..n` written out once, `[n, d]` row-major (as
/// [`Features::Dense`] reads them), a chunk at a time.
pub(crate) fn stored_rows(features: &dyn RowFeatures, n: usize, d: usize) -> Vec<f64> {
    let mut rows = vec![0.0; n * d];
    let mut columns = vec![vec![0.0; CHUNK]; d];
    for (c, block) in rows.chunks_mut(CHUNK * d).enumerate() {
        let len = block.len() / d;
        features.fill(c * CHUNK..c * CHUNK + len, &mut columns);
        for (i, row) in block.chunks_exact_mut(d).enumerate() {
            row.iter_mut().zip(&columns).for_each(|(x, column)| *x = column[i]);
        }
    }
    rows
}

/// The targets of a problem.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Targets<'a> {
    /// One target in `[0, 1]` per row.
    Values(&'a [f64]),
    /// `positive` where the row's outcome is true, `negative` where it is false (0 and 1, or
    /// Platt's soft targets): the problem knows the outcomes, and its evaluations give the
    /// rows' NLL at them.
    Outcomes { outcomes: &'a [bool], positive: f64, negative: f64 },
}

impl<'a> Targets<'a> {
    /// N.
    pub fn len(&self) -> usize {
        match self {
            Self::Values(t) => t.len(),
            Self::Outcomes { outcomes, .. } => outcomes.len(),
        }
    }

    /// Hard targets `1` and `0` from the outcomes.
    pub fn hard(outcomes: &'a [bool]) -> Self {
        Targets::Outcomes { outcomes, positive: 1.0, negative: 0.0 }
    }

    /// The targets of rows `rows`: the slice itself, or written into `buf` from the outcomes.
    #[inline(always)]
    pub fn chunk<'b>(self, rows: Range<usize>, buf: &'b mut [f64]) -> &'b [f64]
    where
        'a: 'b,
    {
        match self {
            Self::Values(t) => &t[rows],
            Self::Outcomes { outcomes, positive, negative } => {
                let buf = &mut buf[..rows.len()];
                for (t, &o) in buf.iter_mut().zip(&outcomes[rows]) {
                    *t = if o { positive } else { negative };
                }
                buf
            }
        }
    }

    /// Each row's `t - y`, its target less its outcome (0 for hard targets), into `buf`;
    /// `None` without outcomes. A row's NLL at its outcome is its loss term plus `(t - y) z`.
    #[inline(always)]
    pub fn offsets(self, rows: Range<usize>, buf: &mut [f64]) -> Option<&[f64]> {
        let Self::Outcomes { outcomes, positive, negative } = self else { return None };
        let buf = &mut buf[..rows.len()];
        for (o, &y) in buf.iter_mut().zip(&outcomes[rows]) {
            *o = if y { positive - 1.0 } else { negative };
        }
        Some(buf)
    }
}

/// `-ln 1e-15`: the largest NLL a row counts (scikit-learn's `log_loss` clip).
pub(crate) const NLL_CAP: f64 = 34.538_776_394_910_684;

#[cfg(test)]
mod tests {
    #[test]
    fn the_cap_is_the_clip() {
        assert_eq!(super::NLL_CAP, -(1e-15f64).ln());
    }
}
