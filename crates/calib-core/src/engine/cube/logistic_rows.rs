//! [`LogisticRows`]: the binary problems of rows that live on a GPU (each class one-vs-rest,
//! or binary input's one) as logistic regressions on two features of their scores, the
//! logistic maps' fits (Platt, affine and quadratic on the logit): each evaluation sums every
//! problem's loss, gradient and Hessian on the device ([`super::logistic_kernels`]), one read
//! of the scores and one synchronisation, `C (FIELDS - 1)` f32 sums and `C` integer counts
//! back. The solver stays on the host: it sees three parameters a problem.

use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor, Transaction};

use super::logistic_kernels::FIELDS;
use super::logistic_ops::LogisticKernels;
use super::map_ops::LogisticFeatures;
use super::rows::{device_rows, row_pass};
use super::sorted_pairs::DevicePairs;
use super::words::f32_tensor;
use crate::engine::read_back;
use crate::error::{CalibError, Result};
use crate::host::read_f64;
use crate::input::{Predictions, ScoreKind};

/// Rows a thread sums, at least.
const BLOCK_ROWS: usize = 256;
/// Most blocks of rows (the partial sums summed on the device).
const MAX_BLOCKS: usize = 1024;

/// The features of every problem's logistic regression: `u = (1, u_1, u_2)` of the score `s`
/// clipped to `clip`, as [`super::MapTable::Logistic`] reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogisticSpec {
    /// What `u_1, u_2` are.
    pub features: LogisticFeatures,
    /// The score's clip `(lo, hi)`.
    pub clip: (f64, f64),
    /// The floor of `s` and `1 - s` before their logarithms.
    pub floor: f64,
}

/// One problem's sums at its parameters, over its rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogisticSums {
    /// `sum_i softplus(v_i) - t_i v_i`.
    pub loss: f64,
    /// `sum_i (p_i - t_i) u_i`.
    pub gradient: [f64; 3],
    /// `sum_i p_i (1 - p_i) u_i u_i'`.
    pub hessian: [[f64; 3]; 3],
    /// Rows whose outcome is positive.
    pub positives: usize,
}

/// Rows on a GPU with their problems' features (module docs).
#[derive(Debug, Clone)]
pub struct LogisticRows {
    values: Tensor<2>,
    rows: Tensor<2>,
    labels: Tensor<1, Int>,
    spec: Tensor<1>,
    logits: bool,
}

impl LogisticRows {
    /// The problems of `preds` ([`DevicePairs::takes`] must hold) with features `spec`.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for rows the device does not take.
    pub fn new(preds: &Predictions, spec: LogisticSpec) -> Result<Self> {
        if !DevicePairs::takes(preds) {
            return Err(CalibError::InvalidConfig(
                "the device logistic fit needs unweighted rows on a GPU".into(),
            ));
        }
        let logits = preds.kind() == ScoreKind::Logits;
        let (values, labels) = device_rows(preds, (0, preds.n_samples()));
        let rows = match logits {
            true => row_pass(values.clone(), labels.clone(), true).0,
            false => values.clone(),
        };
        let (lo, hi) = (spec.clip.0 as f32, spec.clip.1 as f32);
        let table = vec![spec.features.code(), lo, hi, spec.floor as f32];
        let spec = f32_tensor(table, &values.device());
        Ok(Self { values, rows, labels, spec, logits })
    }

    /// Problems: the columns (one for binary input).
    pub fn n_problems(&self) -> usize {
        self.values.dims()[1]
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.values.dims()[0]
    }

    /// Every problem's [`LogisticSums`] at its parameters `params[c]` (`[c_0, c_1, c_2]`)
    /// with the targets `targets[c]` (`[positive, negative]`: 1 and 0, or Platt's).
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for one set of parameters or targets per problem
    /// missing; [`CalibError::Backend`] when the read-back fails.
    pub fn sums(&self, params: &[[f64; 3]], targets: &[[f64; 2]]) -> Result<Vec<LogisticSums>> {
        let c = self.n_problems();
        if params.len() != c || targets.len() != c {
            return Err(CalibError::InvalidConfig("one set of parameters per problem".into()));
        }
        let device = self.values.device();
        let flat = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let params = f32_tensor(flat(params.as_flattened()), &device);
        let targets = f32_tensor(flat(targets.as_flattened()), &device);
        let n = self.n_rows();
        let block_rows = BLOCK_ROWS.max(n.div_ceil(MAX_BLOCKS));
        let out = <Dispatch as LogisticKernels>::calib_logistic_sums(
            self.values.clone().into_dispatch(),
            self.rows.clone().into_dispatch(),
            self.labels.clone().into_dispatch(),
            self.spec.clone().into_dispatch(),
            params.into_dispatch(),
            targets.into_dispatch(),
            block_rows,
            self.logits,
        );
        let out: Tensor<3> = Tensor::from_dispatch(out);
        let blocks = out.dims()[0];
        let sums = out.clone().slice([0..blocks, 0..c, 0..FIELDS - 1]).sum_dim(0);
        let counts = out.slice([0..blocks, 0..c, FIELDS - 1..FIELDS]).int().sum_dim(0);
        let tx = Transaction::default().register(sums).register(counts);
        let mut data = read_back(tx)?.into_iter();
        let missing = || CalibError::Backend("the device returned no logistic sums".into());
        let sums = read_f64(data.next().ok_or_else(missing)?)?;
        let counts = data.next().ok_or_else(missing)?.convert::<i64>();
        let counts =
            counts.try_to_vec::<i64>().map_err(|e| CalibError::Backend(format!("{e:?}")))?;
        Ok((0..c).map(|p| problem_sums(&sums[p * (FIELDS - 1)..], counts[p])).collect())
    }
}

/// A problem's sums from its `FIELDS - 1` f32 sums (module [`super::logistic_kernels`]'s
/// order) and its positives.
fn problem_sums(s: &[f64], positives: i64) -> LogisticSums {
    let h = [[s[4], s[5], s[6]], [s[5], s[7], s[8]], [s[6], s[8], s[9]]];
    let gradient = [s[1], s[2], s[3]];
    LogisticSums { loss: s[0], gradient, hessian: h, positives: positives.max(0) as usize }
}
