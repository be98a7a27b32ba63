//! The fused host engine: every statistic of a plan in one pass over the rows, in f64.
//!
//! Per row: max-subtracted exponentials, the first argmax,
//! `conf = 1 / sum_k exp(z_k - max z)`, `log p_y`, the Brier term, and the bin of every
//! requested pair ([`BinLookup`]: arithmetic for even bins, exact at the edges). Rows are split
//! across threads, each with its own accumulators, merged at the end. Adaptive class ranges
//! then rebuild each class column from the rows ([`ClassColumns`]: the same expression bit for
//! bit, no `[N, K]` copy, one build shared by ACE, TACE and every class-conditional adaptive
//! request) and find their cuts by a radix pass plus exact selection
//! ([`crate::binning::accumulate_value_ranges_within`]), one group of classes per task.
//!
//! Same plan, conventions and f64 arithmetic as the tensor engine ([`super::tensor`]); tests
//! hold the two to 1e-9.

use std::thread;

use super::class_columns::{ClassColumns, GroupColumns, group_width};
use super::plan::{Outcome, Plan};
use super::workspace::Workspace;
use crate::binning::{BinLookup, Binning, RankedPair, accumulate_ranges};
use crate::error::Result;
use crate::input::{HostValues, Predictions, ScoreKind};
use crate::kernels::{
    Score, dispatch, exp_shifted, for_each_above, max_and_argmax, scale_and_square_sum,
};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;

/// What one thread's rows produced.
struct Block {
    /// Per static request: `[count, sum score, sum outcome]` per (group, bin).
    acc: Vec<Vec<[f64; 3]>>,
    nll: f64,
    nll_clipped: f64,
    brier: f64,
    correct: f64,
    /// Per row: top-label score, predicted class, hit (only with adaptive top-label requests).
    top: Vec<(f64, u32, bool)>,
    /// Per row `(max logit, 1 / sum exp)` (only with adaptive all-class requests on logits),
    /// so class columns can be recomputed bit for bit without an `[N, K]` copy.
    scales: Vec<(f64, f64)>,
}

fn threads() -> usize {
    thread::available_parallelism().map_or(1, |t| t.get())
}

/// Everything the row pass needs to know, fixed before it starts.
struct RowPass<'a, T: Score> {
    plan: &'a Plan,
    values: &'a [T],
    labels: &'a [i64],
    kind: ScoreKind,
    n_columns: usize,
    lookups: Vec<Option<BinLookup>>,
    groups: Vec<usize>,
    keep_top: bool,
    keep_columns: bool,
}

