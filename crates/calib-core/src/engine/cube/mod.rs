//! The device engine: calib's CubeCL kernels on the input's wgpu device.
//!
//! One fused row pass (stable softmax statistics, top-label confidence and hit, `log p_y`,
//! Brier) leaves `[6, N]` fields on the device; static bins are then accumulated by one
//! kernel per request (top-label: a shared-memory histogram per cube where it fits, else one
//! thread per row; class-wise: one thread per class and run of rows, bins in registers), the
//! scalar sums by burn's reductions, and one transaction reads back only the `G x B` bin
//! sums (added up over every chunk of rows on the device) and the scalars. The rows may come
//! as several parts on the device ([`run_cube_parts`]): they are evaluated where they lie, as
//! one input. Adaptive ranges are cut on the device too, without a sort
//! ([`ranges`]: radix selection on the scores' order keys, ties in row order), reading back
//! only where each cut falls; more than [`MAX_CLASS_BINS`] ranges go to the fused engine
//! ([`super::run_fused`]) after one read-back of the rows.
//!
//! Bin sums are exact integers (fixed-point scores, see [`kernels`]), so the result does not
//! depend on the order in which threads add up. The scores themselves are f32.

mod affine;
mod bin_kernels;
mod bin_ops;
mod binned_pairs;
mod ensemble_kernels;
mod ensemble_ops;
mod ensemble_passes;
mod fixed_bins;
mod kernels;
mod launch;
mod logistic_kernels;
mod logistic_ops;
mod logistic_rows;
mod map_kernels;
mod map_ops;
mod ops;
mod pav_kernels;
mod pav_ops;
mod pooled_pairs;
mod range_kernels;
mod range_ops;
mod ranges;
mod rows;
mod selection;
mod sort_kernels;
mod sort_ops;
mod sorted_pairs;
mod tempered;
mod words;

use burn::backend::Dispatch;
use burn::tensor::{DType, Device, Int, Tensor, TensorData, Transaction};

use self::fixed_bins::MAX_CLASS_BINS;
use self::kernels::{BRIER, HIT, LOG_PY};
use self::ops::{CalibKernels, accumulator};
use self::ranges::RangeCuts;
use self::rows::{CHUNK_VALUES, Chunk, Chunks};
use self::words::{add_bins, words_of};
use super::cost::read_back;
use super::plan::{Outcome, Plan, StatRequest};
use crate::backend::{BackendKind, Precision};
use crate::binning::{Binning, f32_below};
use crate::error::{CalibError, Result};
use crate::host::read_f64;
use crate::input::{Predictions, ScoreKind};
use crate::metrics::ScoreSet;

pub use affine::{
    AffineSums, MAX_CLASSES as AFFINE_MAX_CLASSES, SoftmaxTerms, affine_softmax_terms,
    diagonal_affine_pass,
};
pub use binned_pairs::BinnedProblems;
pub use ensemble_passes::EnsembleMixture;
pub use launch::{checked_kernels, set_checked_kernels};
pub use logistic_rows::{LogisticRows, LogisticSpec, LogisticSums};
pub use map_ops::{LogisticFeatures, MapTable, apply_map_tables, map_tables_nll};
pub use pooled_pairs::{PooledBlock, PooledProblems};
pub use sorted_pairs::DevicePairs;
pub use tempered::TemperedRows;

/// Whether the kernels can run `plan` on `preds`: multi-class input on a GPU device, f32,
/// and no class-wise request with more than [`MAX_CLASS_BINS`] bins.
pub(crate) fn supports(preds: &Predictions, plan: &Plan, precision: Precision) -> bool {
    let class_bins_fit = plan.requests.iter().all(|r| {
        r.scores != ScoreSet::AllClasses
            || matches!(r.binning, Binning::Adaptive { .. })
            || r.binning.n_bins() <= MAX_CLASS_BINS
    });
    preds.kind() != ScoreKind::Binary
        && !BackendKind::of(preds.device()).is_cpu()
        && precision != Precision::F64
        && class_bins_fit
}

/// Whether the kernels can run `plan` on the rows of `parts` together (parts of equal K and
/// kind, as `EvaluationConfig::evaluate_parts` checks): each part as [`supports`] says, and
/// (over several parts) every adaptive request cut on the device ([`ranges::takes`]: the host
/// fallback takes one part).
pub(crate) fn supports_parts(parts: &[Predictions], plan: &Plan, precision: Precision) -> bool {
    let ranged = plan
        .requests
        .iter()
        .all(|r| !matches!(r.binning, Binning::Adaptive { .. }) || ranges::takes(r));
    parts.iter().all(|p| supports(p, plan, precision)) && (parts.len() == 1 || ranged)
}

