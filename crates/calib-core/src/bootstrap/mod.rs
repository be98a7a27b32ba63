//! Bootstrap intervals for any metric set (Efron & Tibshirani 1993): resample the rows with
//! replacement `B` times, evaluate each replicate, report the spread.
//!
//! ```text
//! replicate b: multiplicities m = counts of N draws uniform over the rows (SplitMix64 seeded
//!              by (seed, b): the same intervals on any thread count); with sample weights,
//!              N draws with probabilities w_i / W, the replicate then unweighted
//! percentile:  [q((1 - L)/2), q((1 + L)/2)]        q: numpy's linear-interpolation quantile
//! basic:       [2 est - q((1 + L)/2), 2 est - q((1 - L)/2)]
//! standard error: the replicates' sample standard deviation
//! ```
//! A replicate is not a re-run of the pipeline: the rows' contributions are recorded once
//! (`Records`) and reweighted, adaptive ranges re-ranked from the one sort of the original
//! scores; the metrics on sorted or smoothed pairs re-run on the resampled pairs.

mod quantile;

use burn::config::Config;
use serde::{Deserialize, Serialize};

pub use quantile::quantile;

use crate::engine::{BATCH, Batch, Records};
use crate::error::{CalibError, Result};
use crate::evaluate::EvaluationConfig;
use crate::input::Predictions;
use crate::metrics::{LogProbabilities, RefinementSplit};
use crate::pairs::{PairSet, ScorePairs};
use crate::report::Report;
use crate::synthetic::SplitMix64;

/// Which bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalKind {
    /// The replicates' quantiles.
    #[default]
    Percentile,
    /// The quantiles reflected about the estimate (pivotal).
    Basic,
}

/// How to bootstrap.
#[derive(Config, Debug, PartialEq)]
pub struct BootstrapConfig {
    /// Number of replicates B.
    #[config(default = 1000)]
    pub replicates: usize,
    /// Coverage of the intervals, in (0, 1).
    #[config(default = 0.9)]
    pub level: f64,
    /// Seed of the resampling.
    #[config(default = 0)]
    pub seed: u64,
    /// Percentile or basic intervals.
    #[config(default = "IntervalKind::Percentile")]
    pub interval: IntervalKind,
    /// Threads (0: as many as the machine has); the result does not depend on it.
    #[config(default = 0)]
    pub threads: usize,
}

/// One metric's estimate and bootstrap summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricInterval {
    /// The metric's name (as [`Report::named_values`] gives it).
    pub name: String,
    /// The estimate on all rows.
    pub estimate: f64,
    /// Lower end of the interval.
    pub lower: f64,
    /// Upper end of the interval.
    pub upper: f64,
    /// Standard deviation of the replicates.
    pub standard_error: f64,
}

impl EvaluationConfig {
    /// The report on all rows and a bootstrap interval for each of its values.
    ///
    /// ```
    /// use calib_core::{EvaluationConfig, Metric, bootstrap::BootstrapConfig, synthetic::overconfident_logits};
    /// use calib_core::input::{InputConfig, Predictions};
    /// let (z, y) = overconfident_logits(2000, 5, 0.8, 2.0, 1);
    /// let preds = Predictions::from_host(&z, 5, &y, InputConfig::default(), &burn::tensor::Device::flex()).unwrap();
    /// let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece]);
    /// let (report, intervals) = config.bootstrap(&preds, &BootstrapConfig::new().with_replicates(200)).unwrap();
    /// let ece = &intervals[0];
    /// assert!(ece.lower < ece.estimate && ece.estimate < ece.upper);
    /// assert_eq!(report.get(Metric::Ece), Some(ece.estimate));
    /// ```
    pub fn bootstrap(
        &self,
        preds: &Predictions,
        config: &BootstrapConfig,
    ) -> Result<(Report, Vec<MetricInterval>)> {
        config.validate()?;
        let report = self.evaluate(preds)?;
        let replicates = Replicates::new(self, preds)?.run(config);
        let intervals = report
            .named_values()
            .into_iter()
            .enumerate()
            .map(|(j, (name, estimate))| {
                let mut values: Vec<f64> = replicates.iter().map(|r| r[j]).collect();
                summarise(name, estimate, &mut values, config)
            })
            .collect();
        Ok((report, intervals))
    }
}

