//! The tensor-op engine: bin statistics by scatter-add on the input's device.
//!
//! Per row chunk: stable probabilities (max-subtracted softmax; top-label confidence as
//! `1 / sum_k exp(z_k - max z)` without the `[N, K]` matrix when nothing else needs it), the
//! (score, outcome) pairs of each request, their right-closed bin index by comparison with the
//! edges, and one scatter-add of `[1, s, o]` into a `[G B + 1, 3 C]` tensor (the last row takes
//! pairs dropped by a threshold). One transaction per chunk reads everything back; chunks are
//! merged in f64 on the host.
//!
//! # Note
//! Adaptive ranges need the stable order of every score of a class, so their pairs are read
//! back and ranked on the host ([`crate::binning::adaptive_stats`]): burn 0.22's sorts are
//! unstable on flex and run on the host on wgpu anyway.

use burn::tensor::{DType, Device, Int, Tensor, TensorData, Transaction};

use super::plan::{Outcome, Plan};
use crate::backend::Precision;
use crate::binning::{Binning, RankedPair, adaptive_stats};
use crate::error::{CalibError, Result};
use crate::host::read_f64;
use crate::input::{Predictions, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;

/// Largest `rows x columns x bins` intermediate of one chunk (elements).
const CHUNK_ELEMENTS: usize = 1 << 24;

/// Rows per chunk for `n_columns` columns and at most `n_bins` bins.
pub(crate) fn chunk_rows(n_samples: usize, n_columns: usize, n_bins: usize) -> usize {
    let per_row = n_columns.max(1) * n_bins.max(4);
    (CHUNK_ELEMENTS / per_row).clamp(1, n_samples.max(1))
}

/// The per-row quantities of one chunk.
struct Rows {
    /// `[n, 1]` top-label score (binary: the positive-class score).
    conf: Tensor<2>,
    /// `[n, 1]` top-label outcome (binary: the label).
    correct: Tensor<2>,
    /// `[n, 1]` predicted class.
    pred: Tensor<2, Int>,
    /// `[n, K]` probabilities and one-hot labels, when needed (not for binary input).
    probs: Option<(Tensor<2>, Tensor<2>)>,
    /// `[n, 1]` `log p[i, y]`.
    log_py: Tensor<2>,
    /// `[1]` sum of the Brier score over the chunk.
    brier: Option<Tensor<1>>,
    /// `[n, 1]` `r = sum_{j != argmax} exp(z_j - max z)` (logits only): `conf = 1 / (1 + r)`
    /// with full relative precision in `1 - conf`, which f32 loses as conf nears 1.
    rest: Option<Tensor<2>>,
}

/// Index of the first maximum of each row, `[n, 1]`: exact ties resolve to the lowest class
/// (docs/conventions.md) whatever the backend's argmax does with ties.
fn first_argmax(values: Tensor<2>, max: Tensor<2>, dtype: DType) -> Tensor<2, Int> {
    let [n, k] = values.dims();
    let device = values.device();
    let rank: Vec<f64> = (0..k).map(|j| (k - j) as f64).collect();
    let rank = Tensor::<1>::from_data(TensorData::new(rank, [k]), (&device, dtype)).reshape([1, k]);
    let is_max = values.equal(max.expand([n, k])).float().cast(dtype);
    (is_max * rank.expand([n, k])).argmax(1)
}

fn rows(
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
        let positive = y.equal_elem(1);
        let log_py =
            v.clone().log().mask_where(positive.bool_not(), v.clone().neg().add_scalar(1.0).log());
        let brier = plan.scalars.then(|| (v.clone() - yf.clone()).square().sum());
        return Rows { conf: v, correct: yf, pred, probs: None, log_py, brier, rest: None };
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
    Rows { conf, correct, pred, probs, log_py, brier, rest }
}

/// The `(S, O)` pairs `[n, C]` of a request (binary input: the positive-class column).
fn pairs(rows: &Rows, kind: ScoreKind, scores: ScoreSet) -> Result<(Tensor<2>, Tensor<2>)> {
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

/// Right-closed bin index of every score, `[n, C]`.
fn bin_index(s: Tensor<2>, edges: &[f64], dtype: DType) -> Tensor<2, Int> {
    let [n, c] = s.dims();
    let interior = &edges[1..edges.len() - 1];
    if interior.is_empty() {
        return Tensor::<2, Int>::zeros([n, c], &s.device());
    }
    let m = interior.len();
    let e = Tensor::<1>::from_data(TensorData::new(interior.to_vec(), [m]), (&s.device(), dtype));
    let e = e.reshape([1, 1, m]).expand([n, c, m]);
    let above = s.unsqueeze_dim::<3>(2).expand([n, c, m]).greater(e);
    above.int().sum_dim(2).reshape([n, c])
}

/// What was registered in the chunk's transaction, in order.
enum Pending {
    Static { request: usize, groups: usize, columns: usize },
    Adaptive { request: usize, with_rest: bool },
    Scalars { clipped: bool, brier: bool },
}

/// Runs `plan` with tensor ops on the predictions' device.
pub(crate) fn run_tensor(
    preds: &Predictions,
    plan: &Plan,
    precision: Precision,
) -> Result<Outcome> {
    let device: &Device = preds.device();
    let dtype = precision.dtype(device);
    let kind = preds.kind();
    let n_samples = preds.n_samples();
    let k = preds.n_classes();
    let binary = kind == ScoreKind::Binary;
    let max_bins = plan.requests.iter().map(|r| r.binning.n_bins()).max().unwrap_or(1);
    let step = chunk_rows(n_samples, preds.n_columns(), max_bins);

    let mut stats: Vec<BinStats> = plan.requests.iter().map(|r| r.zeros(k, binary)).collect();
    // Adaptive pairs per request and group, in sample order.
    let mut adaptive: Vec<Vec<Vec<RankedPair>>> =
        stats.iter().map(|s| vec![Vec::new(); s.n_groups]).collect();
    let (mut nll_sum, mut nll_clipped_sum, mut brier_sum, mut correct) = (0.0, 0.0, 0.0, 0.0);

    let mut start = 0;
    while start < n_samples {
        let len = step.min(n_samples - start);
        let (values, labels) = preds.chunk(start, len, dtype);
        let rows = rows(values, labels, kind, plan, dtype);
        let mut tx = Transaction::default();
        let mut pending = Vec::new();
        for (ri, r) in plan.requests.iter().enumerate() {
            let (s, o) = pairs(&rows, kind, r.scores)?;
            let columns = s.dims()[1];
            match &r.binning {
                Binning::Adaptive { .. } => {
                    tx = tx.register(s).register(o);
                    if !binary {
                        tx = tx.register(rows.pred.clone());
                    }
                    let with_rest = rows.rest.is_some();
                    if let Some(rest) = rows.rest.clone() {
                        tx = tx.register(rest);
                    }
                    pending.push(Pending::Adaptive { request: ri, with_rest });
                }
                binning => {
                    let edges = binning.edges().expect("static binning has edges");
                    let b = edges.len() - 1;
                    let groups = if columns == 1 && r.grouped && !binary { k } else { 1 };
                    let mut idx = bin_index(s.clone(), &edges, dtype);
                    if groups > 1 {
                        idx = idx + rows.pred.clone().mul_scalar(b as i64);
                    }
                    if let Some(eps) = r.threshold {
                        idx = idx.mask_fill(s.clone().lower_equal_elem(eps), (groups * b) as i64);
                    }
                    let ones = Tensor::<2>::ones([len, columns], (device, dtype));
                    let values = Tensor::cat(vec![ones, s, o], 1);
                    let indices = Tensor::cat(vec![idx.clone(), idx.clone(), idx], 1);
                    let acc = Tensor::<2>::zeros([groups * b + 1, 3 * columns], (device, dtype));
                    let acc = acc.scatter(0, indices, values, burn::tensor::IndexingUpdateOp::Add);
                    tx = tx.register(acc);
                    pending.push(Pending::Static { request: ri, groups, columns });
                }
            }
        }
        if plan.scalars {
            tx = tx.register(rows.log_py.clone().sum()).register(rows.correct.clone().sum());
            let clipped = plan.nll_eps.is_some();
            if let Some(eps) = plan.nll_eps {
                tx = tx.register(rows.log_py.clone().clamp_min(eps.ln()).sum());
            }
            let brier = rows.brier.is_some();
            if let Some(b) = rows.brier.clone() {
                tx = tx.register(b);
            }
            pending.push(Pending::Scalars { clipped, brier });
        }
        let data = tx.try_execute().map_err(|e| CalibError::Backend(e.to_string()))?;
        let mut data = data.into_iter();
        let mut next = || -> Result<Vec<f64>> {
            read_f64(data.next().ok_or_else(|| CalibError::Backend("missing read-back".into()))?)
        };
        for p in pending {
            match p {
                Pending::Static { request, groups, columns } => {
                    let acc = next()?;
                    let st = &mut stats[request];
                    let b = st.n_bins();
                    let mut chunk = BinStats::zeros(st.layout.clone(), st.n_groups);
                    for row in 0..groups * b {
                        for c in 0..columns {
                            let at = row * 3 * columns;
                            let i = if columns > 1 { c * b + row } else { row };
                            chunk.count[i] += acc[at + c];
                            chunk.sum_score[i] += acc[at + columns + c];
                            chunk.sum_outcome[i] += acc[at + 2 * columns + c];
                        }
                    }
                    st.accumulate(&chunk);
                }
                Pending::Adaptive { request, with_rest } => {
                    let mut s = next()?;
                    let o = next()?;
                    let pred = if binary { vec![0.0; len] } else { next()? };
                    let columns = s.len() / len;
                    if with_rest {
                        // The top-label score from r in f64 (see `Rows::rest`).
                        let rest = next()?;
                        for i in 0..len {
                            let c = if columns > 1 { pred[i] as usize } else { 0 };
                            s[i * columns + c] = 1.0 / (1.0 + rest[i]);
                        }
                    }
                    let r = &plan.requests[request];
                    let groups = &mut adaptive[request];
                    for i in 0..len {
                        for c in 0..columns {
                            let (si, oi) = (s[i * columns + c], o[i * columns + c]);
                            if r.threshold.is_some_and(|eps| si <= eps) {
                                continue;
                            }
                            let g = match (columns > 1, r.grouped && !binary) {
                                (_, false) => 0,
                                (true, true) => c,
                                (false, true) => pred[i] as usize,
                            };
                            let position = (i + start) * columns + c;
                            groups[g].push(RankedPair::new(si, position as u64, oi > 0.5));
                        }
                    }
                }
                Pending::Scalars { clipped, brier } => {
                    nll_sum -= next()?[0];
                    correct += next()?[0];
                    if clipped {
                        nll_clipped_sum -= next()?[0];
                    }
                    if brier {
                        brier_sum += next()?[0];
                    }
                }
            }
        }
        start += len;
    }
    for (ri, r) in plan.requests.iter().enumerate() {
        if let Binning::Adaptive { n_ranges } = r.binning {
            stats[ri] = adaptive_stats(std::mem::take(&mut adaptive[ri]), n_ranges);
        }
    }
    Ok(Outcome { stats, nll_sum, nll_clipped_sum, brier_sum, correct })
}
