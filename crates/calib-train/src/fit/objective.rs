//! The objective every calibrator minimises: mean NLL of the calibrated logits plus the
//! method's regularisation.

use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use burn::tensor::activation::log_softmax;

use super::data::FitData;
use super::map::CalibrationMap;
use super::params::{flat_grads, flat_params, read_all};
use crate::error::Result;

/// Objective `[1]` and mean NLL `[1]` of `map` on `data` (differentiable).
///
/// ```text
/// nll = -(1/N) sum_i log_softmax(map(x_i))[y_i]        (exact, no clipping)
///     (or -(1/N) sum_i sum_k t_ik log_softmax(map(x_i))_k with soft targets t)
/// objective = nll + penalty(map)
/// ```
pub(crate) fn objective<M: CalibrationMap>(map: &M, data: &FitData) -> (Tensor<1>, Tensor<1>) {
    let logp = log_softmax(map.map(data.features.clone()), 1);
    let nll = match &data.targets {
        None => logp.gather(1, data.labels.clone()).mean().neg(),
        Some(t) => (logp * t.clone()).sum_dim(1).mean().neg(),
    };
    let objective = match map.penalty() {
        Some(p) => nll.clone() + p,
        None => nll.clone(),
    };
    (objective, nll)
}

/// One evaluation of the objective and its gradient, read back once.
pub(crate) struct Evaluation {
    /// Objective value.
    pub loss: f64,
    /// Mean NLL alone.
    pub nll: f64,
    /// Max-norm of the gradient.
    pub grad_norm: f64,
    /// The parameters evaluated at (host copy, visit order).
    pub params: Vec<f64>,
    /// Flattened gradient per parameter, on the device.
    pub grads: Vec<(ParamId, Tensor<1>)>,
}

impl Evaluation {
    /// Evaluates `map` on `data`: forward, backward, one transaction for every scalar.
    pub fn of<M: CalibrationMap>(map: &M, data: &FitData) -> Result<Self> {
        let (objective, nll) = objective(map, data);
        let grads = GradientsParams::from_grads(objective.backward(), map);
        let grads = flat_grads(map, &grads);
        let params = flat_params(map);
        let gmax = if grads.is_empty() {
            Tensor::<1>::zeros([1], &objective.device())
        } else {
            Tensor::cat(grads.iter().map(|(_, g)| g.clone()).collect(), 0).abs().max()
        };
        let p = Tensor::cat(params.into_iter().map(|(_, t)| t.detach()).collect(), 0);
        let read = read_all(vec![objective.detach(), nll.detach(), gmax, p])?;
        Ok(Self {
            loss: read[0][0],
            nll: read[1][0],
            grad_norm: read[2][0],
            params: read[3].clone(),
            grads,
        })
    }

    /// Host copy of parameters (as from [`flat_params`]), concatenated.
    pub fn params_of(params: Vec<(ParamId, Tensor<1>)>) -> Result<Vec<f64>> {
        let p = Tensor::cat(params.into_iter().map(|(_, t)| t.detach()).collect(), 0);
        Ok(read_all(vec![p])?.remove(0))
    }

    /// Whether loss and gradient are finite.
    pub fn is_finite(&self) -> bool {
        self.loss.is_finite() && self.grad_norm.is_finite()
    }
}
