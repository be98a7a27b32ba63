//! The row pass: per row, max-subtracted exponentials, the first argmax,
//! `conf = 1 / sum_k exp(z_k - max z)`, `log p_y`, the Brier term, and the bin of every
//! requested pair ([`BinLookup`]: arithmetic for even bins, exact at the edges), accumulated
//! per thread into a [`Block`].
//!
//! Every phase is `#[inline(always)]`: [`RowPass::run`] compiles the whole pass once more for
//! AVX2 ([`dispatch`]), and only code inlined into it gets the wider instructions.

use std::ops::Range;

use super::super::plan::Plan;
use crate::binning::BinLookup;
use crate::input::ScoreKind;
use crate::metrics::ScoreSet;
use calib_kernels::{
    Score, dispatch, exp_shifted, for_each_above, max_and_argmax, scale_and_square_sum,
};

/// What one thread's rows produced.
pub(super) struct Block {
    /// Per static request: `[count, sum score, sum outcome]` per (group, bin).
    pub acc: Vec<Vec<[f64; 3]>>,
    pub nll: f64,
    pub nll_clipped: f64,
    pub brier: f64,
    pub correct: f64,
    /// Per row: top-label score, predicted class, hit (only with adaptive top-label requests).
    pub top: Vec<(f64, u32, bool)>,
    /// Per row `(max logit, 1 / sum exp)` (only with adaptive all-class requests on logits),
    /// so class columns can be recomputed bit for bit without an `[N, K]` copy.
    pub scales: Vec<(f64, f64)>,
}

/// One row's top-label pair, log-likelihood, Brier term and whether its prediction is right.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowScore {
    /// Top-label confidence (binary: the positive-class score).
    pub conf: f64,
    /// Predicted class (binary: `s > 0.5`).
    pub pred: usize,
    /// `log p[y]`.
    pub log_py: f64,
    /// Outcome of the top-label pair: the hit (binary: the label).
    pub outcome: f64,
    /// `sum_k (p_k - 1[y = k])^2` (binary: `(s - y)^2`).
    pub brier: f64,
    /// 1 when the prediction is right (binary: `s > 0.5` agrees with the label).
    pub correct: f64,
    /// `(max logit, 1 / sum exp)` for logits, the softmax's scale.
    pub scale: (f64, f64),
}

/// One row's [`RowScore`], its probabilities into `p` (multiclass): the quantities every host
/// pass over the rows (the fused engine, the bootstrap's records) computes alike.
#[inline(always)]
pub(crate) fn score_row<T: Score>(row: &[T], y: usize, kind: ScoreKind, p: &mut [f64]) -> RowScore {
    if kind == ScoreKind::Binary {
        let s: f64 = row[0].into();
        let log_py = if y == 1 { s.ln() } else { (1.0 - s).ln() };
        let pred = usize::from(s > 0.5);
        let (brier, correct) = ((s - y as f64).powi(2), f64::from(u8::from(pred == y)));
        return RowScore {
            conf: s,
            pred,
            log_py,
            outcome: y as f64,
            brier,
            correct,
            scale: (0.0, 0.0),
        };
    }
    let (max, pred) = max_and_argmax(row);
    let (conf, log_py, sq, scale) = if kind == ScoreKind::Logits {
        let max: f64 = max.into();
        let se = exp_shifted(row, max, p);
        let inv = 1.0 / se;
        let sq = scale_and_square_sum(p, inv);
        (inv, (row[y].into() - max) - se.ln(), sq, (max, inv))
    } else {
        p.iter_mut().zip(row).for_each(|(pj, &v)| *pj = v.into());
        (max.into(), row[y].into().ln(), scale_and_square_sum(p, 1.0), (0.0, 0.0))
    };
    let hit = f64::from(u8::from(pred == y));
    let brier = sq - 2.0 * p[y] + 1.0;
    RowScore { conf, pred, log_py, outcome: hit, brier, correct: hit, scale }
}

