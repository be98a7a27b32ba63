//! How binary maps calibrate K-class predictions: [`Reduction`] (the user's choice) and
//! [`Form`] (what a fitted calibrator does).
//!
//! ```text
//! binary:       s' = m(s)                                         on the positive-class score
//! one-vs-rest:  q_k = m_k(p_k),  p'_k = q_k / sum_j q_j           (uniform 1/K when the sum is 0)
//!               K = 2: p'_1 = m(p_1), p'_0 = 1 - p'_1             (the binary path on column 1)
//! top-label:    c = argmax p,  h = p_c,  h' = m_c(h),  p'_c = h',
//!               p'_j = p_j (1 - h') / sum_{i != c} p_i for j != c  ((1 - h') / (K - 1) when h = 1)
//!               h' floored at 1/K; any p'_j >= h' capped just below it, the excess spread
//!               over the rest (water-filling), so the argmax never changes
//! ```
//!
//! Conventions: `docs/conventions.md`, "The non-parametric, binary and top-label calibrators".

use serde::{Deserialize, Serialize};

use super::map::BinaryMap;
use super::scores::{HostScores, argmax};
use super::top_label_rows::{TopRow, problems, top_label};

/// How a binary calibrator reduces K-class predictions to binary problems (binary input is
/// always calibrated directly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Reduction {
    /// One map per class on `p[:, k]` with outcome `y == k`, rows renormalised.
    #[default]
    OneVsRest,
    /// One map per predicted class on the top-label confidence (Gupta & Ramdas 2021, M2B);
    /// the argmax never changes.
    TopLabel,
}

/// What a fitted binary calibrator does with its maps (saved as `"binary"`, `"one-vs-rest"`,
/// `"top-label"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// One map on binary scores `[N, 1]`.
    Binary,
    /// One map per class (one map on column 1 when K = 2).
    OneVsRest,
    /// One map per predicted class.
    TopLabel,
}

/// One binary problem: its scores and outcomes.
pub(crate) type Problem = (Vec<f64>, Vec<bool>);

impl Form {
    /// The form for `reduction` on input with `n_columns` columns.
    pub(crate) fn of(reduction: Reduction, n_columns: usize) -> Self {
        match (n_columns, reduction) {
            (1, _) => Self::Binary,
            (_, Reduction::OneVsRest) => Self::OneVsRest,
            (_, Reduction::TopLabel) => Self::TopLabel,
        }
    }

    /// Its code in format-1 saved files.
    pub(crate) fn code(self) -> f64 {
        match self {
            Self::Binary => 0.0,
            Self::OneVsRest => 1.0,
            Self::TopLabel => 2.0,
        }
    }

    /// The form a format-1 file saved as `code`.
    pub(crate) fn from_code(code: f64) -> Option<Self> {
        [Self::Binary, Self::OneVsRest, Self::TopLabel].into_iter().find(|f| f.code() == code)
    }

    /// How many maps the form holds for K classes.
    pub(crate) fn n_maps(self, n_classes: usize) -> usize {
        match self {
            Self::Binary => 1,
            Self::OneVsRest if n_classes == 2 => 1,
            _ => n_classes,
        }
    }

    /// The `(scores, outcomes)` pairs each map is fitted on.
    pub(crate) fn training_sets(self, scores: &HostScores) -> Vec<Problem> {
        let k = scores.n_columns;
        let labels = &scores.labels;
        let outcomes = |c: usize| labels.iter().map(|&y| y == c as i64).collect();
        match self {
            Self::Binary => vec![(scores.column(0), outcomes(1))],
            Self::OneVsRest if k == 2 => vec![(scores.column(1), outcomes(1))],
            Self::OneVsRest => scores.map_columns(|c, column| (column, outcomes(c))),
            Self::TopLabel => problems(&TopRow::all(scores), k),
        }
    }

    /// [`Self::training_sets`] with each pair's sample weight (the problems, then their
    /// weights, in the same order), zero-weight rows left out.
    pub(crate) fn weighted_training_sets(
        self,
        scores: &HostScores,
        weights: &[f64],
    ) -> (Vec<Problem>, Vec<Vec<f64>>) {
        let k = scores.n_columns;
        let labels = &scores.labels;
        let kept = |i: &usize| weights[*i] > 0.0;
        let set = |rows: &[usize], c: usize, positive: i64| {
            let s = rows.iter().map(|&i| scores.row(i)[c]).collect();
            let o = rows.iter().map(|&i| labels[i] == positive).collect();
            ((s, o), rows.iter().map(|&i| weights[i]).collect())
        };
        let all: Vec<usize> = (0..labels.len()).filter(kept).collect();
        let by_prediction: Vec<Vec<usize>>;
        // Each problem: its rows, the score column and the label that is a positive outcome.
        let problems: Vec<(&[usize], usize, i64)> = match self {
            Self::Binary => vec![(&all, 0, 1)],
            Self::OneVsRest if k == 2 => vec![(&all, 1, 1)],
            Self::OneVsRest => (0..k).map(|c| (all.as_slice(), c, c as i64)).collect(),
            Self::TopLabel => {
                let mut rows = vec![Vec::new(); k];
                all.iter().for_each(|&i| rows[argmax(scores.row(i))].push(i));
                by_prediction = rows;
                by_prediction.iter().enumerate().map(|(c, r)| (r.as_slice(), c, c as i64)).collect()
            }
        };
        problems.into_iter().map(|(rows, c, positive)| set(rows, c, positive)).unzip()
    }

