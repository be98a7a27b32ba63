//! [`FitRecord`]: what a fit did, so an unconverged fit is never mistaken for a good one.

use serde::{Deserialize, Serialize};

/// Why a fit stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The gradient max-norm fell below `tolerance_grad`.
    Gradient,
    /// One iteration changed the loss by less than `tolerance_change` (relative).
    LossChange,
    /// The optimiser could not find a descent step (line search exhausted) at a point whose
    /// gradient is still above tolerance.
    NoProgress,
    /// `max_iter` (or Adam's epochs) ran out.
    IterationCap,
    /// A closed-form or one-dimensional solver finished (Newton on the temperature).
    Solved,
}

impl StopReason {
    /// Why a fit stopped when one iteration barely changed the loss: convergence
    /// ([`Self::LossChange`]) when the gradient max-norm is also small (`tolerance_grad`, or
    /// 1e-4 when that is tighter), else [`Self::NoProgress`]: a standstill far from a
    /// stationary point is not convergence.
    pub(crate) fn at_standstill(grad_norm: f64, tolerance_grad: f64) -> Self {
        if grad_norm <= tolerance_grad.max(1e-4) { Self::LossChange } else { Self::NoProgress }
    }
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

/// The record of one fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitRecord {
    /// Optimiser used (`lbfgs`, `newton-cg`, `adam`, `newton` (temperature's 1-D solver)).
    pub optimizer: String,
    /// Iterations (L-BFGS/Newton) or epochs (Adam).
    pub iterations: usize,
    /// Objective evaluations (loss and gradient), line-search trials included.
    pub evaluations: usize,
    /// Hessian-vector products (Newton-CG), 0 for first-order methods.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hessian_products: usize,
    /// Final objective: mean NLL plus any regularisation.
    pub final_loss: f64,
    /// Final mean NLL alone.
    pub final_nll: f64,
    /// Max-norm of the gradient of the objective at the returned parameters.
    pub grad_norm: f64,
    /// Wall time of the fit in seconds.
    pub wall_time_s: f64,
    /// Whether a stopping tolerance was met.
    pub converged: bool,
    /// Why the fit stopped.
    pub stop_reason: StopReason,
    /// Samples the fit saw.
    pub n_samples: usize,
    /// Classes K of the data (2 for binary).
    pub n_classes: usize,
    /// Backend the fit ran on (`flex`, `ndarray`, `gpu`).
    pub backend: String,
    /// Float type of the fit (`f32`, `f64`).
    pub dtype: String,
    /// Where the objective was computed: `autodiff` (burn autodiff on `backend`) or `host`
    /// (a fused f64 pass over host rows: the temperature Newton solver, and the affine maps on
    /// CPU; see [`crate::FitConfig::engine`]).
    #[serde(default)]
    pub engine: String,
    /// Cross-validation scores of the regularisation grid, when one was searched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cross_validation: Vec<CvScore>,
    /// Notes worth a user's attention (e.g. the temperature hit a bound on separable data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One grid point of a cross-validated regularisation search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CvScore {
    /// Off-diagonal strength.
    pub lambda: f64,
    /// Intercept strength.
    pub mu: f64,
    /// Mean held-out NLL over all folds (weighted by fold size).
    pub held_out_nll: f64,
}
