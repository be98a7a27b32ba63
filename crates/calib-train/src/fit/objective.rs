//! The objective every calibrator minimises: mean NLL of the calibrated logits plus the
//! method's regularisation.

use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::activation::log_softmax;
use burn::tensor::{DType, Tensor};

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
/// With sample weights: `nll = (1/W) sum_i w_i nll_i`, `W = sum_i w_i`.
pub(crate) fn objective<M: CalibrationMap>(map: &M, data: &FitData) -> (Tensor<1>, Tensor<1>) {
    let terms = objective_terms(map, data);
    (terms.objective, terms.nll)
}

/// The pieces of the objective: per-row NLL `[N]`, its mean, the penalty and their sum.
struct ObjectiveTerms {
    rows: Tensor<1>,
    nll: Tensor<1>,
    penalty: Option<Tensor<1>>,
    objective: Tensor<1>,
}

fn objective_terms<M: CalibrationMap>(map: &M, data: &FitData) -> ObjectiveTerms {
    let logp = log_softmax(map.forward_features(data.features.clone()), 1);
    let rows = match &data.targets {
        None => logp.gather(1, data.labels.clone()).neg(),
        Some(t) => (logp * t.clone()).sum_dim(1).neg(),
    };
    let rows = rows.reshape([data.n_samples]);
    let nll = match (&data.row_weights, &data.weights) {
        (Some(w), Some(host)) => {
            let total: f64 = host.iter().sum();
            (rows.clone() * w.clone()).sum().div_scalar(total)
        }
        _ => rows.clone().mean(),
    };
    let penalty = map.penalty();
    let objective = match &penalty {
        Some(p) => nll.clone() + p.clone(),
        None => nll.clone(),
    };
    ObjectiveTerms { rows, nll, penalty, objective }
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
    ///
    /// In f32 the reported loss is the f64 sum of the per-row NLL values, read back with the
    /// rest: an f32 reduction over N rows carries a relative error of ~`sqrt(N)·6e-8`, as large
    /// as the decrease the line search must see near the optimum, which made f32 fits stop
    /// early (relative NLL gap ~3e-5 on a 5,000-row CIFAR-10 split).
    pub fn of<M: CalibrationMap>(map: &M, data: &FitData) -> Result<Self> {
        let terms = objective_terms(map, data);
        let objective = terms.objective;
        let nll = terms.nll;
        let grads = GradientsParams::from_grads(objective.backward(), map);
        let grads = flat_grads(map, &grads);
        let params = flat_params(map);
        let gmax = if grads.is_empty() {
            Tensor::<1>::zeros([1], &objective.device())
        } else {
            Tensor::cat(grads.iter().map(|(_, g)| g.clone()).collect(), 0).abs().max()
        };
        let p = Tensor::cat(params.into_iter().map(|(_, t)| t.detach()).collect(), 0);
        let precise = terms.rows.dtype() == DType::F64;
        let device = objective.device();
        let mut reads = vec![objective.detach(), nll.detach(), gmax, p];
        if !precise {
            reads.push(terms.rows.detach());
            reads.push(match terms.penalty {
                Some(p) => p.detach(),
                None => Tensor::<1>::zeros([1], &device),
            });
        }
        let read = read_all(reads)?;
        let (loss, nll) = if precise {
            (read[0][0], read[1][0])
        } else {
            let nll = match &data.weights {
                Some(w) => {
                    let sum: f64 = read[4].iter().zip(w.iter()).map(|(l, w)| l * w).sum();
                    sum / w.iter().sum::<f64>()
                }
                None => read[4].iter().sum::<f64>() / read[4].len() as f64,
            };
            (nll + read[5][0], nll)
        };
        Ok(Self { loss, nll, grad_norm: read[2][0], params: read[3].clone(), grads })
    }

    /// Host copy of parameters (as from [`flat_params`]), concatenated.
    pub fn params_of(params: Vec<(ParamId, Tensor<1>)>) -> Result<Vec<f64>> {
        let p = Tensor::cat(params.into_iter().map(|(_, t)| t.detach()).collect(), 0);
        Ok(read_all(vec![p])?.remove(0))
    }

    /// Objective, NLL and gradient norm.
    pub fn point(&self) -> super::point::Point {
        super::point::Point { loss: self.loss, nll: self.nll, grad_norm: self.grad_norm }
    }

    /// Whether loss and gradient are finite.
    pub fn is_finite(&self) -> bool {
        self.loss.is_finite() && self.grad_norm.is_finite()
    }
}