    /// `scores` through `maps`, in place: the calibrated probabilities `[N, C]`, rows shared
    /// out over the cores.
    pub(crate) fn apply<M: BinaryMap>(self, maps: &[M], scores: &mut HostScores) {
        let c = scores.n_columns;
        calib_kernels::for_row_blocks(scores.values.to_mut(), c, 1024, |_, block| {
            self.apply_rows(maps, block, c)
        });
    }

    /// The calibrated probability of each row's label: what [`Self::apply`] writes at the
    /// label, without writing the rows (a fit's record reads only these), through the maps'
    /// [`BinaryMap::predict_fast`] (the same bits where that is `predict`). Rows shared out
    /// over the cores.
    pub(crate) fn label_probabilities<M: BinaryMap>(
        self,
        maps: &[M],
        scores: &HostScores,
    ) -> Vec<f64> {
        let (n, c) = (scores.n_samples(), scores.n_columns);
        let mut out = vec![0.0; n];
        calib_kernels::for_row_blocks(&mut out, 1, 1024, |first, block| {
            let rows = first..first + block.len();
            let values = &scores.values[rows.start * c..rows.end * c];
            let labels = &scores.labels[rows];
            calib_kernels::dispatch(
                #[inline(always)]
                || self.label_rows(maps, (values, c), labels, block),
            )
        });
        out
    }

    /// [`Self::label_probabilities`] of one block of rows (in the widest vector copy, so a
    /// map's `predict` that inlines vectorises).
    #[inline(always)]
    fn label_rows<M: BinaryMap>(
        self,
        maps: &[M],
        (values, c): (&[f64], usize),
        labels: &[i64],
        out: &mut [f64],
    ) {
        let positive = |q: f64, y: i64| if y == 1 { q } else { 1.0 - q };
        match self {
            Self::OneVsRest if c > 2 => {
                let tiles = values.chunks(TILE_ROWS * c).zip(labels.chunks(TILE_ROWS));
                for ((tile, y), out) in tiles.zip(out.chunks_mut(TILE_ROWS)) {
                    one_vs_rest_labels(maps, tile, y, out);
                }
            }
            Self::TopLabel => {
                let mut scratch = Vec::with_capacity(c);
                for ((o, row), &y) in out.iter_mut().zip(values.chunks_exact(c)).zip(labels) {
                    let top = TopRow::of(row, y as usize);
                    *o = top.calibrated_at_label(maps, c, || row, &mut scratch);
                }
            }
            // Binary, and one-vs-rest on two columns: the positive-class score (column
            // c - 1) mapped in place, then each label's side of it.
            Self::Binary | Self::OneVsRest => {
                for (o, &s) in out.iter_mut().zip(values.iter().skip(c - 1).step_by(c)) {
                    *o = s;
                }
                maps[0].predict_fast_into(out);
                for (o, &y) in out.iter_mut().zip(labels) {
                    *o = positive(*o, y);
                }
            }
        }
    }

    /// Rows `block` (`[n, C]`, row-major) through `maps`, in place.
    fn apply_rows<M: BinaryMap>(self, maps: &[M], block: &mut [f64], c: usize) {
        match self {
            Self::Binary => block.iter_mut().for_each(|s| *s = maps[0].predict(*s)),
            Self::OneVsRest if c == 2 => block.chunks_exact_mut(2).for_each(|row| {
                let q = maps[0].predict(row[1]);
                row[0] = 1.0 - q;
                row[1] = q;
            }),
            Self::OneVsRest => block.chunks_mut(TILE_ROWS * c).for_each(|tile| {
                // Class by class within a tile of rows: a map's table (one entry per
                // calibration score for isotonic and Venn-ABERS) stays in cache over the tile
                // instead of being read cold once per row.
                for (k, m) in maps.iter().enumerate() {
                    tile.iter_mut().skip(k).step_by(c).for_each(|p| *p = m.predict(*p));
                }
                tile.chunks_exact_mut(c).for_each(renormalise);
            }),
            Self::TopLabel => block.chunks_exact_mut(c).for_each(|row| top_label(maps, row)),
        }
    }
}

