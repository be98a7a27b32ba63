//! The device engine: calib's CubeCL kernels on the input's wgpu device.
//!
//! One fused row pass (stable softmax statistics, top-label confidence and hit, `log p_y`,
//! Brier) leaves `[6, N]` fields on the device; static bins are then accumulated by one
//! kernel per request (top-label: a shared-memory histogram per cube where it fits, else one
//! thread per row; class-wise: one thread per class and run of rows, bins in registers), the
//! scalar sums by burn's reductions, and one transaction reads back only the `G x B` bin
//! sums and the scalars. Adaptive ranges are cut on the device too, without a sort
//! ([`ranges`]: radix selection on the scores' order keys, ties in row order), reading back
//! only histogram counts; more than [`MAX_CLASS_BINS`] ranges go to the fused engine
//! ([`super::run_fused`]) after one read-back of the rows.
//!
//! Bin sums are exact integers (fixed-point scores, see [`kernels`]), so the result does not
//! depend on the order in which threads add up. The scores themselves are f32.

mod fixed_bins;
mod kernels;
mod ops;
mod range_kernels;
mod range_ops;
mod ranges;
mod rows;
mod selection;
mod tempered;
mod words;

use burn::backend::Dispatch;
use burn::tensor::{DType, Int, Tensor, TensorData, Transaction};

use self::fixed_bins::MAX_CLASS_BINS;
use self::kernels::{BRIER, HIT, LOG_PY};
use self::ops::CalibKernels;
use self::rows::{CHUNK_VALUES, device_rows, row_chunks, row_pass};
use self::words::{add_bins, words_of};
use super::plan::{Outcome, Plan};
use crate::backend::{BackendKind, Precision};
use crate::binning::{Binning, f32_below};
use crate::error::{CalibError, Result};
use crate::host::read_f64;
use crate::input::{Predictions, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;

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

/// What the transaction reads, in order.
enum Pending {
    Bins { request: usize },
    Scalars { clipped: bool },
}

/// Runs `plan` with the kernels (see [`supports`]), chunk by chunk of rows; adaptive
/// requests through the tensor engine.
pub(crate) fn run_cube(preds: &Predictions, plan: &Plan) -> Result<Outcome> {
    run_cube_in(preds, plan, CHUNK_VALUES)
}

/// [`run_cube`] in chunks of at most `chunk_values` values.
fn run_cube_in(preds: &Predictions, plan: &Plan, chunk_values: usize) -> Result<Outcome> {
    let k = preds.n_classes();
    let stats: Vec<BinStats> = plan.requests.iter().map(|r| r.zeros(k, false)).collect();
    let mut outcome =
        Outcome { stats, nll_sum: 0.0, nll_clipped_sum: 0.0, brier_sum: 0.0, correct: 0.0 };
    for range in row_chunks(preds.n_samples(), preds.n_columns(), chunk_values) {
        let (tx, pending) = register_chunk(preds, plan, range);
        let data = tx.try_execute().map_err(|e| CalibError::Backend(e.to_string()))?;
        read_back(data, pending, &mut outcome)?;
    }
    add_adaptive(preds, plan, chunk_values, &mut outcome)?;
    Ok(outcome)
}

/// The kernels of one chunk of rows, their read-backs registered in one transaction.
fn register_chunk(
    preds: &Predictions,
    plan: &Plan,
    range: (usize, usize),
) -> (Transaction, Vec<Pending>) {
    let (k, logits) = (preds.n_classes(), preds.kind() == ScoreKind::Logits);
    let (values, labels) = device_rows(preds, range);
    let (rows, pred) = row_pass(values.clone(), labels.clone(), logits);
    let device = rows.device();
    let mut tx = Transaction::default();
    let mut pending = Vec::new();
    for (request, r) in plan.requests.iter().enumerate() {
        let Some(edges) = r.binning.edges() else { continue };
        let edges = Tensor::<1>::from_data(
            TensorData::new(edges.iter().map(|&e| f32_below(e)).collect(), [edges.len()]),
            (&device, DType::F32),
        );
        let threshold = r.threshold.map_or(-1.0, f32_below);
        let bins = match r.scores {
            ScoreSet::TopLabel => <Dispatch as CalibKernels>::calib_top_label_bins(
                rows.clone().into_dispatch(),
                pred.clone().into_dispatch(),
                edges.into_dispatch(),
                r.n_groups(k, false),
                threshold,
            ),
            ScoreSet::AllClasses => <Dispatch as CalibKernels>::calib_class_bins(
                values.clone().into_dispatch(),
                labels.clone().into_dispatch(),
                rows.clone().into_dispatch(),
                edges.into_dispatch(),
                logits,
                threshold,
            ),
        };
        tx = tx.register(Tensor::<1, Int>::from_dispatch(bins));
        pending.push(Pending::Bins { request });
    }
    if plan.scalars {
        let n = range.1;
        let field = |f: usize| rows.clone().slice([f..f + 1, 0..n]);
        tx = tx.register(field(LOG_PY).sum()).register(field(HIT).sum());
        tx = tx.register(field(BRIER).sum());
        if let Some(eps) = plan.nll_eps {
            tx = tx.register(field(LOG_PY).clamp_min(eps.ln()).sum());
        }
        pending.push(Pending::Scalars { clipped: plan.nll_eps.is_some() });
    }
    (tx, pending)
}

/// Adds one chunk's read-back to `outcome`.
fn read_back(data: Vec<TensorData>, pending: Vec<Pending>, outcome: &mut Outcome) -> Result<()> {
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

/// The adaptive requests of `plan`: on the device by radix selection ([`ranges`]), or (more
/// than [`MAX_CLASS_BINS`] ranges) through the fused engine after one read-back of the rows.
fn add_adaptive(
    preds: &Predictions,
    plan: &Plan,
    chunk_values: usize,
    outcome: &mut Outcome,
) -> Result<()> {
    let mut on_host = Vec::new();
    for (at, r) in plan.requests.iter().enumerate() {
        if !matches!(r.binning, Binning::Adaptive { .. }) {
            continue;
        }
        if ranges::takes(r) {
            let chunks = row_chunks(preds.n_samples(), preds.n_columns(), chunk_values);
            outcome.stats[at] = ranges::device_ranges(preds, r, chunks)?;
        } else {
            on_host.push((at, r.clone()));
        }
    }
    if on_host.is_empty() {
        return Ok(());
    }
    let sub = Plan {
        requests: on_host.iter().map(|(_, r)| r.clone()).collect(),
        scalars: false,
        nll_eps: None,
    };
    let done = super::run_fused(preds, &sub, &mut super::Workspace::new())?;
    for ((at, _), stats) in on_host.into_iter().zip(done.stats) {
        outcome.stats[at] = stats;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
