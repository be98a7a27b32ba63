//! The fused host engine: every statistic of a plan in one pass over the rows, in f64.
//!
//! Per row: max-subtracted exponentials (each `exp` computed once), the first argmax,
//! `conf = 1 / sum_k exp(z_k - max z)`, `log p_y`, the Brier term, and the bin of every
//! requested pair ([`BinLookup`]: arithmetic for even bins, exact at the edges). Rows are split
//! across threads, each with its own accumulators, merged at the end. Adaptive class ranges
//! then recompute each class column from the rows (16 classes per read of a row, the same
//! expression bit for bit, no `[N, K]` copy) and find their cuts by a radix pass plus exact
//! selection ([`accumulate_value_ranges`]), one group of classes per task.
//!
//! Same plan, conventions and f64 arithmetic as the tensor engine ([`super::tensor`]); tests
//! hold the two to 1e-9.

use std::thread;

use super::plan::{Outcome, Plan};
use crate::binning::{BinLookup, Binning, RankedPair, accumulate_ranges, accumulate_value_ranges};
use crate::error::Result;
use crate::input::{HostValues, Predictions, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;

/// Host score types the fused engine reads.
trait Score: Copy + PartialOrd + Into<f64> + Send + Sync {}
impl Score for f32 {}
impl Score for f64 {}

/// Classes recomputed together (one cache line of f32 logits).
const CLASS_GROUP: usize = 16;

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
    fn run(&self, rows: std::ops::Range<usize>) -> Block {
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
                let (mut pred, mut max) = (0, row[0]);
                for (j, &v) in row.iter().enumerate().skip(1) {
                    if v > max {
                        (pred, max) = (j, v);
                    }
                }
                let (conf, log_py) = if self.kind == ScoreKind::Logits {
                    let max: f64 = max.into();
                    let mut se = 0.0;
                    for (pj, &v) in p.iter_mut().zip(row) {
                        *pj = (v.into() - max).exp();
                        se += *pj;
                    }
                    let inv = 1.0 / se;
                    p.iter_mut().for_each(|pj| *pj *= inv);
                    if self.keep_columns {
                        b.scales.push((row[pred].into(), inv));
                    }
                    (inv, (row[y].into() - max) - se.ln())
                } else {
                    p.iter_mut().zip(row).for_each(|(pj, &v)| *pj = v.into());
                    (max.into(), row[y].into().ln())
                };
                let sq: f64 = p.iter().map(|v| v * v).sum();
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
                if binary || r.scores == ScoreSet::TopLabel {
                    if r.threshold.is_some_and(|eps| conf <= eps) {
                        continue;
                    }
                    let g = if binary { 0 } else { pred };
                    let cell = &mut acc[g * nb + lookup.bin(conf)];
                    cell[0] += 1.0;
                    cell[1] += conf;
                    cell[2] += outcome;
                } else {
                    let eps = r.threshold.unwrap_or(-1.0);
                    for (j, &pj) in p.iter().enumerate() {
                        if pj > eps {
                            let cell = &mut acc[j * nb + lookup.bin(pj)];
                            cell[0] += 1.0;
                            cell[1] += pj;
                        }
                    }
                    if p[y] > eps {
                        acc[y * nb + lookup.bin(p[y])][2] += 1.0;
                    }
                }
            }
        }
        b
    }
}

/// Runs `plan` on the host rows of `preds`.
pub(crate) fn run_fused(preds: &Predictions, plan: &Plan) -> Result<Outcome> {
    let (values, labels) = preds.host_rows()?;
    match values {
        HostValues::F32(v) => Ok(run_rows(preds, plan, &v, &labels)),
        HostValues::F64(v) => Ok(run_rows(preds, plan, &v, &labels)),
    }
}

