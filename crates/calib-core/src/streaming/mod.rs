//! [`StreamingEvaluation`]: metrics of data that arrives in row chunks (files larger than
//! memory, shards on several machines), equal to evaluating the concatenated rows.
//!
//! Static bins, NLL, Brier and accuracy are sums: each chunk runs the same plan as
//! [`EvaluationConfig::evaluate`] and the sums add, so one pass does and memory does not grow
//! with N. Adaptive ranges (RMSCE, ACE, TACE, the L2 errors) are cut at ranks of the whole
//! set: they take further passes over the same rows in the same order ([`ranges`]: mergeable
//! histogram refinement of the cuts, then the range sums), exactly the in-memory ranges.
//! Everything in between is an [`EvaluationState`], which serialises and merges across shards.
//!
//! Rows may carry sample weights (every chunk, or none): the sums are weighted and the ranges
//! cut in running weight, as [`EvaluationConfig::evaluate`] does with the weights of all rows
//! (docs/conventions.md, "Sample weights"). A chunk's weights may all be zero; the whole set's
//! may not.

mod ranges;
mod serial;
mod state;
#[cfg(all(test, feature = "flex"))]
mod tests;

pub use state::EvaluationState;

use crate::engine::{Outcome, Plan, StatRequest};
use crate::error::{CalibError, Result};
use crate::evaluate::{Binned, run};
use crate::input::Predictions;
use crate::metrics::Metric;
use crate::report::Report;
use crate::{EvaluationConfig, binning::Binning};
use ranges::{COLLECT_BUDGET, PassAccumulators, PassScratch, RangeSet};

/// An evaluation fed chunk by chunk, in one pass or several; see the module docs.
///
/// # Example
/// ```
/// use burn::tensor::Device;
/// use calib_core::input::{InputConfig, Predictions, ScoreKind};
/// use calib_core::{EvaluationConfig, Metric};
///
/// let device = Device::flex();
/// let (z, y) = calib_core::synthetic::overconfident_logits(1000, 4, 0.9, 2.0, 1);
/// let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Ace, Metric::Nll]);
/// let mut stream = config.streaming()?;
/// loop {
///     for (zc, yc) in z.chunks(4 * 300).zip(y.chunks(300)) {
///         stream.update(&Predictions::from_host(zc, 4, yc, InputConfig::new(ScoreKind::Logits), &device)?)?;
///     }
///     if !stream.end_pass()? {
///         break; // ACE's ranges took more passes over the same rows
///     }
/// }
/// let whole = Predictions::from_host(&z, 4, &y, InputConfig::new(ScoreKind::Logits), &device)?;
/// let (a, b) = (stream.finish()?, config.evaluate(&whole)?);
/// assert!((a.get(Metric::Ace).unwrap() - b.get(Metric::Ace).unwrap()).abs() < 1e-12);
/// # Ok::<(), calib_core::CalibError>(())
/// ```
#[derive(Debug, Clone)]
pub struct StreamingEvaluation {
    state: EvaluationState,
    /// The static requests and sums of the plan.
    plan: Plan,
    /// The adaptive requests of the plan.
    adaptive: Vec<StatRequest>,
    binned: Vec<Binned>,
    /// Per request of the whole plan: its index among the static or the adaptive requests.
    slots: Vec<Slot>,
    /// Sample position of this stream's first row (a shard's offset in the whole set).
    first_row: u64,
    /// Pairs the last range pass may collect (tests lower it to force refinement passes).
    collect_budget: u64,
    /// What the chunks of the current range pass reuse.
    scratch: PassScratch,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    Static(usize),
    Adaptive(usize),
}

impl EvaluationConfig {
    /// Whether every requested metric can be computed from rows in chunks: all but the
    /// metrics on sorted or smoothed pairs (binning-free tests, smooth ECE, LCE-ECE) and the
    /// calibration and refinement parts (a refit on all rows).
    pub fn can_stream(&self) -> bool {
        !self.metrics.iter().any(|m| m.needs_all_rows())
    }

    /// Whether a streamed evaluation needs more than one pass (adaptive ranges).
    pub fn needs_passes(&self) -> bool {
        self.metrics.iter().any(|m| self.is_adaptive(*m))
    }

    /// Whether `metric` is a sum over rows under these settings (static bins, NLL, Brier,
    /// accuracy): one pass computes it, and its states merge across shards.
    pub fn is_one_pass(&self, metric: Metric) -> bool {
        !metric.needs_all_rows() && !self.is_adaptive(metric)
    }

    fn is_adaptive(&self, metric: Metric) -> bool {
        self.binned(metric).is_some_and(|c| matches!(c.binning, Binning::Adaptive { .. }))
    }

    /// An evaluation to feed chunk by chunk.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for settings [`Self::evaluate`] refuses, and for metrics on
    /// sorted or smoothed pairs (naming them), which need every row at once.
    pub fn streaming(&self) -> Result<StreamingEvaluation> {
        StreamingEvaluation::from_state(EvaluationState::new(self.clone()))
    }
}

