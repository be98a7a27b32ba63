//! [`Records`]: what each row adds to an evaluation plan, kept so that a bootstrap replicate
//! (a vector of row multiplicities) or a vector of sample weights becomes an engine
//! [`Outcome`] without touching the scores.
//!
//! ```text
//! static bins:     stats[cell] += m_i (1, s, o)     for every (row i, cell, score s, outcome o)
//! adaptive ranges: each group sorted once (score, then the engine's tie key); the resample's
//!                  sorted list repeats row i m_i times in that order, so range r takes its
//!                  positions floor(r M / R) .. floor((r + 1) M / R) - 1, M = sum of m in the group
//!                  (fractional weights: cumulative weight cut at r M / R, a row's weight split
//!                  where the cut falls)
//! scalars:         sum_i m_i (nll_i, clipped nll_i, brier_i, correct_i)
//! ```
//! The row quantities are the fused engine's own (`engine::score_row`), so the replicate of
//! all ones is the plain evaluation (to the order of summation).

use crate::binning::{BinLookup, weighted_range_start};
use crate::engine::{Outcome, Plan, StatRequest, score_row};
use crate::error::Result;
use crate::input::{HostValues, Predictions, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;
use calib_kernels::Score;

/// One (row, cell, score, outcome) of a request, in 16 bytes: the outcome is the top bit of
/// `tag`, the rest the cell (static bins) or the class (adaptive ranges, for the tie key).
#[derive(Debug, Clone, Copy)]
struct Entry {
    row: u32,
    tag: u32,
    score: f64,
}

const OUTCOME_BIT: u32 = 1 << 31;

impl Entry {
    fn new(row: usize, cell: usize, score: f64, outcome: f64) -> Self {
        let bit = if outcome > 0.5 { OUTCOME_BIT } else { 0 };
        Self { row: row as u32, tag: cell as u32 | bit, score }
    }

    fn cell(&self) -> usize {
        (self.tag & !OUTCOME_BIT) as usize
    }

    fn outcome(&self) -> f64 {
        f64::from(self.tag >> 31)
    }
}

/// A request's entries: scattered into cells (static bins) or ranked per group (adaptive).
#[derive(Debug, Clone)]
enum Request {
    Static { zeros: BinStats, entries: Vec<Entry> },
    Adaptive { zeros: BinStats, groups: Vec<Vec<Entry>> },
}

/// Every row's contributions to `plan`.
#[derive(Debug, Clone)]
pub(crate) struct Records {
    n: usize,
    scalars: Vec<[f64; 4]>,
    requests: Vec<Request>,
}

impl Records {
    /// The records of `preds` under `plan` (one host read of the rows).
    pub fn new(preds: &Predictions, plan: &Plan) -> Result<Self> {
        let (values, labels) = preds.host_rows()?;
        Ok(match values {
            HostValues::F32(v) => build(&v, &labels, preds, plan),
            HostValues::F64(v) => build(&v, &labels, preds, plan),
        })
    }

    /// The engine outcome of the resample whose row multiplicities are `m`.
    #[cfg(test)]
    pub fn outcome(&self, m: &[u32]) -> Outcome {
        self.outcomes(&Batch::of(&[m.to_vec()])).remove(0)
    }

    /// The engine outcome with row `i` weighted by `weights.values()[i]`.
    pub fn weighted(&self, weights: &crate::input::SampleWeights) -> Outcome {
        self.outcomes(&Batch::weighted(weights)).remove(0)
    }

    /// The engine outcomes of a batch of resamples: the records are read once for all of
    /// them (the reweighting is bound by memory traffic, not arithmetic).
    pub fn outcomes<W: Weight>(&self, batch: &Batch<W>) -> Vec<Outcome> {
        let len = batch.len;
        let mut sums = vec![[0.0f64; 4]; len];
        for (row, s) in self.scalars.iter().enumerate() {
            for (acc, &w) in sums.iter_mut().zip(batch.row(row)) {
                let w: f64 = w.into();
                acc.iter_mut().zip(s).for_each(|(a, v)| *a += w * v);
            }
        }
        let mut stats: Vec<Vec<BinStats>> = vec![Vec::with_capacity(self.requests.len()); len];
        for request in &self.requests {
            for (b, s) in request.stats(batch).into_iter().enumerate() {
                stats[b].push(s);
            }
        }
        stats
            .into_iter()
            .zip(sums)
            .map(|(stats, [nll_sum, nll_clipped_sum, brier_sum, correct])| Outcome {
                stats,
                nll_sum,
                nll_clipped_sum,
                brier_sum,
                correct,
            })
            .collect()
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.n
    }
}

impl Request {
    /// One set of statistics per resample of `batch`.
    fn stats<W: Weight>(&self, batch: &Batch<W>) -> Vec<BinStats> {
        match self {
            Self::Static { zeros, entries } => {
                // Lane-major sums (`[cell][resample]`) so each entry adds one vector per sum;
                // branch-free: a third of the rows are not drawn and add zeros.
                let cells = zeros.count.len();
                let mut sums = vec![[[0.0f64; BATCH]; 3]; cells];
                for e in entries {
                    let (score, outcome) = (e.score, e.outcome());
                    let w = batch.lanes(e.row as usize);
                    let cell = &mut sums[e.cell()];
                    for b in 0..BATCH {
                        let w: f64 = w[b].into();
                        cell[0][b] += w;
                        cell[1][b] += w * score;
                        cell[2][b] += w * outcome;
                    }
                }
                (0..batch.len)
                    .map(|b| {
                        let mut stats = zeros.clone();
                        for (c, cell) in sums.iter().enumerate() {
                            stats.count[c] = cell[0][b];
                            stats.sum_score[c] = cell[1][b];
                            stats.sum_outcome[c] = cell[2][b];
                        }
                        stats
                    })
                    .collect()
            }
            Self::Adaptive { zeros, groups } => {
                let mut out = vec![zeros.clone(); batch.len];
                for (g, entries) in groups.iter().enumerate() {
                    add_ranges(&mut out, g, entries, batch);
                }
                out
            }
        }
    }
}

/// Row multiplicities (or weights) of up to [`BATCH`] resamples, row-major
/// (`weights[row * BATCH + b]`), so one load serves every resample of the batch.
#[derive(Debug, Clone)]
pub(crate) struct Batch<W: Weight> {
    weights: Vec<W>,
    len: usize,
    /// Whether every weight is a whole number: ranges are then cut at whole positions.
    integral: bool,
}

/// Resamples reweighted per pass over the records.
pub(crate) const BATCH: usize = 8;

/// A row weight: a bootstrap multiplicity (`u32`, half the memory traffic of the replicates'
/// pass) or a sample weight (`f64`).
pub(crate) trait Weight: Copy + Default + Into<f64> + Sync {}

impl Weight for u32 {}
impl Weight for f64 {}

impl Batch<u32> {
    /// The batch of `ms` (at most [`BATCH`] multiplicity vectors of one length).
    pub fn of(ms: &[Vec<u32>]) -> Self {
        assert!(!ms.is_empty() && ms.len() <= BATCH, "batch size");
        let n = ms[0].len();
        let mut weights = vec![0; n * BATCH];
        for (b, m) in ms.iter().enumerate() {
            m.iter().enumerate().for_each(|(row, &w)| weights[row * BATCH + b] = w);
        }
        Self { weights, len: ms.len(), integral: true }
    }
}

impl Batch<f64> {
    /// One lane: the sample weights.
    pub fn weighted(weights: &crate::input::SampleWeights) -> Self {
        let mut lanes = vec![0.0; weights.values().len() * BATCH];
        weights.values().iter().enumerate().for_each(|(row, &w)| lanes[row * BATCH] = w);
        Self { weights: lanes, len: 1, integral: weights.is_integral() }
    }
}

impl<W: Weight> Batch<W> {
    /// The multiplicities of `row` in each resample.
    #[inline(always)]
    fn row(&self, row: usize) -> &[W] {
        &self.lanes(row)[..self.len]
    }

    /// The multiplicities of `row` in all [`BATCH`] lanes (0 past the batch's length).
    #[inline(always)]
    fn lanes(&self, row: usize) -> &[W; BATCH] {
        self.weights[row * BATCH..(row + 1) * BATCH].try_into().expect("BATCH lanes")
    }
}

/// The ranges of group `g` in each resample of `batch`: one walk over the sorted entries with
/// every resample in a lane, each summing its current range in registers. An entry whose
/// copies stay inside every lane's current range (nearly all) is one vector update; where a
/// lane's range ends, that lane splits the row's copies (at most R times per lane).
fn add_ranges<W: Weight>(out: &mut [BinStats], g: usize, entries: &[Entry], batch: &Batch<W>) {
    let n_ranges = out[0].n_bins();
    let mut walk = Walks { n_ranges, integral: batch.integral, ..Walks::default() };
    for e in entries {
        let w = batch.lanes(e.row as usize);
        (0..BATCH).for_each(|b| walk.total[b] += w[b].into());
    }
    (0..BATCH).for_each(|b| walk.end[b] = walk.cut(1, b));
    for e in entries {
        let (score, outcome) = (e.score, e.outcome());
        let w: [f64; BATCH] = batch.lanes(e.row as usize).map(Into::into);
        let inside = (0..BATCH).fold(true, |ok, b| ok & (walk.position[b] + w[b] <= walk.end[b]));
        if inside {
            for b in 0..BATCH {
                walk.acc[0][b] += w[b];
                walk.acc[1][b] += w[b] * score;
                walk.acc[2][b] += w[b] * outcome;
                walk.position[b] += w[b];
            }
            continue;
        }
        for (b, stats) in out.iter_mut().enumerate() {
            walk.split(b, w[b], (score, outcome), |range, sums| stats.add_sums(g, range, sums));
        }
    }
    for (b, stats) in out.iter_mut().enumerate() {
        if walk.total[b] > 0.0 {
            stats.add_sums(g, walk.range[b], [walk.acc[0][b], walk.acc[1][b], walk.acc[2][b]]);
        }
    }
}

/// Every lane's place in a walk over a group's sorted entries.
#[derive(Debug, Clone, Default)]
struct Walks {
    n_ranges: usize,
    integral: bool,
    total: [f64; BATCH],
    position: [f64; BATCH],
    range: [usize; BATCH],
    end: [f64; BATCH],
    acc: [[f64; BATCH]; 3],
}

impl Walks {
    /// Where range `r` of lane `b` starts: `floor(r M / R)` for whole weights (the repeated
    /// rows' positions, exact: M < 2^53), `r M / R` for fractional ones; `M` for `r = R`.
    fn cut(&self, r: usize, b: usize) -> f64 {
        let total = self.total[b];
        if r >= self.n_ranges {
            total
        } else {
            weighted_range_start(r, total, self.n_ranges, self.integral)
        }
    }

    /// Lane `b` takes weight `copies` of `(score, outcome)`, closing (`flush`) each range it
    /// fills; the last range takes whatever remains (no rounding can push weight past it).
    fn split(
        &mut self,
        b: usize,
        mut copies: f64,
        (score, outcome): (f64, f64),
        mut flush: impl FnMut(usize, [f64; 3]),
    ) {
        while self.range[b] + 1 < self.n_ranges && self.position[b] + copies > self.end[b] {
            let take = (self.end[b] - self.position[b]).max(0.0);
            let sums = [
                self.acc[0][b] + take,
                self.acc[1][b] + take * score,
                self.acc[2][b] + take * outcome,
            ];
            flush(self.range[b], sums);
            (0..3).for_each(|q| self.acc[q][b] = 0.0);
            (self.position[b], copies, self.range[b]) =
                (self.end[b], copies - take, self.range[b] + 1);
            self.end[b] = self.cut(self.range[b] + 1, b);
        }
        self.acc[0][b] += copies;
        self.acc[1][b] += copies * score;
        self.acc[2][b] += copies * outcome;
        self.position[b] += copies;
    }
}

fn build<T: Score>(values: &[T], labels: &[i64], preds: &Predictions, plan: &Plan) -> Records {
    let (kind, width, k) = (preds.kind(), preds.n_columns(), preds.n_classes());
    let binary = kind == ScoreKind::Binary;
    let log_eps = plan.nll_eps.map(f64::ln);
    let mut requests: Vec<Request> = plan.requests.iter().map(|r| empty(r, k, binary)).collect();
    let lookups: Vec<Option<BinLookup>> =
        plan.requests.iter().map(|r| r.binning.edges().map(BinLookup::new)).collect();
    let mut scalars = Vec::with_capacity(labels.len());
    let mut p = vec![0.0; width];
    for (i, (values, &y)) in values.chunks_exact(width).zip(labels).enumerate() {
        // The fused engine's own row quantities, so the replicate of all ones is its evaluation.
        let row = score_row(values, y as usize, kind, &mut p);
        let clipped = log_eps.map_or(0.0, |le| -row.log_py.max(le));
        scalars.push([-row.log_py, clipped, row.brier, row.correct]);
        for ((request, spec), lookup) in requests.iter_mut().zip(&plan.requests).zip(&lookups) {
            let all_classes = !binary && spec.scores == ScoreSet::AllClasses;
            let keep = |s: f64| spec.threshold.is_none_or(|eps| s > eps);
            // Adaptive entries keep their class in `cell` (the pooled tie key needs it).
            let mut push = |group: usize, class: usize, score: f64, outcome: f64| {
                let entry = |cell: usize| Entry::new(i, cell, score, outcome);
                match (&mut *request, lookup) {
                    (Request::Static { entries, .. }, Some(l)) => {
                        entries.push(entry(group * l.n_bins() + l.bin(score)))
                    }
                    (Request::Adaptive { groups, .. }, _) => groups[group].push(entry(class)),
                    _ => unreachable!("static requests have edges"),
                }
            };
            if all_classes {
                for (j, &pj) in p.iter().enumerate().filter(|(_, pj)| keep(**pj)) {
                    let group = if spec.grouped { j } else { 0 };
                    push(group, j, pj, f64::from(u8::from(j == y as usize)));
                }
            } else if keep(row.conf) {
                let group = if binary || !spec.grouped { 0 } else { row.pred };
                push(group, row.pred, row.conf, row.outcome);
            }
        }
    }
    for (request, spec) in requests.iter_mut().zip(&plan.requests) {
        if let Request::Adaptive { groups, .. } = request {
            let pooled = !binary && spec.scores == ScoreSet::AllClasses && !spec.grouped;
            // The engine's tie keys: the row, or `row * K + class` for pooled class scores.
            let key = |e: &Entry| {
                if pooled { e.row as u64 * k as u64 + e.cell() as u64 } else { e.row as u64 }
            };
            groups.iter_mut().for_each(|g| {
                g.sort_by(|a, b| a.score.total_cmp(&b.score).then(key(a).cmp(&key(b))))
            });
        }
    }
    Records { n: labels.len(), scalars, requests }
}

/// An empty request: statistics of the right shape, no entries.
fn empty(spec: &StatRequest, k: usize, binary: bool) -> Request {
    let zeros = spec.zeros(k, binary);
    match spec.binning.edges() {
        Some(_) => Request::Static { zeros, entries: Vec::new() },
        None => {
            let groups = vec![Vec::new(); zeros.n_groups];
            Request::Adaptive { zeros, groups }
        }
    }
}
