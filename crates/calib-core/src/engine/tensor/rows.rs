//! The per-row quantities of one chunk, as tensors: probabilities, top-label pairs, `log p_y`,
//! the Brier sum, and each request's (score, outcome) pairs and bin indices.

use burn::tensor::{DType, Int, Tensor, TensorData};

use super::super::plan::Plan;
use crate::binning::f32_below;
use crate::error::{CalibError, Result};
use crate::input::ScoreKind;
use crate::metrics::ScoreSet;

/// The per-row quantities of one chunk.
pub(super) struct Rows {
    /// `[n, 1]` top-label score (binary: the positive-class score).
    pub(super) conf: Tensor<2>,
    /// `[n, 1]` top-label outcome (binary: the label).
    pub(super) correct: Tensor<2>,
    /// `[n, 1]` whether the prediction is right (binary: `s > 0.5` agrees with the label).
    pub(super) accurate: Tensor<2>,
    /// `[n, 1]` predicted class.
    pub(super) pred: Tensor<2, Int>,
    /// `[n, K]` probabilities and one-hot labels, when needed (not for binary input).
    pub(super) probs: Option<(Tensor<2>, Tensor<2>)>,
    /// `[n, 1]` `log p[i, y]`.
    pub(super) log_py: Tensor<2>,
    /// `[1]` sum of the Brier score over the chunk.
    pub(super) brier: Option<Tensor<1>>,
    /// `[n, 1]` `r = sum_{j != argmax} exp(z_j - max z)` (logits only): `conf = 1 / (1 + r)`
    /// with full relative precision in `1 - conf`, which f32 loses as conf nears 1.
    pub(super) rest: Option<Tensor<2>>,
}

/// Index of the first maximum of each row, `[n, 1]`: exact ties resolve to the lowest class
/// (docs/conventions.md) whatever the backend's argmax does with ties.
pub(crate) fn first_argmax(values: Tensor<2>, max: Tensor<2>, dtype: DType) -> Tensor<2, Int> {
    let [n, k] = values.dims();
    let device = values.device();
    let rank: Vec<f64> = (0..k).map(|j| (k - j) as f64).collect();
    let rank = Tensor::<1>::from_data(TensorData::new(rank, [k]), (&device, dtype)).reshape([1, k]);
    let is_max = values.equal(max.expand([n, k])).float().cast(dtype);
    (is_max * rank.expand([n, k])).argmax(1)
}

pub(super) fn rows(
    values: Tensor<2>,
    labels: Tensor<1, Int>,
    kind: ScoreKind,
    plan: &Plan,
    dtype: DType,
) -> Rows {
    let [n, k] = values.dims();
    let v = values.cast(dtype);
    let y = labels.reshape([n, 1]);
    if kind == ScoreKind::Binary {
        let yf = y.clone().float().cast(dtype);
        let pred = v.clone().greater_elem(0.5).int();
        let positive = y.clone().equal_elem(1);
        let log_py =
            v.clone().log().mask_where(positive.bool_not(), v.clone().neg().add_scalar(1.0).log());
        let brier = plan.scalars.then(|| (v.clone() - yf.clone()).square().sum());
        let accurate = pred.clone().equal(y.clone()).float().cast(dtype);
        return Rows {
            conf: v,
            correct: yf,
            accurate,
            pred,
            probs: None,
            log_py,
            brier,
            rest: None,
        };
    }
    let max = v.clone().max_dim(1);
    let pred = first_argmax(v.clone(), max.clone(), dtype);
    let correct = pred.clone().equal(y.clone()).float().cast(dtype);
    let (conf, probs, log_py, rest) = match kind {
        ScoreKind::Logits => {
            let z = v - max.expand([n, k]);
            let e = z.clone().exp();
            // The argmax column as a mask (scatter of ones at `pred`; no arange over N).
            let top = Tensor::<2, Int>::zeros([n, k], &e.device()).scatter(
                1,
                pred.clone(),
                Tensor::ones([n, 1], &e.device()),
                burn::tensor::IndexingUpdateOp::Add,
            );
            let rest = e.clone().mask_fill(top.equal_elem(1), 0.0).sum_dim(1);
            let se = rest.clone().add_scalar(1.0);
            let log_py = z.gather(1, y.clone()) - se.clone().log();
            let probs = plan.needs_probabilities().then(|| e / se.clone().expand([n, k]));
            (se.recip(), probs, log_py, Some(rest))
        }
        _ => {
            let log_py = v.clone().gather(1, y.clone()).log();
            (max, Some(v), log_py, None)
        }
    };
    let probs = probs.map(|p| {
        let onehot = y.reshape([n]).one_hot::<2>(k).float().cast(dtype);
        (p, onehot)
    });
    let brier = match (&probs, plan.scalars) {
        (Some((p, _)), true) => {
            let py = log_py.clone().exp();
            Some((p.clone().square().sum() - py.sum().mul_scalar(2.0)).add_scalar(n as f64))
        }
        _ => None,
    };
    Rows { conf, accurate: correct.clone(), correct, pred, probs, log_py, brier, rest }
}

/// The `(S, O)` pairs `[n, C]` of a request (binary input: the positive-class column).
pub(super) fn pairs(
    rows: &Rows,
    kind: ScoreKind,
    scores: ScoreSet,
) -> Result<(Tensor<2>, Tensor<2>)> {
    match (kind, scores) {
        (ScoreKind::Binary, _) | (_, ScoreSet::TopLabel) => {
            Ok((rows.conf.clone(), rows.correct.clone()))
        }
        (_, ScoreSet::AllClasses) => rows
            .probs
            .clone()
            .ok_or_else(|| CalibError::Backend("probabilities were not computed".into())),
    }
}

/// Right-closed bin index of every score, `[n, C]`. In f32 the edges are rounded down
/// ([`f32_below`]), so f32 scores take the bins the f64 edges give them.
pub(super) fn bin_index(s: Tensor<2>, edges: &[f64], dtype: DType) -> Tensor<2, Int> {
    let [n, c] = s.dims();
    let interior = &edges[1..edges.len() - 1];
    if interior.is_empty() {
        return Tensor::<2, Int>::zeros([n, c], &s.device());
    }
    let m = interior.len();
    let interior: Vec<f64> = match dtype {
        DType::F32 => interior.iter().map(|&e| f64::from(f32_below(e))).collect(),
        _ => interior.to_vec(),
    };
    let e = Tensor::<1>::from_data(TensorData::new(interior, [m]), (&s.device(), dtype));
    let e = e.reshape([1, 1, m]).expand([n, c, m]);
    let above = s.unsqueeze_dim::<3>(2).expand([n, c, m]).greater(e);
    above.int().sum_dim(2).reshape([n, c])
}