impl StreamingEvaluation {
    /// Continues from `state` (a saved or merged state): feed the rows of its pass.
    ///
    /// # Errors
    /// As [`EvaluationConfig::streaming`] for the state's configuration.
    pub fn from_state(state: EvaluationState) -> Result<Self> {
        let config = &state.config;
        config.validate()?;
        if !config.can_stream() {
            let names: Vec<&str> =
                config.metrics.iter().filter(|m| m.needs_all_rows()).map(|m| m.name()).collect();
            return Err(CalibError::InvalidConfig(format!(
                "{} sort, smooth or refit on every score, which needs all rows at once; they \
                 cannot be computed in chunks",
                names.join(", ")
            )));
        }
        let (whole, binned) = config.plan();
        let mut plan = Plan { requests: vec![], ..whole.clone() };
        let (mut adaptive, mut slots) = (Vec::new(), Vec::new());
        for r in whole.requests {
            if matches!(r.binning, Binning::Adaptive { .. }) {
                slots.push(Slot::Adaptive(adaptive.len()));
                adaptive.push(r);
            } else {
                slots.push(Slot::Static(plan.requests.len()));
                plan.requests.push(r);
            }
        }
        Ok(Self {
            state,
            plan,
            adaptive,
            binned,
            slots,
            first_row: 0,
            collect_budget: COLLECT_BUDGET,
            scratch: PassScratch::default(),
        })
    }

    /// Sets the sample position of this stream's first row: a shard's row offset in the
    /// whole set, so that tied scores split across shards in sample order. Default 0.
    pub fn with_first_row(mut self, first_row: u64) -> Self {
        self.first_row = first_row;
        self
    }

    /// Adds the rows of `chunk` to the current pass.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] when K or the kind of scores differs from earlier chunks,
    /// when the chunk carries sample weights and earlier ones did not (or the other way
    /// round), or when the evaluation is finished; engine errors as
    /// [`EvaluationConfig::evaluate`].
    pub fn update(&mut self, chunk: &Predictions) -> Result<()> {
        let shape = (chunk.n_classes(), chunk.kind());
        self.state.check_shape(shape)?;
        self.state.check_weights(chunk.weights().is_some())?;
        if self.state.pass == 1 {
            self.add_sums(chunk)?;
        }
        // The sample position of the chunk's first row.
        let first = self.first_row + self.state.rows_in_pass;
        if !self.adaptive.is_empty() {
            let (budget, weighted) = (self.collect_budget, chunk.weights().is_some());
            let ranges = self
                .state
                .ranges
                .get_or_insert_with(|| RangeSet::new(&self.adaptive, shape, budget, weighted));
            if self.state.pass_sums.is_empty() {
                self.state.pass_sums = PassAccumulators::new(ranges.empty_sums());
            }
            ranges.add_rows(chunk, first, &mut self.state.pass_sums, &mut self.scratch)?;
        }
        self.state.add_rows(first, chunk.n_samples() as u64)
    }

    /// The first pass's sums: static bins, NLL, Brier, accuracy.
    fn add_sums(&mut self, chunk: &Predictions) -> Result<()> {
        let c = &self.state.config;
        let workspace = &mut crate::engine::Workspace::new();
        let o = if self.plan.requests.is_empty() && !self.plan.scalars {
            Outcome {
                stats: vec![],
                nll_sum: 0.0,
                nll_clipped_sum: 0.0,
                brier_sum: 0.0,
                correct: 0.0,
            }
        } else {
            run(chunk, &self.plan, c.precision, c.engine, workspace)?
        };
        self.state.add_first(o, chunk.n_samples() as u64, chunk.weights())
    }

    /// Ends the pass over every row; `true` when another pass over the same rows, in the same
    /// order, is needed (adaptive ranges: typically two or three passes in all).
    ///
    /// # Errors
    /// [`CalibError::Incompatible`] when this pass saw other rows than the first.
    pub fn end_pass(&mut self) -> Result<bool> {
        self.scratch = PassScratch::default();
        self.state.end_pass()
    }

    /// Passes over the rows so far (1 while the first runs).
    pub fn pass(&self) -> u32 {
        self.state.pass
    }

    /// Rows of the first pass.
    pub fn n_samples(&self) -> usize {
        self.state.first.as_ref().map_or(0, |f| f.n_samples as usize)
    }

    /// The state so far: serialise it, merge it with other shards' states, resume from it.
    pub fn state(&self) -> &EvaluationState {
        &self.state
    }

    /// The report of every row seen.
    ///
    /// # Errors
    /// [`CalibError::Empty`] when no rows were added; [`CalibError::InvalidConfig`] while
    /// adaptive ranges still need passes.
    pub fn finish(&self) -> Result<Report> {
        let (Some(first), Some((n_classes, kind))) = (&self.state.first, self.state.shape) else {
            return Err(CalibError::Empty);
        };
        let ranged = match &self.state.ranges {
            Some(r) if !r.done() => {
                return Err(CalibError::InvalidConfig(format!(
                    "adaptive ranges need more passes over the rows (pass {} not ended or not \
                     the last); call end_pass and feed the rows again",
                    self.state.pass
                )));
            }
            Some(r) => r.stats(),
            None => vec![],
        };
        let stats = self.slots.iter().map(|slot| match slot {
            Slot::Static(i) => Ok(first.outcome.stats[*i].clone()),
            Slot::Adaptive(i) => ranged.get(*i).cloned().flatten().ok_or(CalibError::Empty),
        });
        let outcome = Outcome { stats: stats.collect::<Result<_>>()?, ..first.outcome.clone() };
        let (n, total) = (first.n_samples as usize, self.state.total_weight());
        if total <= 0.0 {
            return Err(CalibError::InvalidConfig(
                "the sample weights of every row sum to 0: at least one must be positive".into(),
            ));
        }
        Ok(self.state.config.assemble(&self.binned, &outcome, n, total, n_classes, kind))
    }
}
