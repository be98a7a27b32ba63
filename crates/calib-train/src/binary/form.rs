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
        let column = |c: usize| (scores.column(c), labels.iter().map(|&y| y == c as i64).collect());
        match self {
            Self::Binary => vec![(scores.column(0), labels.iter().map(|&y| y == 1).collect())],
            Self::OneVsRest if k == 2 => vec![column(1)],
            Self::OneVsRest => (0..k).map(column).collect(),
            Self::TopLabel => {
                let mut sets = vec![(Vec::new(), Vec::new()); k];
                for (i, &y) in labels.iter().enumerate() {
                    let row = scores.row(i);
                    let c = argmax(row);
                    sets[c].0.push(row[c]);
                    sets[c].1.push(y == c as i64);
                }
                sets
            }
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
        let threads = calib_kernels::threads();
        let rows_per = scores.n_samples().div_ceil(threads).max(1024);
        std::thread::scope(|scope| {
            for block in scores.values.chunks_mut(rows_per * c) {
                scope.spawn(move || self.apply_rows(maps, block, c));
            }
        });
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

/// One row with its top-label confidence replaced and the rest rescaled to sum to 1.
fn top_label<M: BinaryMap>(maps: &[M], row: &mut [f64]) {
    let k = row.len();
    let c = argmax(row);
    let h = row[c];
    // No probability vector has a largest entry below 1/K.
    let h_new = maps[c].predict(h).max(1.0 / k as f64);
    let rest = 1.0 - h_new;
    // The others' own sum, not 1 - h: near h = 1 the difference is all rounding.
    let others: f64 = row.iter().enumerate().filter(|&(j, _)| j != c).map(|(_, p)| p).sum();
    if others > 0.0 {
        let scale = rest / others;
        row.iter_mut().for_each(|p| *p *= scale);
    } else {
        let share = rest / (k - 1) as f64;
        row.iter_mut().for_each(|p| *p = share);
    }
    row[c] = h_new;
    cap_below(row, c);
}

/// Keeps class `c` the argmax: classes at or above `row[c]` are capped just below it and their
/// excess spread over the others in proportion (water-filling). Feasible because
/// `row[c] >= 1/K`; at exactly 1/K the row sums to 1 within (K - 1) ulp.
fn cap_below(row: &mut [f64], c: usize) {
    let cap = row[c].next_down();
    let k = row.len();
    let mut capped = vec![false; k];
    capped[c] = true;
    loop {
        let over: Vec<usize> = (0..k).filter(|&j| !capped[j] && row[j] > cap).collect();
        if over.is_empty() {
            return;
        }
        let excess: f64 = over.iter().map(|&j| row[j] - cap).sum();
        for &j in &over {
            row[j] = cap;
            capped[j] = true;
        }
        let free: f64 = (0..k).filter(|&j| !capped[j]).map(|j| row[j]).sum();
        let n_free = capped.iter().filter(|&&x| !x).count();
        for j in (0..k).filter(|&j| !capped[j]) {
            row[j] += if free > 0.0 { excess * row[j] / free } else { excess / n_free as f64 };
        }
    }
}