impl BootstrapConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.replicates < 2 {
            return Err(CalibError::InvalidConfig(
                "the bootstrap needs at least 2 replicates".into(),
            ));
        }
        let valid = self.level > 0.0 && self.level < 1.0;
        if !valid {
            return Err(CalibError::InvalidConfig(format!("level {} outside (0, 1)", self.level)));
        }
        Ok(())
    }
}

/// An evaluation's records, ready to be reweighted.
struct Replicates<'a> {
    config: &'a EvaluationConfig,
    records: Records,
    draws: Draws,
    binned: Vec<crate::evaluate::Binned>,
    shape: (usize, crate::input::ScoreKind),
    /// Pairs in ascending score order and the row of each, when pair metrics are asked for.
    pairs: Option<(ScorePairs, Vec<usize>)>,
    /// The rows' log-probabilities, when calibration or refinement metrics are asked for
    /// (each replicate refits with its multiplicities as weights).
    refit_rows: Option<LogProbabilities>,
}

impl<'a> Replicates<'a> {
    fn new(config: &'a EvaluationConfig, preds: &Predictions) -> Result<Self> {
        let (plan, binned) = config.plan();
        let records = Records::new(preds, &plan)?;
        let pairs = if config.metrics.iter().any(|m| m.uses_pairs()) {
            Some(ScorePairs::of(preds, PairSet::TopLabel)?.sorted())
        } else {
            None
        };
        let refit_rows = config.refits().then(|| LogProbabilities::of(preds)).transpose()?;
        if let (Some(_), Some(folds)) = (&refit_rows, config.split_fits)
            && folds > preds.n_samples()
        {
            return Err(CalibError::InvalidConfig(format!(
                "{folds} split fits for {} rows: cross-fitting needs 2 to N",
                preds.n_samples()
            )));
        }
        let shape = (preds.n_classes(), preds.kind());
        let draws = Draws::of(preds);
        Ok(Self { config, records, draws, binned, shape, pairs, refit_rows })
    }

    /// Every replicate's named values, in replicate order, computed on `config.threads`
    /// threads, [`BATCH`] replicates per pass over the records.
    fn run(&self, config: &BootstrapConfig) -> Vec<Vec<f64>> {
        let max_threads = config.replicates.div_ceil(BATCH);
        over_replicates(config, max_threads, |range| self.replicates(config.seed, range))
    }

    /// The named values of replicates `range`, a batch at a time.
    fn replicates(&self, seed: u64, range: std::ops::Range<usize>) -> Vec<Vec<f64>> {
        let mut out = Vec::with_capacity(range.len());
        let ids: Vec<usize> = range.collect();
        for chunk in ids.chunks(BATCH) {
            let ms: Vec<Vec<u32>> =
                chunk.iter().map(|&b| self.draws.multiplicities(seed, b)).collect();
            let outcomes = self.records.outcomes(&Batch::of(&ms));
            for (m, outcome) in ms.iter().zip(&outcomes) {
                out.push(self.values(m, outcome));
            }
        }
        out
    }

    /// Replicate `b`'s named values.
    #[cfg(test)]
    fn replicate(&self, seed: u64, b: usize) -> Vec<f64> {
        self.replicates(seed, b..b + 1).remove(0)
    }

    /// The named values of the resample with multiplicities `m` and engine outcome `outcome`.
    fn values(&self, m: &[u32], outcome: &crate::engine::Outcome) -> Vec<f64> {
        let (k, kind) = self.shape;
        let n = self.records.n_rows();
        let mut report = self.config.assemble(&self.binned, outcome, n, n as f64, k, kind);
        if let Some((pairs, rows)) = &self.pairs {
            self.config.fill_pair_metrics(&resampled(pairs, rows, m), None, &mut report);
        }
        if let Some(rows) = &self.refit_rows {
            let weights: Vec<f64> = m.iter().map(|&c| f64::from(c)).collect();
            // The folds were checked against N when the bootstrap started.
            if let Ok(split) = RefinementSplit::of(rows, Some(&weights), self.config.split_fits) {
                self.config.fill_refit_metrics(&split, &mut report);
            }
        }
        report.named_values().into_iter().map(|(_, v)| v).collect()
    }
}