/// Everything the row pass needs to know, fixed before it starts.
pub(super) struct RowPass<'a, T: Score> {
    pub plan: &'a Plan,
    pub values: &'a [T],
    pub labels: &'a [i64],
    pub kind: ScoreKind,
    pub n_columns: usize,
    /// Per request: its static bins, `None` for adaptive requests (ranked after the pass).
    pub lookups: Vec<Option<BinLookup>>,
    /// Per request: its number of groups.
    pub groups: Vec<usize>,
    pub keep_top: bool,
    pub keep_columns: bool,
}

impl<T: Score> RowPass<'_, T> {
    /// The rows `rows`, compiled for AVX2 where the CPU has it ([`dispatch`]).
    pub fn run(&self, rows: Range<usize>) -> Block {
        dispatch(
            #[inline(always)]
            || self.run_rows(rows),
        )
    }

    #[inline(always)]
    fn run_rows(&self, rows: Range<usize>) -> Block {
        let mut b = self.empty_block(rows.len());
        let mut low = self.class_lows();
        let mut p = vec![0.0f64; self.n_columns];
        let log_eps = self.plan.nll_eps.map(f64::ln);
        for i in rows.clone() {
            let y = self.labels[i] as usize;
            let row = self.score_row(i, y, &mut p, &mut b);
            b.nll -= row.log_py;
            if let Some(le) = log_eps {
                b.nll_clipped -= row.log_py.max(le);
            }
            b.correct += row.correct;
            if self.keep_top {
                b.top.push((row.conf, row.pred as u32, row.outcome > 0.5));
            }
            self.scatter(&mut b.acc, &mut low, &p, y, &row);
        }
        fill_class_bin_zero(&mut b.acc, &low, self.n_columns, rows.len());
        b
    }

    /// Zeroed accumulators for `len` rows.
    #[inline(always)]
    fn empty_block(&self, len: usize) -> Block {
        Block {
            acc: self
                .lookups
                .iter()
                .zip(&self.groups)
                .map(|(l, &g)| vec![[0.0; 3]; l.as_ref().map_or(0, |l| g * l.n_bins())])
                .collect(),
            nll: 0.0,
            nll_clipped: 0.0,
            brier: 0.0,
            correct: 0.0,
            top: Vec::with_capacity(if self.keep_top { len } else { 0 }),
            scales: Vec::with_capacity(if self.keep_columns { len } else { 0 }),
        }
    }

    /// Class-wise even-bin requests: bin 0 (`p <= edges[1]`, nearly every entry of a wide
    /// softmax) is accumulated densely per class ([`ClassLow`]), the rest scattered.
    #[inline(always)]
    fn class_lows(&self) -> Vec<Option<ClassLow>> {
        let binary = self.kind == ScoreKind::Binary;
        let requests = self.plan.requests.iter().zip(&self.lookups);
        requests
            .map(|(r, l)| match l {
                Some(l) if !binary && r.scores == ScoreSet::AllClasses => Some(ClassLow {
                    keep: r.threshold.unwrap_or(-1.0),
                    top: l.first_edge(),
                    count: r.threshold.map(|_| vec![0.0; self.n_columns]),
                    sum: vec![0.0; self.n_columns],
                }),
                _ => None,
            })
            .collect()
    }

    /// Row `i`'s [`score_row`]; adds its Brier term and, when class columns follow, its
    /// softmax scale.
    #[inline(always)]
    fn score_row(&self, i: usize, y: usize, p: &mut [f64], b: &mut Block) -> RowScore {
        let c = self.n_columns;
        let row = score_row(&self.values[i * c..(i + 1) * c], y, self.kind, p);
        b.brier += row.brier;
        if self.keep_columns && self.kind == ScoreKind::Logits {
            b.scales.push(row.scale);
        }
        row
    }

    /// Adds the row's pairs to every static request's bins: all classes for class-wise
    /// requests (bin 0 densely, through `low`), the top-label pair otherwise.
    #[inline(always)]
    fn scatter(
        &self,
        accs: &mut [Vec<[f64; 3]>],
        low: &mut [Option<ClassLow>],
        p: &[f64],
        y: usize,
        row: &RowScore,
    ) {
        let binary = self.kind == ScoreKind::Binary;
        for (ri, r) in self.plan.requests.iter().enumerate() {
            let Some(lookup) = &self.lookups[ri] else { continue };
            let nb = lookup.n_bins();
            let acc = &mut accs[ri];
            if let Some(low) = &mut low[ri] {
                low.add(p);
                let floor = low.keep.max(low.top);
                for_each_above(p, floor, |j, pj| {
                    let cell = &mut acc[j * nb + lookup.bin(pj)];
                    cell[0] += 1.0;
                    cell[1] += pj;
                });
                if p[y] > low.keep {
                    acc[y * nb + lookup.bin(p[y])][2] += 1.0;
                }
            } else {
                if r.threshold.is_some_and(|eps| row.conf <= eps) {
                    continue;
                }
                let g = if binary { 0 } else { row.pred };
                let cell = &mut acc[g * nb + lookup.bin(row.conf)];
                cell[0] += 1.0;
                cell[1] += row.conf;
                cell[2] += row.outcome;
            }
        }
    }
}

