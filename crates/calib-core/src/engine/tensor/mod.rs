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

mod rows;

pub(crate) use rows::first_argmax;

use burn::tensor::{DType, Device, Tensor, TensorData, Transaction};
use rows::{Rows, bin_index, pairs, rows};

use super::plan::{Outcome, Plan, StatRequest};
use crate::backend::Precision;
use crate::binning::{Binning, RankedPair, adaptive_stats, f32_below};
use crate::error::{CalibError, Result};
use crate::host::read_f64;
use crate::input::{Predictions, ScoreKind};
use crate::stats::BinStats;

/// Largest `rows x columns x bins` intermediate of one chunk (elements).
const CHUNK_ELEMENTS: usize = 1 << 24;

/// Rows per chunk for `n_columns` columns and at most `n_bins` bins.
pub(crate) fn chunk_rows(n_samples: usize, n_columns: usize, n_bins: usize) -> usize {
    let per_row = n_columns.max(1) * n_bins.max(4);
    (CHUNK_ELEMENTS / per_row).clamp(1, n_samples.max(1))
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
    let (kind, n_samples, k) = (preds.kind(), preds.n_samples(), preds.n_classes());
    let max_bins = plan.requests.iter().map(|r| r.binning.n_bins()).max().unwrap_or(1);
    let step = chunk_rows(n_samples, preds.n_columns(), max_bins);
    let mut totals = Totals::new(plan, k, kind == ScoreKind::Binary);
    let mut start = 0;
    while start < n_samples {
        let len = step.min(n_samples - start);
        let (values, labels) = preds.chunk(start, len, dtype);
        let chunk = Chunk { rows: rows(values, labels, kind, plan, dtype), kind, k, len, dtype };
        let (tx, pending) = chunk.register(plan, device)?;
        let data = crate::engine::read_back(tx)?;
        totals.read_back(data, pending, plan, start, len)?;
        start += len;
    }
    Ok(totals.finish(plan))
}

/// One chunk of rows and what describes them.
struct Chunk {
    rows: Rows,
    kind: ScoreKind,
    k: usize,
    len: usize,
    dtype: DType,
}

impl Chunk {
    /// Every request's reads (and the scalar sums) registered in one transaction, with what
    /// each read is.
    fn register(&self, plan: &Plan, device: &Device) -> Result<(Transaction, Vec<Pending>)> {
        let mut tx = Transaction::default();
        let mut pending = Vec::new();
        for (ri, r) in plan.requests.iter().enumerate() {
            let (s, o) = pairs(&self.rows, self.kind, r.scores)?;
            let (next, what) = match &r.binning {
                Binning::Adaptive { .. } => self.register_adaptive(tx, ri, s, o),
                binning => {
                    let edges = binning.edges().expect("static binning has edges");
                    self.register_static(tx, ri, r, &edges, (s, o), device)
                }
            };
            tx = next;
            pending.push(what);
        }
        if plan.scalars {
            tx = self.register_scalars(tx, plan, &mut pending);
        }
        Ok((tx, pending))
    }

    /// An adaptive request: its pairs, predicted classes and `rest` (for the f64 top-label
    /// score), read back to be ranked on the host.
    fn register_adaptive(
        &self,
        tx: Transaction,
        request: usize,
        s: Tensor<2>,
        o: Tensor<2>,
    ) -> (Transaction, Pending) {
        let mut tx = tx.register(s).register(o);
        if self.kind != ScoreKind::Binary {
            tx = tx.register(self.rows.pred.clone());
        }
        let with_rest = self.rows.rest.is_some();
        if let Some(rest) = self.rows.rest.clone() {
            tx = tx.register(rest);
        }
        (tx, Pending::Adaptive { request, with_rest })
    }

    /// A static request: one scatter-add of `[1, s, o]` into `[G B + 1, 3 C]` (the last row
    /// takes the pairs a threshold drops).
    fn register_static(
        &self,
        tx: Transaction,
        request: usize,
        r: &StatRequest,
        edges: &[f64],
        (s, o): (Tensor<2>, Tensor<2>),
        device: &Device,
    ) -> (Transaction, Pending) {
        let (len, dtype, columns, b) = (self.len, self.dtype, s.dims()[1], edges.len() - 1);
        let binary = self.kind == ScoreKind::Binary;
        let groups = if columns == 1 && r.grouped && !binary { self.k } else { 1 };
        let mut idx = bin_index(s.clone(), edges, dtype);
        if groups > 1 {
            idx = idx + self.rows.pred.clone().mul_scalar(b as i64);
        }
        if let Some(eps) = r.threshold {
            let eps = if dtype == DType::F32 { f64::from(f32_below(eps)) } else { eps };
            idx = idx.mask_fill(s.clone().lower_equal_elem(eps), (groups * b) as i64);
        }
        let ones = Tensor::<2>::ones([len, columns], (device, dtype));
        let values = Tensor::cat(vec![ones, s, o], 1);
        let indices = Tensor::cat(vec![idx.clone(), idx.clone(), idx], 1);
        let acc = Tensor::<2>::zeros([groups * b + 1, 3 * columns], (device, dtype));
        let acc = acc.scatter(0, indices, values, burn::tensor::IndexingUpdateOp::Add);
        (tx.register(acc), Pending::Static { request, groups, columns })
    }

