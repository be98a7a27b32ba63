//! The fused host engine: every statistic of a plan in one pass over the rows, in f64.
//!
//! Per row: max-subtracted exponentials (each `exp` computed once), the first argmax,
//! `conf = 1 / sum_k exp(z_k - max z)`, `log p_y`, the Brier term, and the bin of every
//! requested pair. Rows are split across threads; each thread keeps its own statistics, merged
//! at the end. Adaptive ranges then select (not sort) each class's range boundaries
//! ([`crate::binning::accumulate_ranges`]), one class per task.
//!
//! Same plan, same conventions and the same f64 arithmetic as the tensor engine
//! ([`super::tensor`]); tests hold the two to 1e-9.

use std::thread;

use super::plan::{Outcome, Plan};
use crate::binning::{Binning, RankedPair, accumulate_ranges, bin_of};
use crate::error::Result;
use crate::input::{Predictions, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::{BinLayout, BinStats};

/// What one thread's rows produced.
struct Block {
    stats: Vec<BinStats>,
    nll: f64,
    nll_clipped: f64,
    brier: f64,
    correct: f64,
    /// Per row: top-label score, predicted class, hit (only with adaptive top-label requests).
    top: Vec<(f64, u32, bool)>,
    /// Column-major `[K][rows]` probabilities (only with adaptive all-class requests).
    columns: Vec<f64>,
}

fn threads() -> usize {
    thread::available_parallelism().map_or(1, |t| t.get())
}

fn empty_stats(
    plan: &Plan,
    groups_of: impl Fn(&crate::engine::StatRequest) -> usize,
) -> Vec<BinStats> {
    plan.requests
        .iter()
        .map(|r| {
            let layout = match r.binning.edges() {
                Some(e) => BinLayout::Edges(e),
                None => BinLayout::Adaptive { n_ranges: r.binning.n_bins() },
            };
            BinStats::zeros(layout, groups_of(r))
        })
        .collect()
}

/// Runs `plan` on the host rows of `preds`.
pub(crate) fn run_fused(preds: &Predictions, plan: &Plan) -> Result<Outcome> {
    let (values, labels) = preds.host_rows()?;
    let kind = preds.kind();
    let n = preds.n_samples();
    let c = preds.n_columns();
    let k = preds.n_classes();
    let binary = kind == ScoreKind::Binary;
    let groups_of = |r: &crate::engine::StatRequest| if binary || !r.grouped { 1 } else { k };
    let adaptive = |s: ScoreSet| {
        plan.requests
            .iter()
            .any(|r| matches!(r.binning, Binning::Adaptive { .. }) && (binary || r.scores == s))
    };
    let keep_top = adaptive(ScoreSet::TopLabel) || binary && adaptive(ScoreSet::AllClasses);
    let keep_columns = !binary && adaptive(ScoreSet::AllClasses);
    let edges: Vec<Option<Vec<f64>>> = plan.requests.iter().map(|r| r.binning.edges()).collect();

    let n_threads = threads().min(n.div_ceil(256)).max(1);
    let block_rows = n.div_ceil(n_threads);
    let blocks: Vec<Block> = thread::scope(|scope| {
        let handles: Vec<_> = (0..n_threads)
            .map(|t| {
                let (values, labels, edges) = (&values, &labels, &edges);
                let rows = t * block_rows..((t + 1) * block_rows).min(n);
                scope.spawn(move || {
                    let mut b = Block {
                        stats: empty_stats(plan, groups_of),
                        nll: 0.0,
                        nll_clipped: 0.0,
                        brier: 0.0,
                        correct: 0.0,
                        top: Vec::with_capacity(if keep_top { rows.len() } else { 0 }),
                        columns: vec![0.0; if keep_columns { rows.len() * k } else { 0 }],
                    };
                    let mut p = vec![0.0f64; c];
                    let log_eps = plan.nll_eps.map(f64::ln);
                    for (local, i) in rows.clone().enumerate() {
                        let row = &values[i * c..(i + 1) * c];
                        let y = labels[i] as usize;
                        // Probabilities, top-label score, prediction and log p_y.
                        let (conf, pred, log_py, outcome) = if binary {
                            let s = row[0] as f64;
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
                            let (conf, log_py) = if kind == ScoreKind::Logits {
                                let max = max as f64;
                                for (pj, &v) in p.iter_mut().zip(row) {
                                    *pj = (v as f64 - max).exp();
                                }
                                // As the tensor engine: conf = 1 / (1 + r), r without the argmax.
                                let rest: f64 = p
                                    .iter()
                                    .enumerate()
                                    .filter(|&(j, _)| j != pred)
                                    .map(|(_, v)| v)
                                    .sum();
                                let se = 1.0 + rest;
                                let inv = 1.0 / se;
                                p.iter_mut().for_each(|pj| *pj *= inv);
                                (inv, (row[y] as f64 - max) - se.ln())
                            } else {
                                p.iter_mut().zip(row).for_each(|(pj, &v)| *pj = v as f64);
                                (max as f64, (row[y] as f64).ln())
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
                        if keep_top {
                            b.top.push((conf, pred as u32, outcome > 0.5));
                        }
                        if keep_columns {
                            for (j, &pj) in p.iter().enumerate() {
                                b.columns[j * rows.len() + local] = pj;
                            }
                        }
                        for (ri, r) in plan.requests.iter().enumerate() {
                            let Some(edges) = &edges[ri] else { continue };
                            let nb = edges.len() - 1;
                            let st = &mut b.stats[ri];
                            if binary || r.scores == ScoreSet::TopLabel {
                                if r.threshold.is_some_and(|eps| conf <= eps) {
                                    continue;
                                }
                                let g = if binary { 0 } else { pred };
                                let at = g * nb + bin_of(conf, edges);
                                st.count[at] += 1.0;
                                st.sum_score[at] += conf;
                                st.sum_outcome[at] += outcome;
                            } else {
                                for (j, &pj) in p.iter().enumerate() {
                                    if r.threshold.is_some_and(|eps| pj <= eps) {
                                        continue;
                                    }
                                    let at = j * nb + bin_of(pj, edges);
                                    st.count[at] += 1.0;
                                    st.sum_score[at] += pj;
                                    st.sum_outcome[at] += (j == y) as u8 as f64;
                                }
                            }
                        }
                    }
                    b
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("fused engine thread panicked")).collect()
    });

    let mut stats = empty_stats(plan, groups_of);
    let (mut nll_sum, mut nll_clipped_sum, mut brier_sum, mut correct) = (0.0, 0.0, 0.0, 0.0);
    for b in &blocks {
        for (ri, s) in b.stats.iter().enumerate() {
            if edges[ri].is_some() {
                stats[ri].accumulate(s);
            }
        }
        nll_sum += b.nll;
        nll_clipped_sum += b.nll_clipped;
        brier_sum += b.brier;
        correct += b.correct;
    }

    for (ri, r) in plan.requests.iter().enumerate() {
        if edges[ri].is_some() {
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
            let column = |j: usize| -> Vec<RankedPair> {
                let mut out = Vec::new();
                let mut i = 0u64;
                for b in &blocks {
                    let len = b.columns.len() / k;
                    for &s in &b.columns[j * len..(j + 1) * len] {
                        if keep(s) {
                            out.push(RankedPair::new(s, i, labels[i as usize] as usize == j));
                        }
                        i += 1;
                    }
                }
                out
            };
            let n_threads = threads().min(k);
            let parts: Vec<BinStats> = thread::scope(|scope| {
                let handles: Vec<_> = (0..n_threads)
                    .map(|t| {
                        let (column, template) = (&column, &stats[ri]);
                        scope.spawn(move || {
                            let mut part = BinStats::zeros(template.layout.clone(), k);
                            for j in (t..k).step_by(n_threads) {
                                accumulate_ranges(&mut part, j, &mut column(j));
                            }
                            part
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("range thread panicked")).collect()
            });
            parts.iter().for_each(|p| stats[ri].accumulate(p));
        } else {
            let mut pairs = Vec::new();
            let mut first_row = 0;
            for b in &blocks {
                let len = b.columns.len() / k;
                for local in 0..len {
                    let i = first_row + local;
                    for j in 0..k {
                        let s = b.columns[j * len + local];
                        if keep(s) {
                            pairs.push(RankedPair::new(
                                s,
                                (i * k + j) as u64,
                                labels[i] as usize == j,
                            ));
                        }
                    }
                }
                first_row += len;
            }
            accumulate_ranges(&mut stats[ri], 0, &mut pairs);
        }
    }
    Ok(Outcome { stats, nll_sum, nll_clipped_sum, brier_sum, correct })
}