/// Runs `plan` with the kernels (see [`supports`]), chunk by chunk of rows.
pub(crate) fn run_cube(preds: &Predictions, plan: &Plan) -> Result<Outcome> {
    run_parts_in(std::slice::from_ref(preds), plan, CHUNK_VALUES)
}

/// Runs `plan` with the kernels over the rows of `parts` in order (see [`supports_parts`]):
/// the outcome of their concatenation.
pub(crate) fn run_cube_parts(parts: &[Predictions], plan: &Plan) -> Result<Outcome> {
    run_parts_in(parts, plan, CHUNK_VALUES)
}

/// [`run_cube_parts`] in chunks of at most `chunk_values` values.
///
/// What it costs (counted by [`crate::engine::DeviceCost`]; a "visit" runs kernels on every
/// chunk of rows): the adaptive requests' rounds of selection passes ([`ranges`]), then one
/// last visit for every static request, the scalar sums and the range sums, each round and the
/// last visit one host synchronisation. The scores are read by the row pass (once per chunk
/// when the chunks are kept, see [`Chunks`]), once per class-wise static request and once per
/// class-wise adaptive request and pass; top-label work reads the row pass's fields, 28 bytes a
/// row. Only bin sums, each cut's located bucket and per-chunk scalars come back, never the
/// rows.
fn run_parts_in(parts: &[Predictions], plan: &Plan, chunk_values: usize) -> Result<Outcome> {
    let first = parts.first().ok_or(CalibError::Empty)?;
    let (k, logits) = (first.n_classes(), first.kind() == ScoreKind::Logits);
    let device = first.device().clone();
    let mut chunks = Chunks::new(parts, chunk_values);
    let (mut jobs, mut on_host) = (Vec::new(), Vec::new());
    for (at, r) in plan.requests.iter().enumerate() {
        match r.binning {
            Binning::Adaptive { .. } if ranges::takes(r) => {
                jobs.push(RangeCuts::new(at, r, k, logits))
            }
            Binning::Adaptive { .. } => on_host.push(at),
            _ => {}
        }
    }
    ranges::select_cuts(&mut jobs, &mut chunks, &device)?;
    let mut outcome = last_visit(&mut chunks, plan, &jobs, &device)?;
    if !on_host.is_empty() {
        let [preds] = parts else {
            return Err(CalibError::InvalidConfig(
                "more than 256 adaptive ranges take one part of rows on the device".into(),
            ));
        };
        add_on_host(preds, plan, &on_host, &mut outcome)?;
    }
    Ok(outcome)
}

/// What the last visit's transaction reads, in order.
enum Pending {
    Bins { request: usize },
    Scalars { clipped: bool },
}

/// The last visit: every static request's bins, the range sums of `jobs` and the scalar sums,
/// read back in one transaction.
fn last_visit(
    chunks: &mut Chunks<'_>,
    plan: &Plan,
    jobs: &[RangeCuts],
    device: &Device,
) -> Result<Outcome> {
    let k = chunks.n_classes();
    let logits = chunks.logits();
    let statics: Vec<(usize, Tensor<1>, f32)> = (plan.requests.iter().enumerate())
        .filter_map(|(at, r)| {
            let edges = r.binning.edges()?;
            let edges: Vec<f32> = edges.iter().map(|&e| f32_below(e)).collect();
            let n = edges.len();
            let edges = Tensor::<1>::from_data(TensorData::new(edges, [n]), (device, DType::F32));
            Some((at, edges, r.threshold.map_or(-1.0, f32_below)))
        })
        .collect();
    let mut bins: Vec<Tensor<1, Int>> = (statics.iter())
        .map(|(at, edges, _)| {
            let r = &plan.requests[*at];
            accumulator(device, r.n_groups(k, false) * (edges.dims()[0] - 1))
        })
        .collect();
    let cuts: Vec<Tensor<1, Int>> = jobs.iter().map(|j| j.cut_table(device)).collect();
    let mut sums: Vec<Tensor<1, Int>> =
        (jobs.iter()).map(|j| Tensor::zeros([j.sum_words()], (device, DType::U32))).collect();
    let mut scalars = Vec::new();
    chunks.visit(|c| {
        for ((at, edges, threshold), acc) in statics.iter().zip(&mut bins) {
            let r = &plan.requests[*at];
            *acc = static_bins(c, r, edges, *threshold, acc.clone(), k, logits);
        }
        for ((job, cuts), acc) in jobs.iter().zip(&cuts).zip(&mut sums) {
            *acc = job.add_sums(c, cuts, acc.clone());
        }
        if plan.scalars {
            scalars.push(scalar_sums(c, plan.nll_eps));
        }
    });
    let words =
        (statics.iter().map(|s| s.0)).zip(bins).chain(jobs.iter().map(|j| j.request).zip(sums));
    let (tx, pending) = register_last(words, scalars, plan.nll_eps.is_some());
    let stats = plan.requests.iter().map(|r| r.zeros(k, false)).collect();
    let mut outcome =
        Outcome { stats, nll_sum: 0.0, nll_clipped_sum: 0.0, brier_sum: 0.0, correct: 0.0 };
    let data = calib_kernels::trace::step("device: last visit", || read_back(tx))?;
    read_into(data, pending, &mut outcome)?;
    Ok(outcome)
}

