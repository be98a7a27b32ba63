//! [`FitRecord`]: what a fit did, so an unconverged fit is never mistaken for a good one.

use calib_core::BackendKind;
use serde::{Deserialize, Serialize};

/// Why a fit stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
    /// The map separates the calibration labels: the NLL fell below 1e-5 on its way to 0 and
    /// the parameters have no finite optimum (not converged).
    Separable,
    /// An unpenalised Newton-type fit whose parameters keep growing while its gradient
    /// shrinks slowly: no finite optimum (more parameters than the data pin down, or classes
    /// the map can separate); not converged.
    Unbounded,
}

/// The algorithm that ran a fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Solver {
    /// Temperature scaling's one-dimensional safeguarded Newton solver.
    #[serde(rename = "newton")]
    Newton,
    /// Newton-CG on Hessian-vector products (matrix scaling, Dirichlet calibration).
    #[serde(rename = "newton-cg")]
    NewtonCg,
    /// L-BFGS with a strong-Wolfe line search.
    #[serde(rename = "lbfgs")]
    Lbfgs,
    /// Mini-batch Adam.
    #[serde(rename = "adam")]
    Adam,
    /// A closed-form fit (sorting, pooling, binning): no iterations.
    #[serde(rename = "direct")]
    Direct,
    /// A 1-D search (grid, then golden section).
    #[serde(rename = "search")]
    Search,
}

/// Where a fit's objective was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FitEngine {
    /// burn autodiff on the device (the reference path).
    #[default]
    Autodiff,
    /// A fused f64 pass over host rows.
    Host,
    /// calib's CubeCL kernels on the device (f32 passes, f64 solver on the host).
    Kernels,
    /// Objective, gradient and Hessian-diagonal passes written as burn tensor ops on the device
    /// (no autodiff graph; only parameters and sums cross), the solver on the host in f64.
    Device,
}

/// The float type a fit computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FloatType {
    /// 32-bit floats.
    F32,
    /// 64-bit floats.
    F64,
}

impl FloatType {
    /// The float type of `dtype` (anything narrower than f64 counts as f32).
    pub(crate) fn of(dtype: burn::tensor::DType) -> Self {
        if dtype == burn::tensor::DType::F64 { Self::F64 } else { Self::F32 }
    }
}

macro_rules! display_as_serde_name {
    ($($ty:ty),*) => {$(
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match serde_json::to_value(self) {
                    Ok(serde_json::Value::String(name)) => f.write_str(&name),
                    _ => write!(f, "{self:?}"),
                }
            }
        }
    )*};
}

display_as_serde_name!(StopReason, Solver, FitEngine, FloatType);

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
#[non_exhaustive]
pub struct FitRecord {
    /// The algorithm that ran.
    pub optimizer: Solver,
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
    /// Backend the fit ran on.
    pub backend: BackendKind,
    /// Float type of the fit.
    pub dtype: FloatType,
    /// Where the objective was computed: burn autodiff on `backend`, or a fused f64 pass over
    /// host rows (the temperature Newton solver, and the affine maps on CPU; see
    /// [`crate::FitConfig::engine`]).
    #[serde(default)]
    pub engine: FitEngine,
    /// Cross-validation scores of the regularisation grid, when one was searched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cross_validation: Vec<CvScore>,
    /// Notes worth a user's attention (e.g. the temperature hit a bound on separable data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The metric search of [`crate::EceTemperatureConfig`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<MetricSearch>,
}

impl FitRecord {
    /// The record of a host fit in f64 without an optimiser's state (a closed form, a search,
    /// a few Newton steps of its own): `iterations` counts its passes; `converged` says whether
    /// it solved its problem (else it stopped making progress).
    pub(crate) fn host(
        solver: Solver,
        iterations: usize,
        (final_loss, final_nll): (f64, f64),
        converged: bool,
        (n_samples, n_classes): (usize, usize),
        device: &burn::tensor::Device,
        start: std::time::Instant,
    ) -> Self {
        Self {
            optimizer: solver,
            iterations,
            evaluations: iterations,
            hessian_products: 0,
            final_loss,
            final_nll,
            grad_norm: 0.0,
            wall_time_s: start.elapsed().as_secs_f64(),
            converged,
            stop_reason: if converged { StopReason::Solved } else { StopReason::NoProgress },
            n_samples,
            n_classes,
            backend: BackendKind::of(device),
            dtype: FloatType::F64,
            engine: FitEngine::Host,
            cross_validation: Vec::new(),
            warnings: Vec::new(),
            search: None,
        }
    }
}

/// One grid point of a cross-validated regularisation search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CvScore {
    /// Off-diagonal strength.
    pub lambda: f64,
    /// Intercept strength.
    pub mu: f64,
    /// Mean held-out NLL over all folds (weighted by fold size).
    pub held_out_nll: f64,
}

/// What the metric search found, beside the NLL-optimal temperature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MetricSearch {
    /// The metric minimised.
    pub metric: String,
    /// `T*`.
    pub temperature: f64,
    /// The metric at `T*`.
    pub value: f64,
    /// The NLL-optimal temperature.
    pub nll_temperature: f64,
    /// The metric at the NLL-optimal temperature.
    pub nll_value: f64,
}