    /// The NLL, accuracy and Brier sums of the chunk.
    fn register_scalars(
        &self,
        tx: Transaction,
        plan: &Plan,
        pending: &mut Vec<Pending>,
    ) -> Transaction {
        let rows = &self.rows;
        let mut tx = tx.register(rows.log_py.clone().sum()).register(rows.accurate.clone().sum());
        if let Some(eps) = plan.nll_eps {
            tx = tx.register(rows.log_py.clone().clamp_min(eps.ln()).sum());
        }
        if let Some(b) = rows.brier.clone() {
            tx = tx.register(b);
        }
        pending.push(Pending::Scalars {
            clipped: plan.nll_eps.is_some(),
            brier: rows.brier.is_some(),
        });
        tx
    }
}

/// What the chunks add up to.
struct Totals {
    binary: bool,
    stats: Vec<BinStats>,
    /// Adaptive pairs per request and group, in sample order.
    adaptive: Vec<Vec<Vec<RankedPair>>>,
    nll_sum: f64,
    nll_clipped_sum: f64,
    brier_sum: f64,
    correct: f64,
}

impl Totals {
    fn new(plan: &Plan, k: usize, binary: bool) -> Self {
        let stats: Vec<BinStats> = plan.requests.iter().map(|r| r.zeros(k, binary)).collect();
        let adaptive = stats.iter().map(|s| vec![Vec::new(); s.n_groups]).collect();
        let (nll_sum, nll_clipped_sum, brier_sum, correct) = (0.0, 0.0, 0.0, 0.0);
        Self { binary, stats, adaptive, nll_sum, nll_clipped_sum, brier_sum, correct }
    }

    /// Adds the read-back of the chunk of `len` rows from `start`, read in `pending`'s order.
    fn read_back(
        &mut self,
        data: Vec<TensorData>,
        pending: Vec<Pending>,
        plan: &Plan,
        start: usize,
        len: usize,
    ) -> Result<()> {
        let mut data = data.into_iter();
        let mut next = || -> Result<Vec<f64>> {
            read_f64(data.next().ok_or_else(|| CalibError::Backend("missing read-back".into()))?)
        };
        for p in pending {
            match p {
                Pending::Static { request, groups, columns } => {
                    self.add_static(request, &next()?, groups, columns);
                }
                Pending::Adaptive { request, with_rest } => {
                    let mut s = next()?;
                    let o = next()?;
                    let pred = if self.binary { vec![0.0; len] } else { next()? };
                    if with_rest {
                        top_label_from_rest(&mut s, &pred, &next()?);
                    }
                    let r = &plan.requests[request];
                    self.add_adaptive(request, r, (&s, &o), &pred, start);
                }
                Pending::Scalars { clipped, brier } => {
                    self.nll_sum -= next()?[0];
                    self.correct += next()?[0];
                    if clipped {
                        self.nll_clipped_sum -= next()?[0];
                    }
                    if brier {
                        self.brier_sum += next()?[0];
                    }
                }
            }
        }
        Ok(())
    }

    /// A static request's `[G B + 1, 3 C]` accumulator (the dropped row left out).
    fn add_static(&mut self, request: usize, acc: &[f64], groups: usize, columns: usize) {
        let st = &mut self.stats[request];
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

    /// An adaptive request's pairs of the chunk starting at row `start`, kept above the
    /// threshold, by group, with their global positions.
    fn add_adaptive(
        &mut self,
        request: usize,
        r: &StatRequest,
        (s, o): (&[f64], &[f64]),
        pred: &[f64],
        start: usize,
    ) {
        let (len, binary) = (pred.len(), self.binary);
        let columns = s.len() / len;
        let groups = &mut self.adaptive[request];
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

    /// The outcome, adaptive requests ranked.
    fn finish(mut self, plan: &Plan) -> Outcome {
        for (ri, r) in plan.requests.iter().enumerate() {
            if let Binning::Adaptive { n_ranges } = r.binning {
                self.stats[ri] = adaptive_stats(std::mem::take(&mut self.adaptive[ri]), n_ranges);
            }
        }
        let Self { stats, nll_sum, nll_clipped_sum, brier_sum, correct, .. } = self;
        Outcome { stats, nll_sum, nll_clipped_sum, brier_sum, correct }
    }
}

/// The top-label score rebuilt in f64 as `1 / (1 + r)` from `rest` (see `Rows::rest`), in the
/// predicted class's column when `s` holds every class.
fn top_label_from_rest(s: &mut [f64], pred: &[f64], rest: &[f64]) {
    let (len, columns) = (pred.len(), s.len() / pred.len());
    for i in 0..len {
        let c = if columns > 1 { pred[i] as usize } else { 0 };
        s[i * columns + c] = 1.0 / (1.0 + rest[i]);
    }
}