impl<T: Score> RowPass<'_, T> {
    /// The rows `rows`, compiled for AVX2 where the CPU has it ([`dispatch`]).
    fn run(&self, rows: std::ops::Range<usize>) -> Block {
        dispatch(
            #[inline(always)]
            || self.run_rows(rows),
        )
    }

    #[inline(always)]
    fn run_rows(&self, rows: std::ops::Range<usize>) -> Block {
        let (c, binary) = (self.n_columns, self.kind == ScoreKind::Binary);
        let len = rows.len();
        let mut b = Block {
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
        };
        // Class-wise even-bin requests: bin 0 (`p <= edges[1]`, nearly every entry of a wide
        // softmax) is accumulated densely per class ([`ClassLow`]), the rest scattered.
        let mut low: Vec<Option<ClassLow>> = self
            .plan
            .requests
            .iter()
            .zip(&self.lookups)
            .map(|(r, l)| match l {
                Some(l) if !binary && r.scores == ScoreSet::AllClasses => Some(ClassLow {
                    keep: r.threshold.unwrap_or(-1.0),
                    top: l.first_edge(),
                    count: r.threshold.map(|_| vec![0.0; c]),
                    sum: vec![0.0; c],
                }),
                _ => None,
            })
            .collect();
        let mut p = vec![0.0f64; c];
        let log_eps = self.plan.nll_eps.map(f64::ln);
        for i in rows.clone() {
            let row = &self.values[i * c..(i + 1) * c];
            let y = self.labels[i] as usize;
            let (conf, pred, log_py, outcome) = if binary {
                let s: f64 = row[0].into();
                let log_py = if y == 1 { s.ln() } else { (1.0 - s).ln() };
                b.brier += (s - y as f64).powi(2);
                (s, (s > 0.5) as usize, log_py, y as f64)
            } else {
                let (max, pred) = max_and_argmax(row);
                let (conf, log_py, sq) = if self.kind == ScoreKind::Logits {
                    let max: f64 = max.into();
                    let se = exp_shifted(row, max, &mut p);
                    let inv = 1.0 / se;
                    let sq = scale_and_square_sum(&mut p, inv);
                    if self.keep_columns {
                        b.scales.push((max, inv));
                    }
                    (inv, (row[y].into() - max) - se.ln(), sq)
                } else {
                    p.iter_mut().zip(row).for_each(|(pj, &v)| *pj = v.into());
                    (max.into(), row[y].into().ln(), scale_and_square_sum(&mut p, 1.0))
                };
                b.brier += sq - 2.0 * p[y] + 1.0;
                (conf, pred, log_py, (pred == y) as u8 as f64)
            };
            b.nll -= log_py;
            if let Some(le) = log_eps {
                b.nll_clipped -= log_py.max(le);
            }
            b.correct += outcome;
            if self.keep_top {
                b.top.push((conf, pred as u32, outcome > 0.5));
            }
            for (ri, r) in self.plan.requests.iter().enumerate() {
                let Some(lookup) = &self.lookups[ri] else { continue };
                let nb = lookup.n_bins();
                let acc = &mut b.acc[ri];
                if let Some(low) = &mut low[ri] {
                    low.add(&p);
                    let floor = low.keep.max(low.top);
                    for_each_above(&p, floor, |j, pj| {
                        let cell = &mut acc[j * nb + lookup.bin(pj)];
                        cell[0] += 1.0;
                        cell[1] += pj;
                    });
                    if p[y] > low.keep {
                        acc[y * nb + lookup.bin(p[y])][2] += 1.0;
                    }
                } else {
                    if r.threshold.is_some_and(|eps| conf <= eps) {
                        continue;
                    }
                    let g = if binary { 0 } else { pred };
                    let cell = &mut acc[g * nb + lookup.bin(conf)];
                    cell[0] += 1.0;
                    cell[1] += conf;
                    cell[2] += outcome;
                }
            }
        }
        for (acc, low) in b.acc.iter_mut().zip(&low) {
            if let Some(low) = low {
                let nb = acc.len() / c;
                for (j, cells) in acc.chunks_exact_mut(nb).enumerate() {
                    let (count, sum) = match &low.count {
                        Some(count) => (count[j], low.sum[j]),
                        // Bin 0 holds every score the scatter (bins >= 1) did not take.
                        None => cells[1..].iter().fold((len as f64, low.sum[j]), |(n, s), cell| {
                            (n - cell[0], s - cell[1])
                        }),
                    };
                    cells[0][0] += count;
                    cells[0][1] += sum;
                }
            }
        }
        b
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

/// Runs `plan` on the host rows of `preds`, with buffers from `workspace`.
pub(crate) fn run_fused(
    preds: &Predictions,
    plan: &Plan,
    workspace: &mut Workspace,
) -> Result<Outcome> {
    let (values, labels) = preds.host_rows()?;
    match values {
        HostValues::F32(v) => Ok(run_rows(preds, plan, &v, &labels, workspace)),
        HostValues::F64(v) => Ok(run_rows(preds, plan, &v, &labels, workspace)),
    }
}

fn run_rows<T: Score>(
    preds: &Predictions,
    plan: &Plan,
    values: &[T],
    labels: &[i64],
    workspace: &mut Workspace,
) -> Outcome {
    let kind = preds.kind();
    let n = preds.n_samples();
    let k = preds.n_classes();
    let binary = kind == ScoreKind::Binary;
    let adaptive = |s: ScoreSet| {
        plan.requests
            .iter()
            .any(|r| matches!(r.binning, Binning::Adaptive { .. }) && (binary || r.scores == s))
    };
    let pass = RowPass {
        plan,
        values,
        labels,
        kind,
        n_columns: preds.n_columns(),
        lookups: plan.requests.iter().map(|r| r.binning.edges().map(BinLookup::new)).collect(),
        groups: plan.requests.iter().map(|r| r.n_groups(k, binary)).collect(),
        keep_top: adaptive(ScoreSet::TopLabel) || binary && adaptive(ScoreSet::AllClasses),
        keep_columns: !binary && adaptive(ScoreSet::AllClasses),
    };

    let n_threads = threads().min(n.div_ceil(256)).max(1);
    let block_rows = n.div_ceil(n_threads);
    let blocks: Vec<Block> = thread::scope(|scope| {
        let handles: Vec<_> = (0..n_threads)
            .map(|t| {
                let pass = &pass;
                scope.spawn(move || pass.run(t * block_rows..((t + 1) * block_rows).min(n)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("fused engine thread panicked")).collect()
    });

    let mut stats: Vec<BinStats> = plan.requests.iter().map(|r| r.zeros(k, binary)).collect();
    let (mut nll_sum, mut nll_clipped_sum, mut brier_sum, mut correct) = (0.0, 0.0, 0.0, 0.0);
    for b in &blocks {
        for (st, acc) in stats.iter_mut().zip(&b.acc) {
            for (i, cell) in acc.iter().enumerate() {
                st.count[i] += cell[0];
                st.sum_score[i] += cell[1];
                st.sum_outcome[i] += cell[2];
            }
        }
        nll_sum += b.nll;
        nll_clipped_sum += b.nll_clipped;
        brier_sum += b.brier;
        correct += b.correct;
    }

    // Every class-conditional all-class adaptive request (ACE, TACE, ...) in one pass over the
    // class columns: each column is built once and filtered per threshold.
    let shared: Vec<usize> = (0..plan.requests.len())
        .filter(|&ri| {
            let r = &plan.requests[ri];
            pass.lookups[ri].is_none() && !binary && r.scores == ScoreSet::AllClasses && r.grouped
        })
        .collect();
    let scales: Vec<(f64, f64)> = blocks.iter().flat_map(|b| b.scales.iter().copied()).collect();
    let columns = ClassColumns { values, labels, kind, k, scales: &scales };
    if !shared.is_empty() {
        let wants: Vec<Option<f64>> =
            shared.iter().map(|&ri| plan.requests[ri].threshold).collect();
        let n_threads = threads().min(k);
        let width = group_width(n, k, n_threads);
        if workspace.columns.len() < n_threads {
            workspace.columns.resize_with(n_threads, GroupColumns::default);
        }
        let parts: Vec<Vec<BinStats>> = thread::scope(|scope| {
            let handles: Vec<_> = (workspace.columns.iter_mut().take(n_threads).enumerate())
                .map(|(t, buffers)| {
                    let (columns, wants, stats, shared) = (&columns, &wants, &stats, &shared);
                    scope.spawn(move || {
                        let mut parts: Vec<BinStats> = shared
                            .iter()
                            .map(|&ri| BinStats::zeros(stats[ri].layout.clone(), k))
                            .collect();
                        dispatch(
                            #[inline(always)]
                            || {
                                for g in (0..k.div_ceil(width)).skip(t).step_by(n_threads) {
                                    let first = g * width;
                                    columns.ranges(first, width, wants, &mut parts, buffers);
                                }
                            },
                        );
                        parts
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("range thread panicked")).collect()
        });
        for thread_parts in &parts {
            for (&ri, part) in shared.iter().zip(thread_parts) {
                stats[ri].accumulate(part);
            }
        }
    }

    for (ri, r) in plan.requests.iter().enumerate() {
        if pass.lookups[ri].is_some() || shared.contains(&ri) {
            continue;
        }
        let keep = |s: f64| r.threshold.is_none_or(|eps| s > eps);
        if binary || r.scores == ScoreSet::TopLabel {
            let mut groups: Vec<Vec<RankedPair>> = vec![Vec::new(); stats[ri].n_groups];
            let rows = blocks.iter().flat_map(|b| b.top.iter()).enumerate();
            for (i, &(s, pred, hit)) in rows.filter(|(_, t)| keep(t.0)) {
                let g = if groups.len() > 1 { pred as usize } else { 0 };
                groups[g].push(RankedPair::new(s, i as u64, hit));
            }
            for (g, mut pairs) in groups.into_iter().enumerate() {
                accumulate_ranges(&mut stats[ri], g, &mut pairs);
            }
        } else {
            // All classes pooled into one group: every (i, k) pair ranked together.
            let mut pairs = Vec::new();
            for i in 0..n {
                for j in 0..k {
                    let s = columns.probability(i, j);
                    if keep(s) {
                        pairs.push(RankedPair::new(s, (i * k + j) as u64, labels[i] as usize == j));
                    }
                }
            }
            accumulate_ranges(&mut stats[ri], 0, &mut pairs);
        }
    }
    Outcome { stats, nll_sum, nll_clipped_sum, brier_sum, correct }
}