/// The last visit's transaction: each request's accumulated words, then each chunk's scalar
/// sums (`clipped`: with the clipped NLL).
fn register_last(
    words: impl Iterator<Item = (usize, Tensor<1, Int>)>,
    scalars: Vec<Vec<Tensor<1>>>,
    clipped: bool,
) -> (Transaction, Vec<Pending>) {
    let (mut tx, mut pending) = (Transaction::default(), Vec::new());
    for (request, acc) in words {
        tx = tx.register(acc);
        pending.push(Pending::Bins { request });
    }
    for chunk in scalars {
        tx = chunk.into_iter().fold(tx, |tx, s| tx.register(s));
        pending.push(Pending::Scalars { clipped });
    }
    (tx, pending)
}

/// Adds chunk `c`'s static bins of request `r` to `acc`.
fn static_bins(
    c: &Chunk,
    r: &StatRequest,
    edges: &Tensor<1>,
    threshold: f32,
    acc: Tensor<1, Int>,
    k: usize,
    logits: bool,
) -> Tensor<1, Int> {
    let (edges, acc) = (edges.clone().into_dispatch(), acc.into_dispatch());
    Tensor::from_dispatch(match r.scores {
        ScoreSet::TopLabel => <Dispatch as CalibKernels>::calib_top_label_bins(
            c.rows.clone().into_dispatch(),
            c.pred.clone().into_dispatch(),
            edges,
            acc,
            r.n_groups(k, false),
            threshold,
        ),
        ScoreSet::AllClasses => <Dispatch as CalibKernels>::calib_class_bins(
            c.values.clone().into_dispatch(),
            c.labels.clone().into_dispatch(),
            c.rows.clone().into_dispatch(),
            edges,
            acc,
            logits,
            threshold,
        ),
    })
}

/// Chunk `c`'s sums of `log p_y`, hits, Brier and (with `nll_eps`) the clipped `log p_y`.
fn scalar_sums(c: &Chunk, nll_eps: Option<f64>) -> Vec<Tensor<1>> {
    let n = c.rows.dims()[1];
    let field = |f: usize| c.rows.clone().slice([f..f + 1, 0..n]);
    let mut sums = vec![field(LOG_PY).sum(), field(HIT).sum(), field(BRIER).sum()];
    if let Some(eps) = nll_eps {
        sums.push(field(LOG_PY).clamp_min(eps.ln()).sum());
    }
    sums
}

/// Adds the last visit's read-back to `outcome`.
fn read_into(data: Vec<TensorData>, pending: Vec<Pending>, outcome: &mut Outcome) -> Result<()> {
    let mut data = data.into_iter();
    let mut next = || data.next().ok_or_else(|| CalibError::Backend("missing read-back".into()));
    for p in pending {
        match p {
            Pending::Bins { request } => {
                add_bins(&mut outcome.stats[request], &words_of(next()?)?);
            }
            Pending::Scalars { clipped } => {
                outcome.nll_sum -= read_f64(next()?)?[0];
                outcome.correct += read_f64(next()?)?[0];
                outcome.brier_sum += read_f64(next()?)?[0];
                if clipped {
                    outcome.nll_clipped_sum -= read_f64(next()?)?[0];
                }
            }
        }
    }
    Ok(())
}

/// The adaptive requests `on_host` (more than [`MAX_CLASS_BINS`] ranges) through the fused
/// engine, after one read-back of the rows.
fn add_on_host(
    preds: &Predictions,
    plan: &Plan,
    on_host: &[usize],
    outcome: &mut Outcome,
) -> Result<()> {
    let sub = Plan {
        requests: on_host.iter().map(|&at| plan.requests[at].clone()).collect(),
        scalars: false,
        nll_eps: None,
    };
    let done = super::run_fused(preds, &sub, &mut super::Workspace::new())?;
    for (&at, stats) in on_host.iter().zip(done.stats) {
        outcome.stats[at] = stats;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