fn run_rows<T: Score>(preds: &Predictions, plan: &Plan, values: &[T], labels: &[i64]) -> Outcome {
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
    if !shared.is_empty() {
        let scales: Vec<(f64, f64)> =
            blocks.iter().flat_map(|b| b.scales.iter().copied()).collect();
        let columns = ClassColumns { values, labels, kind, k, scales: &scales };
        let wants: Vec<Option<f64>> =
            shared.iter().map(|&ri| plan.requests[ri].threshold).collect();
        let n_threads = threads().min(k);
        let parts: Vec<Vec<BinStats>> = thread::scope(|scope| {
            let handles: Vec<_> = (0..n_threads)
                .map(|t| {
                    let (columns, wants, stats, shared) = (&columns, &wants, &stats, &shared);
                    scope.spawn(move || {
                        let mut parts: Vec<BinStats> = shared
                            .iter()
                            .map(|&ri| BinStats::zeros(stats[ri].layout.clone(), k))
                            .collect();
                        for g in (0..k.div_ceil(CLASS_GROUP)).skip(t).step_by(n_threads) {
                            columns.ranges(g * CLASS_GROUP, wants, &mut parts);
                        }
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
        if pass.lookups[ri].is_some() {
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
        } else if r.grouped {
            // Done above, with the other class-conditional requests.
        } else {
            let scales: Vec<(f64, f64)> =
                blocks.iter().flat_map(|b| b.scales.iter().copied()).collect();
            let columns = ClassColumns { values, labels, kind, k, scales: &scales };
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

/// Class columns of the probability matrix, recomputed from the rows on demand.
struct ClassColumns<'a, T: Score> {
    values: &'a [T],
    labels: &'a [i64],
    kind: ScoreKind,
    k: usize,
    scales: &'a [(f64, f64)],
}

impl<T: Score> ClassColumns<'_, T> {
    /// `p[i, j]`, bit for bit as the row pass computed it.
    #[inline]
    fn probability(&self, i: usize, j: usize) -> f64 {
        let v: f64 = self.values[i * self.k + j].into();
        match self.kind {
            ScoreKind::Logits => {
                let (max, inv) = self.scales[i];
                (v - max).exp() * inv
            }
            _ => v,
        }
    }

    /// Columns `first .. first + CLASS_GROUP` in sample order, the scores `> threshold` only,
    /// with the positions of each column's hits (`y == class`); one read of the rows for the
    /// whole group.
    ///
    /// With a threshold on logits, an entry is only exponentiated when its logit is within
    /// 1e-6 of `max + ln(eps / inv)`, the logit at which `p = eps`; the comparison itself is
    /// always made on the exact `p`.
    fn columns(&self, first: usize, threshold: Option<f64>) -> (Vec<Vec<f64>>, Vec<Vec<usize>>) {
        let last = (first + CLASS_GROUP).min(self.k);
        let width = last - first;
        let n = self.labels.len();
        let mut columns: Vec<Vec<f64>> = vec![Vec::with_capacity(n); width];
        let mut hits: Vec<Vec<usize>> = vec![Vec::new(); width];
        match (self.kind, threshold) {
            (ScoreKind::Logits, None) => {
                // Column by column: the group's rows stay in cache across its columns.
                for (c, column) in columns.iter_mut().enumerate() {
                    let logits = self.values[first + c..].iter().step_by(self.k);
                    column.extend(
                        self.scales
                            .iter()
                            .zip(logits)
                            .map(|(&(max, inv), &v)| (v.into() - max).exp() * inv),
                    );
                }
                for (i, &y) in self.labels.iter().enumerate() {
                    let y = y as usize;
                    if (first..last).contains(&y) {
                        hits[y - first].push(i);
                    }
                }
            }
            _ => {
                for i in 0..n {
                    let y = self.labels[i] as usize;
                    let floor = match (self.kind, threshold) {
                        (ScoreKind::Logits, Some(eps)) => {
                            let (max, inv) = self.scales[i];
                            max + (eps / inv).ln() - 1e-6
                        }
                        _ => f64::NEG_INFINITY,
                    };
                    let row = &self.values[i * self.k + first..i * self.k + last];
                    for (c, &v) in row.iter().enumerate() {
                        if v.into() < floor {
                            continue;
                        }
                        let s = self.probability(i, first + c);
                        if threshold.is_none_or(|eps| s > eps) {
                            if y == first + c {
                                hits[c].push(columns[c].len());
                            }
                            columns[c].push(s);
                        }
                    }
                }
            }
        }
        (columns, hits)
    }

    /// Adds the equal-mass ranges of classes `first .. first + CLASS_GROUP` to `parts[w]`, for
    /// each wanted threshold `wants[w]`: one column build, filtered per threshold.
    fn ranges(&self, first: usize, wants: &[Option<f64>], parts: &mut [BinStats]) {
        let built = if wants.len() == 1 { wants[0] } else { None };
        let (columns, hits) = self.columns(first, built);
        let (mut scratch, mut kept, mut kept_hits) = (Vec::new(), Vec::new(), Vec::new());
        for (want, part) in wants.iter().zip(parts) {
            for (c, j) in (first..first + columns.len()).enumerate() {
                match *want {
                    Some(eps) if built.is_none() => {
                        kept.clear();
                        kept_hits.clear();
                        let mut next_hit = hits[c].iter().copied().peekable();
                        for (i, &s) in columns[c].iter().enumerate() {
                            let hit = next_hit.next_if_eq(&i).is_some();
                            if s > eps {
                                if hit {
                                    kept_hits.push(kept.len());
                                }
                                kept.push(s);
                            }
                        }
                        accumulate_value_ranges(part, j, &kept, &kept_hits, &mut scratch);
                    }
                    _ => accumulate_value_ranges(part, j, &columns[c], &hits[c], &mut scratch),
                }
            }
        }
    }
}
