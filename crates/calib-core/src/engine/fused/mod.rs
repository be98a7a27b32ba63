//! The fused host engine: every statistic of a plan in one pass over the rows, in f64.
//!
//! Phases: the [`row_pass`] (softmax, argmax, NLL, Brier and every static bin of every row,
//! rows split across threads, each with its own accumulators), the merge of the threads'
//! blocks, then the adaptive requests. Adaptive class ranges
//! then rebuild each class column from the rows ([`ClassColumns`]: the same expression bit for
//! bit, no `[N, K]` copy, one build shared by ACE, TACE and every class-conditional adaptive
//! request) and find their cuts by a radix pass plus exact selection
//! ([`value_ranges`]), one group of classes per task.
//!
//! Same plan, conventions and f64 arithmetic as the tensor engine ([`super::tensor`]); tests
//! hold the two to 1e-9.

use std::thread;

mod buckets;
mod class_columns;
mod row_pass;
mod value_ranges;
mod workspace;

pub(crate) use buckets::{from_order_key, order_key};
pub(crate) use row_pass::score_row;
pub use workspace::Workspace;

use class_columns::{ClassColumns, GroupColumns, group_width};
use row_pass::{Block, RowPass};

use super::plan::{Outcome, Plan};
use crate::binning::{BinLookup, Binning, RankedPair, accumulate_ranges};
use crate::error::Result;
use crate::input::{HostValues, Predictions, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;
use calib_kernels::{Score, dispatch};

/// Runs `plan` on the host rows of `preds`, with buffers from `workspace`.
pub(crate) fn run_fused(
    preds: &Predictions,
    plan: &Plan,
    workspace: &mut Workspace,
) -> Result<Outcome> {
    let (values, labels) = preds.host_rows()?;
    match values {
        HostValues::F32(v) => Ok(run_plan(preds, plan, &v, &labels, workspace)),
        HostValues::F64(v) => Ok(run_plan(preds, plan, &v, &labels, workspace)),
    }
}

fn run_plan<T: Score>(
    preds: &Predictions,
    plan: &Plan,
    values: &[T],
    labels: &[i64],
    workspace: &mut Workspace,
) -> Outcome {
    let (kind, k) = (preds.kind(), preds.n_classes());
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
    let blocks = run_row_pass(&pass, preds.n_samples());
    let mut outcome = merge_blocks(plan, &blocks, k, binary);

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
        column_ranges(&columns, plan, &shared, &mut outcome.stats, workspace);
    }
    for (ri, r) in plan.requests.iter().enumerate() {
        if pass.lookups[ri].is_none() && !shared.contains(&ri) {
            let stats = &mut outcome.stats[ri];
            if binary || r.scores == ScoreSet::TopLabel {
                rank_top_label(stats, r.threshold, &blocks);
            } else {
                rank_pooled_classes(stats, r.threshold, &columns);
            }
        }
    }
    outcome
}

/// The row pass over `n` rows in equal blocks shared out over the threads: at most
/// [`MAX_BLOCKS`] blocks of at least [`MIN_BLOCK_ROWS`] rows (unless `n` is less), sized from
/// `n` alone, so that the blocks and the order they merge in (and so every sum's bits) do not
/// depend on the number of threads. Equal blocks balance: with a short last block, two threads
/// on 5 1/8 blocks' rows differed by a block (a sixth of the pass).
fn run_row_pass<T: Score>(pass: &RowPass<'_, T>, n: usize) -> Vec<Block> {
    let n_blocks = (n / MIN_BLOCK_ROWS).clamp(1, MAX_BLOCKS);
    let block_rows = n.div_ceil(n_blocks).max(1);
    let starts: Vec<usize> = (0..n.max(1)).step_by(block_rows).collect();
    calib_kernels::in_order(&starts, |&start| pass.run(start..(start + block_rows).min(n)))
}

/// The most blocks of the row pass (each holds its bins' sums until the merge).
const MAX_BLOCKS: usize = 32;

/// The fewest rows of a block of the row pass.
const MIN_BLOCK_ROWS: usize = 4096;

