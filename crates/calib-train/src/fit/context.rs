//! [`FitContext`]: what every optimiser of a fit shares (settings, the device's precision,
//! the progress callback, the separable-data and unbounded-descent checks), and the
//! [`Progress`] lines it reports.

use std::time::Instant;

use burn::tensor::{DType, Device};
use calib_core::BackendKind;

use super::config::FitConfig;
use super::point::Point;
use super::record::{FitEngine, FitRecord, FloatType, Solver, StopReason};
use super::unbounded::Checkpoints;

/// One line of fit progress, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Iteration (0 = the starting point).
    pub iteration: usize,
    /// Objective at this iteration.
    pub loss: f64,
    /// Gradient max-norm at this iteration.
    pub grad_norm: f64,
}

/// Mean NLL below which a fit is taken as separating the labels ([`StopReason::Separable`]).
const SEPARABLE_NLL: f64 = 1e-5;

/// What every optimiser needs besides the data: stopping rule, progress sink, labels.
pub(crate) struct FitContext<'a> {
    pub tolerance_grad: f64,
    pub tolerance_change: f64,
    pub max_iter: usize,
    pub progress: &'a mut dyn FnMut(Progress),
    pub backend: BackendKind,
    pub dtype: DType,
    pub engine: FitEngine,
    pub warnings: Vec<String>,
    /// The unbounded-fit test ([`unbounded`]) and its state.
    pub checkpoints: Checkpoints,
}

impl<'a> FitContext<'a> {
    /// The context of a fit computed by `engine` in `dtype` on `device`, with `config`'s
    /// stopping rule.
    pub fn new(
        config: &FitConfig,
        device: &Device,
        dtype: DType,
        engine: FitEngine,
        progress: &'a mut dyn FnMut(Progress),
    ) -> Self {
        let (tolerance_grad, tolerance_change) = config.tolerances(dtype);
        Self {
            tolerance_grad,
            tolerance_change,
            max_iter: config.max_iter,
            progress,
            backend: BackendKind::of(device),
            dtype,
            engine,
            warnings: Vec::new(),
            checkpoints: Checkpoints::default(),
        }
    }

    /// Reports the start of iteration `iteration` at `last` and says whether the stopping rule
    /// ends the fit there: the gradient tolerance (converged) or the iteration cap.
    pub fn stop_before(&mut self, iteration: usize, last: Point) -> Option<StopReason> {
        (self.progress)(Progress { iteration, loss: last.loss, grad_norm: last.grad_norm });
        // An unpenalised NLL this close to 0 only falls further as the parameters grow (its
        // gradient shrinks with it, so the gradient test alone would call it converged).
        if last.nll < SEPARABLE_NLL && last.unpenalised() {
            Some(StopReason::Separable)
        } else if last.grad_norm <= self.tolerance_grad {
            Some(StopReason::Gradient)
        } else if iteration >= self.max_iter {
            Some(StopReason::IterationCap)
        } else {
            None
        }
    }

    /// Reports iteration `iteration` at `last`, where one iteration barely changed the loss
    /// or found no descent step, and says why the fit stops ([`StopReason::at_standstill`]).
    pub fn standstill(&mut self, iteration: usize, last: Point) -> StopReason {
        (self.progress)(Progress { iteration, loss: last.loss, grad_norm: last.grad_norm });
        StopReason::at_standstill(last.grad_norm, self.tolerance_grad)
    }

    /// The record of a fit that stopped at `last` for `stop_reason` (converged when that is
    /// the gradient or the loss-change tolerance).
    pub fn record(
        &self,
        optimizer: Solver,
        iterations: usize,
        evaluations: usize,
        last: Point,
        stop_reason: StopReason,
        start: Instant,
    ) -> FitRecord {
        let converged = matches!(stop_reason, StopReason::Gradient | StopReason::LossChange);
        let mut warnings = self.warnings.clone();
        if stop_reason == StopReason::Separable {
            warnings.push(
                "the map separates the calibration labels (NLL near 0 and falling as the \
                 parameters grow): there is no finite optimum; regularise or use temperature \
                 scaling"
                    .into(),
            );
        }
        if stop_reason == StopReason::Unbounded {
            warnings.push(
                "the parameters grow without bound while the NLL barely falls: there is no \
                 finite optimum (too few samples for an unregularised map, or separable \
                 classes); regularise (ODIR) or use temperature or vector scaling"
                    .into(),
            );
        }
        FitRecord {
            optimizer,
            iterations,
            evaluations,
            hessian_products: 0,
            final_loss: last.loss,
            final_nll: last.nll,
            grad_norm: last.grad_norm,
            wall_time_s: start.elapsed().as_secs_f64(),
            converged,
            stop_reason,
            n_samples: 0,
            n_classes: 0,
            cross_validation: Vec::new(),
            backend: self.backend,
            dtype: FloatType::of(self.dtype),
            engine: self.engine,
            warnings,
            search: None,
        }
    }
}