/// The top-label prediction of each row of `scores` (probabilities) through `maps`: the
/// argmax and its map's output, unfloored.
pub(crate) fn top_label_confidences<M: BinaryMap>(
    maps: &[M],
    scores: &HostScores,
) -> (Vec<i64>, Vec<f64>) {
    (0..scores.n_samples())
        .map(|i| {
            let row = scores.row(i);
            let c = argmax(row);
            (c as i64, maps[c].predict(row[c]).clamp(0.0, 1.0))
        })
        .unzip()
}

/// Rows of one-vs-rest applied class by class.
const TILE_ROWS: usize = 512;

/// One row of class-map outputs renormalised (uniform when every map gives 0).
fn renormalise(row: &mut [f64]) {
    let sum: f64 = row.iter().sum();
    if sum > 0.0 {
        row.iter_mut().for_each(|p| *p /= sum);
    } else {
        let uniform = 1.0 / row.len() as f64;
        row.iter_mut().for_each(|p| *p = uniform);
    }
}

/// One tile of one-vs-rest rows: each row's renormalised output at its label `y` (the sum
/// taken in class order, as [`renormalise`] takes it).
#[inline(always)]
fn one_vs_rest_labels<M: BinaryMap>(maps: &[M], tile: &[f64], y: &[i64], out: &mut [f64]) {
    let (c, n) = (maps.len(), y.len());
    let (mut sums, mut q) = ([0.0; TILE_ROWS], [0.0; TILE_ROWS]);
    let (sums, q) = (&mut sums[..n], &mut q[..n]);
    for (k, m) in maps.iter().enumerate() {
        // Class k's scores gathered, then mapped and summed in contiguous loops (vectorised
        // where the map's `predict` inlines).
        for (q, &p) in q.iter_mut().zip(tile.iter().skip(k).step_by(c)) {
            *q = p;
        }
        m.predict_fast_into(q);
        for (((s, o), &q), &y) in sums.iter_mut().zip(out.iter_mut()).zip(q.iter()).zip(y) {
            *s += q;
            *o = if y == k as i64 { q } else { *o };
        }
    }
    for (o, &sum) in out.iter_mut().zip(sums.iter()) {
        *o = if sum > 0.0 { *o / sum } else { 1.0 / c as f64 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IsotonicMap;

    /// `n` probability rows of `k` classes with a clear top class, and labels (a small LCG).
    fn rows(n: usize, k: usize, seed: u64) -> HostScores<'static> {
        let mut state = seed;
        let mut uniform = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut values = Vec::with_capacity(n * k);
        let mut labels = Vec::with_capacity(n);
        for _ in 0..n {
            let mut row: Vec<f64> = (0..k).map(|_| (3.0 * uniform()).exp()).collect();
            let top = (uniform() * k as f64) as usize % k;
            row[top] *= 1.0 + 4.0 * uniform();
            let sum: f64 = row.iter().sum();
            values.extend(row.iter().map(|p| p / sum));
            labels.push(if k == 1 {
                i64::from(uniform() < 0.5)
            } else {
                (uniform() * k as f64) as i64 % k as i64
            });
        }
        if k == 1 {
            values.iter_mut().for_each(|p| *p = p.min(1.0));
        }
        HostScores { values: values.into(), n_columns: k, labels: labels.into() }
    }

    /// Maps that lower most confidences a lot (so top-label rows need capping).
    fn maps(count: usize) -> Vec<IsotonicMap> {
        (0..count)
            .map(|j| {
                IsotonicMap::through(vec![0.0, 0.4, 1.0], vec![0.0, 0.02 + 0.001 * j as f64, 0.9])
            })
            .collect()
    }

    #[test]
    fn label_probabilities_are_the_applied_rows_at_the_labels() {
        for (form, k) in [
            (Form::Binary, 1),
            (Form::OneVsRest, 2),
            (Form::OneVsRest, 7),
            (Form::OneVsRest, 600),
            (Form::TopLabel, 7),
            (Form::TopLabel, 300),
        ] {
            let scores = rows(3000, k, k as u64);
            let maps = maps(form.n_maps(k.max(2)));
            let at = form.label_probabilities(&maps, &scores);
            if form == Form::TopLabel {
                let summarised = super::super::top_label_rows::calibrated_at_labels(
                    &maps,
                    &TopRow::all(&scores),
                    &scores,
                );
                assert!(summarised.iter().zip(&at).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
            let mut applied = scores.clone();
            form.apply(&maps, &mut applied);
            for (i, &y) in scores.labels.iter().enumerate() {
                let want = match k {
                    1 if y == 1 => applied.values[i],
                    1 => 1.0 - applied.values[i],
                    _ => applied.values[i * k + y as usize],
                };
                assert_eq!(at[i].to_bits(), want.to_bits(), "{form:?} K={k} row {i}");
            }
        }
    }
}