/// `work` over consecutive ranges of `config.replicates` replicates, one range per thread
/// (`config.threads`, 0: as many as the machine has; at most `max_threads`), the results
/// concatenated in replicate order: the same output on any thread count.
pub(crate) fn over_replicates<T: Send>(
    config: &BootstrapConfig,
    max_threads: usize,
    work: impl Fn(std::ops::Range<usize>) -> Vec<T> + Sync,
) -> Vec<T> {
    let threads = match config.threads {
        0 => calib_kernels::threads(),
        t => t,
    }
    .min(max_threads)
    .max(1);
    let per = config.replicates.div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = t * per..((t + 1) * per).min(config.replicates);
                scope.spawn(move || work(range))
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("replicate thread")).collect()
    })
}

/// How a replicate draws its N rows.
pub(crate) enum Draws {
    /// Uniformly over the N rows.
    Uniform(usize),
    /// With probabilities proportional to the sample weights (their running sums).
    Weighted(Vec<f64>),
}

impl Draws {
    fn of(preds: &Predictions) -> Self {
        Self::new(preds.n_samples(), preds.weights().map(|w| w.values()))
    }

    /// Draws over `n` rows, with probabilities proportional to `weights` if given.
    pub(crate) fn new(n: usize, weights: Option<&[f64]>) -> Self {
        match weights {
            None => Self::Uniform(n),
            Some(w) => Self::Weighted(
                w.iter()
                    .scan(0.0, |sum, &w| {
                        *sum += w;
                        Some(*sum)
                    })
                    .collect(),
            ),
        }
    }

    /// Row multiplicities of replicate `b` (N draws; SplitMix64 seeded by `(seed, b)`).
    pub(crate) fn multiplicities(&self, seed: u64, b: usize) -> Vec<u32> {
        let cumulative = match self {
            Self::Uniform(n) => return multiplicities(*n, seed, b),
            Self::Weighted(c) => c,
        };
        let (n, total) = (cumulative.len(), cumulative[cumulative.len() - 1]);
        let mut rng = replicate_rng(seed, b);
        let mut m = vec![0u32; n];
        for _ in 0..n {
            // Row i owns [c_{i-1}, c_i): a zero weight owns nothing and is never drawn.
            let u = rng.uniform() * total;
            m[cumulative.partition_point(|&c| c <= u).min(n - 1)] += 1;
        }
        m
    }
}

/// The generator of replicate `b`.
fn replicate_rng(seed: u64, b: usize) -> SplitMix64 {
    SplitMix64(seed ^ (b as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// Row multiplicities of replicate `b`: `n` draws uniform over the rows.
pub(crate) fn multiplicities(n: usize, seed: u64, b: usize) -> Vec<u32> {
    let mut rng = replicate_rng(seed, b);
    let mut m = vec![0u32; n];
    for _ in 0..n {
        m[rng.below(n)] += 1;
    }
    m
}

/// The resample of `pairs` (sorted, pair `j` from row `rows[j]`): each pair repeated as often as
/// its row was drawn, so the result is sorted too and ties keep row order.
pub(crate) fn resampled(pairs: &ScorePairs, rows: &[usize], m: &[u32]) -> ScorePairs {
    let (mut scores, mut outcomes) =
        (Vec::with_capacity(rows.len()), Vec::with_capacity(rows.len()));
    for (j, &row) in rows.iter().enumerate() {
        for _ in 0..m[row] {
            scores.push(pairs.scores[j]);
            outcomes.push(pairs.outcomes[j]);
        }
    }
    ScorePairs { scores, outcomes }
}

/// The estimate, interval and standard error of one metric from its replicate values.
fn summarise(
    name: String,
    estimate: f64,
    values: &mut [f64],
    config: &BootstrapConfig,
) -> MetricInterval {
    values.sort_by(f64::total_cmp);
    let (a, b) = ((1.0 - config.level) / 2.0, (1.0 + config.level) / 2.0);
    let (q_lo, q_hi) = (quantile(values, a), quantile(values, b));
    let (lower, upper) = match config.interval {
        IntervalKind::Percentile => (q_lo, q_hi),
        IntervalKind::Basic => (2.0 * estimate - q_hi, 2.0 * estimate - q_lo),
    };
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    MetricInterval { name, estimate, lower, upper, standard_error: var.sqrt() }
}

#[cfg(all(test, feature = "flex"))]
mod tests;
