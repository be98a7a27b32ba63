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

use super::context::FitContext;
use super::data::FitData;
use super::map::CalibrationMap;
use super::objective::Evaluation;
use super::params::{load_flat, regrad};
use super::record::{FitRecord, Solver, StopReason};
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
    let mut memo = Memo::start(&init, data)?;
    let mut module = init;
    let mut iterations = 0usize;
    let stop = loop {
        if let Some(stop) = ctx.stop_before(iterations, memo.last.point()) {
            break stop;
        }
        let loss_at =
            |p: &[f64]| Evaluation::of(&load_flat(&module, p), data).map_or(f64::NAN, |e| e.loss);
        if ctx.checkpoints.unbounded(iterations, memo.last.point(), &memo.last.params, loss_at) {
            break StopReason::Unbounded;
        }
        let previous = memo.last.loss;
        let (next, loss) = optimizer.step(1.0, module.clone(), &mut |m: M| memo.objective(m));
        iterations += 1;
        if let Some(err) = memo.failure.take() {
            return Err(err);
        }
        if !(loss / memo.scale).is_finite() {
            return Err(non_finite(iterations, loss / memo.scale));
        }
        memo.settle_on(&next, iterations)?;
        module = next;
        let change = (previous - memo.last.loss).abs();
        if memo.last.grad_norm <= tol_grad {
            continue; // reported and stopped at the top of the loop
        }
        if change <= tol_change * memo.last.loss.abs().max(1.0) {
            break ctx.standstill(iterations, memo.last.point());
        }
    };
    let (evaluations, last) = (memo.evaluations, memo.last.point());
    Ok((module, ctx.record(Solver::Lbfgs, iterations, evaluations, last, stop, start)))
}

/// The objective as burn's L-BFGS sees it (scaled by N), memoised on the exact parameters of
/// the last evaluation, with the first error a trial hit.
struct Memo<'a> {
    data: &'a FitData,
    scale: f64,
    last: Evaluation,
    evaluations: usize,
    failure: Option<FitError>,
}

impl<'a> Memo<'a> {
    /// Evaluates the starting point, which must be finite.
    fn start<M: CalibrationMap>(init: &M, data: &'a FitData) -> Result<Self> {
        let last = Evaluation::of(init, data)?;
        if !last.is_finite() {
            return Err(non_finite(0, last.loss));
        }
        let scale = data.n_samples as f64;
        Ok(Self { data, scale, last, evaluations: 1, failure: None })
    }

    /// Scaled objective and gradient at `m`. A trial whose loss is not finite (a step too
    /// long for the arithmetic) is rejected as infinite, keeping the last gradient; an error
    /// is kept for the caller and the trial rejected the same way.
    fn objective<M: CalibrationMap>(&mut self, m: M) -> (f64, GradientsParams) {
        // Memo: the step starts at the point evaluated last.
        let here = Evaluation::params_of(super::params::flat_params(&m));
        if here.as_deref().ok() == Some(self.last.params.as_slice()) {
            return (self.last.loss * self.scale, regrad(&m, &self.last.grads, self.scale));
        }
        self.evaluations += 1;
        match Evaluation::of(&m, self.data) {
            Ok(e) if e.is_finite() => {
                let out = (e.loss * self.scale, regrad(&m, &e.grads, self.scale));
                self.last = e;
                out
            }
            Ok(_) => (f64::INFINITY, regrad(&m, &self.last.grads, self.scale)),
            Err(err) => {
                self.failure.get_or_insert(err);
                (f64::INFINITY, regrad(&m, &self.last.grads, self.scale))
            }
        }
    }

    /// Makes the step's accepted point `next` the last evaluation: normally it already is;
    /// evaluates it otherwise.
    fn settle_on<M: CalibrationMap>(&mut self, next: &M, iteration: usize) -> Result<()> {
        let at = Evaluation::params_of(super::params::flat_params(next))?;
        if at != self.last.params {
            self.last = Evaluation::of(next, self.data)?;
            self.evaluations += 1;
            if !self.last.is_finite() {
                return Err(non_finite(iteration, self.last.loss));
            }
        }
        Ok(())
    }
}

fn non_finite(iteration: usize, value: f64) -> FitError {
    FitError::NonFinite { what: "loss".into(), iteration, value }
}