/// The threads' blocks summed into the plan's statistics and sums (adaptive requests' bins
/// stay empty until they are ranked).
fn merge_blocks(plan: &Plan, blocks: &[Block], k: usize, binary: bool) -> Outcome {
    let mut stats: Vec<BinStats> = plan.requests.iter().map(|r| r.zeros(k, binary)).collect();
    let (mut nll_sum, mut nll_clipped_sum, mut brier_sum, mut correct) = (0.0, 0.0, 0.0, 0.0);
    for b in blocks {
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
    Outcome { stats, nll_sum, nll_clipped_sum, brier_sum, correct }
}

/// The class-conditional all-class adaptive requests `shared`: groups of class columns built
/// and ranked by the threads in turn, each thread with its buffers from `workspace`.
fn column_ranges<T: Score>(
    columns: &ClassColumns<'_, T>,
    plan: &Plan,
    shared: &[usize],
    stats: &mut [BinStats],
    workspace: &mut Workspace,
) {
    let (n, k) = (columns.labels.len(), columns.k);
    let wants: Vec<Option<f64>> = shared.iter().map(|&ri| plan.requests[ri].threshold).collect();
    let n_threads = calib_kernels::threads().min(k);
    let width = group_width(n, k, n_threads);
    if workspace.columns.len() < n_threads {
        workspace.columns.resize_with(n_threads, GroupColumns::default);
    }
    let layouts: Vec<_> = shared.iter().map(|&ri| stats[ri].layout.clone()).collect();
    let section = calib_kernels::trace::section();
    let parts: Vec<Vec<BinStats>> = thread::scope(|scope| {
        let handles: Vec<_> = (workspace.columns.iter_mut().take(n_threads).enumerate())
            .map(|(t, buffers)| {
                let (wants, layouts, section) = (&wants, &layouts, &section);
                scope.spawn(move || {
                    let mut parts: Vec<BinStats> =
                        layouts.iter().map(|layout| BinStats::zeros(layout.clone(), k)).collect();
                    let groups = (0..k.div_ceil(width)).skip(t).step_by(n_threads);
                    section.busy(t, || {
                        dispatch(
                            #[inline(always)]
                            || {
                                for g in groups {
                                    columns.ranges(g * width, width, wants, &mut parts, buffers);
                                }
                            },
                        )
                    });
                    parts
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("range thread panicked")).collect()
    });
    drop(section);
    for thread_parts in &parts {
        for (&ri, part) in shared.iter().zip(thread_parts) {
            stats[ri].accumulate(part);
        }
    }
}

/// An adaptive top-label request (or any adaptive request on binary input): the row pass's
/// top-label pairs above `threshold`, ranked per group.
fn rank_top_label(stats: &mut BinStats, threshold: Option<f64>, blocks: &[Block]) {
    let mut groups: Vec<Vec<RankedPair>> = vec![Vec::new(); stats.n_groups];
    let rows = blocks.iter().flat_map(|b| b.top.iter()).enumerate();
    for (i, &(s, pred, hit)) in rows.filter(|(_, t)| threshold.is_none_or(|eps| t.0 > eps)) {
        let g = if groups.len() > 1 { pred as usize } else { 0 };
        groups[g].push(RankedPair::new(s, i as u64, hit));
    }
    for (g, mut pairs) in groups.into_iter().enumerate() {
        accumulate_ranges(stats, g, &mut pairs);
    }
}

/// An adaptive all-class request pooled into one group: every `(i, k)` pair above
/// `threshold` ranked together.
fn rank_pooled_classes<T: Score>(
    stats: &mut BinStats,
    threshold: Option<f64>,
    columns: &ClassColumns<'_, T>,
) {
    let (n, k) = (columns.labels.len(), columns.k);
    let mut pairs = Vec::new();
    for i in 0..n {
        for j in 0..k {
            let s = columns.probability(i, j);
            if threshold.is_none_or(|eps| s > eps) {
                pairs.push(RankedPair::new(s, (i * k + j) as u64, columns.labels[i] as usize == j));
            }
        }
    }
    accumulate_ranges(stats, 0, &mut pairs);
}