/// Moves each class-wise request's dense bin-0 sums into its bins once the `len` rows are
/// done (see [`ClassLow`]).
#[inline(always)]
fn fill_class_bin_zero(accs: &mut [Vec<[f64; 3]>], low: &[Option<ClassLow>], c: usize, len: usize) {
    for (acc, low) in accs.iter_mut().zip(low) {
        let Some(low) = low else { continue };
        let nb = acc.len() / c;
        for (j, cells) in acc.chunks_exact_mut(nb).enumerate() {
            let (count, sum) = match &low.count {
                Some(count) => (count[j], low.sum[j]),
                // Bin 0 holds every score the scatter (bins >= 1) did not take.
                None => cells[1..]
                    .iter()
                    .fold((len as f64, low.sum[j]), |(n, s), cell| (n - cell[0], s - cell[1])),
            };
            cells[0][0] += count;
            cells[0][1] += sum;
        }
    }
}

/// Dense bin-0 accumulators of one class-wise even-bin request.
///
/// With a threshold, bin 0 (`keep < p <= top`) is counted and summed per entry. Without one,
/// bin 0 is every score the scatter into bins >= 1 did not take, so only each class's total
/// score is kept here, and bin 0 is the row count and that total less the other bins.
struct ClassLow {
    /// Entries count only when `p > keep` (the request's threshold, or -1).
    keep: f64,
    /// Upper edge of bin 0 (`+inf` with a single bin).
    top: f64,
    /// Bin-0 counts (with a threshold only).
    count: Option<Vec<f64>>,
    /// Bin-0 sums with a threshold, all scores' sums without.
    sum: Vec<f64>,
}

impl ClassLow {
    /// Adds one row, branch-free.
    #[inline(always)]
    fn add(&mut self, p: &[f64]) {
        let (keep, top) = (self.keep, self.top);
        match &mut self.count {
            Some(count) => {
                for ((n, s), &v) in count.iter_mut().zip(self.sum.iter_mut()).zip(p) {
                    // Selected through the bits: `*s += if hit { v } else { 0.0 }` becomes a
                    // masked load and store (vmaskmovpd), microcoded and slow on AMD.
                    let hit = ((v > keep && v <= top) as u64).wrapping_neg();
                    *n += f64::from_bits(1f64.to_bits() & hit);
                    *s += f64::from_bits(v.to_bits() & hit);
                }
            }
            None => self.sum.iter_mut().zip(p).for_each(|(s, &v)| *s += v),
        }
    }
}
