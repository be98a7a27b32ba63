//! Full-batch L-BFGS with a strong-Wolfe line search: burn's `LBFGS`, driven one iteration
//! at a time so the stopping rule, the record and NaN checks are ours.
//!
//! # Note
//! burn's `LBFGS::step` (a port of PyTorch's) evaluates the objective at the start of every
//! step; driving it one iteration per call would double the evaluations, so the objective is
//! memoised on the exact parameter values of the last evaluation (the line search's accepted
//! point is the one `step` starts from next). Its internal `max_eval` must also be set: the
//! default (`max_iter * 5 / 4` = 1 for one iteration) leaves the line search no trials.
//! Finally, the port only stores a curvature pair when `y·s > 1e-10` (absolute), which near
//! the optimum of a mean NLL (gradients ~1e-6, steps ~1e-4) stops the memory from updating and
//! stalls convergence; the optimiser therefore sees the objective scaled by N (the summed NLL),
//! which leaves the minimiser and the line search unchanged and moves that threshold out of the
//! way. The record reports the mean-scale values.

use std::time::Instant;

use burn::optim::{GradientsParams, LBFGSConfig, LineSearchFn};

use super::FitContext;
use super::data::FitData;
use super::map::CalibrationMap;
use super::objective::Evaluation;
use super::params::regrad;
use super::record::{FitRecord, Solver};
use crate::error::{FitError, Result};

/// Line-search trials allowed per iteration.
const MAX_LINE_SEARCH: usize = 25;

/// Minimises the objective of `init` on `data` with L-BFGS.
pub(crate) fn fit_lbfgs<M: CalibrationMap>(
    init: M,
    data: &FitData,
    history_size: usize,
    ctx: &mut FitContext<'_>,
) -> Result<(M, FitRecord)> {
    let start = Instant::now();
    let (tol_grad, tol_change) = (ctx.tolerance_grad, ctx.tolerance_change);
    let mut optimizer = LBFGSConfig::new()
        .with_max_iter(1)
        .with_max_eval(Some(1 + MAX_LINE_SEARCH))
        .with_history_size(history_size)
        .with_tolerance_grad(0.0)
        .with_tolerance_change(1e-16)
        .with_line_search_fn(LineSearchFn::StrongWolfe)
        .init();

    let scale = data.n_samples as f64;
    let mut evaluations = 0usize;
    let mut failure: Option<FitError> = None;
    let mut last = Evaluation::of(&init, data)?;
    evaluations += 1;
    if !last.is_finite() {
        return Err(FitError::NonFinite { what: "loss".into(), iteration: 0, value: last.loss });
    }
    let mut module = init;
    let mut iterations = 0usize;
    let stop = loop {
        if let Some(stop) = ctx.stop_before(iterations, last.point()) {
            break stop;
        }
        let previous = last.loss;
        let mut closure = |m: M| -> (f64, GradientsParams) {
            // Memo: the step starts at the point evaluated last.
            let here = super::params::flat_params(&m);
            let here = Evaluation::params_of(here);
            if here.as_deref().ok() == Some(last.params.as_slice()) {
                return (last.loss * scale, regrad(&m, &last.grads, scale));
            }
            evaluations += 1;
            match Evaluation::of(&m, data) {
                Ok(e) if e.is_finite() => {
                    let out = (e.loss * scale, regrad(&m, &e.grads, scale));
                    last = e;
                    out
                }
                Ok(_) => {
                    // A trial step too long for the arithmetic: reject it, keep the gradient.
                    (f64::INFINITY, regrad(&m, &last.grads, scale))
                }
                Err(err) => {
                    failure.get_or_insert(err);
                    (f64::INFINITY, regrad(&m, &last.grads, scale))
                }
            }
        };
        let (next, loss) = optimizer.step(1.0, module.clone(), &mut closure);
        let loss = loss / scale;
        iterations += 1;
        if let Some(err) = failure.take() {
            return Err(err);
        }
        if !loss.is_finite() {
            return Err(FitError::NonFinite {
                what: "loss".into(),
                iteration: iterations,
                value: loss,
            });
        }
        // The accepted point is normally the last one evaluated; evaluate it otherwise.
        let at = Evaluation::params_of(super::params::flat_params(&next))?;
        if at != last.params {
            last = Evaluation::of(&next, data)?;
            evaluations += 1;
            if !last.is_finite() {
                return Err(FitError::NonFinite {
                    what: "loss".into(),
                    iteration: iterations,
                    value: last.loss,
                });
            }
        }
        module = next;
        let change = (previous - last.loss).abs();
        if last.grad_norm <= tol_grad {
            continue; // reported and stopped at the top of the loop
        }
        if change <= tol_change * last.loss.abs().max(1.0) {
            break ctx.standstill(iterations, last.point());
        }
    };
    let record = ctx.record(Solver::Lbfgs, iterations, evaluations, last.point(), stop, start);
    Ok((module, record))
}
