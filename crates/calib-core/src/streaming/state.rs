//! [`EvaluationState`]: everything a streamed evaluation has accumulated, with its
//! configuration inside; it serialises (JSON, or a compact binary form) and merges exactly.

use serde::{Deserialize, Serialize};

use super::StreamingEvaluation;
use super::ranges::{PassAccumulators, RangeSet};
use crate::EvaluationConfig;
use crate::engine::{Engine, Outcome};
use crate::error::{CalibError, Result};
use crate::input::{SampleWeights, ScoreKind};
use crate::report::Report;

/// Version of the serialised form ([`EvaluationState::to_json`], [`EvaluationState::to_bytes`]);
/// states of another version are refused. 6: a checksum of the content.
pub(super) const FORMAT: u32 = 6;

/// The accumulated state of a [`StreamingEvaluation`].
///
/// States of shards merge ([`merge`](Self::merge)) into the state of the concatenated rows:
/// the first pass's sums (per-bin counts and sums, NLL, Brier, accuracy) add; the passes of
/// adaptive ranges add their histogram counts or range sums. States of different
/// configurations, K, kinds of score or passes refuse to merge.
///
/// # Example
/// ```
/// use burn::tensor::Device;
/// use calib_core::input::{InputConfig, Predictions, ScoreKind};
/// use calib_core::{EvaluationConfig, EvaluationState, Metric, StreamingEvaluation};
///
/// let device = Device::flex();
/// let (z, y) = calib_core::synthetic::overconfident_logits(900, 3, 0.9, 2.0, 7);
/// let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Brier]);
/// let shard = |rows: std::ops::Range<usize>| -> calib_core::Result<EvaluationState> {
///     let mut s = config.streaming()?;
///     let preds = Predictions::from_host(&z[rows.start * 3..rows.end * 3], 3, &y[rows],
///         InputConfig::new(ScoreKind::Logits), &device)?;
///     s.update(&preds)?;
///     Ok(s.state().clone())
/// };
/// let json = shard(0..400)?.to_json();            // written by one worker ...
/// let a = EvaluationState::from_json(&json)?;     // ... read by another
/// let merged = a.merge(&shard(400..900)?)?;
/// let whole = Predictions::from_host(&z, 3, &y, InputConfig::new(ScoreKind::Logits), &device)?;
/// let (m, w) = (merged.report()?, config.evaluate(&whole)?);
/// assert!((m.get(Metric::Ece).unwrap() - w.get(Metric::Ece).unwrap()).abs() < 1e-12);
/// # Ok::<(), calib_core::CalibError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationState {
    pub(super) format: u32,
    pub(super) config: EvaluationConfig,
    /// K and the kind of scores, once a row was seen.
    pub(super) shape: Option<(usize, ScoreKind)>,
    /// The pass running (1 first).
    pub(super) pass: u32,
    /// The first pass's sums (`None` before any row, and in later passes' worker states).
    pub(super) first: Option<FirstPass>,
    /// The adaptive requests' searches.
    pub(super) ranges: Option<RangeSet>,
    /// The current pass's accumulators, one per adaptive request.
    pub(super) pass_sums: PassAccumulators,
    /// Rows of the current pass so far.
    pub(super) rows_in_pass: u64,
    /// With adaptive ranges: the rows of each shard of the first pass, in merge order. A
    /// later pass places shard `i` at the rows of the shards before it.
    pub(super) shards: Vec<u64>,
    /// The sample positions a later pass has seen, as sorted disjoint `[start, end)` spans:
    /// the shards of a pass must not overlap and, merged, must cover every row once.
    pub(super) covered: Vec<(u64, u64)>,
}

/// The first pass's sums over `n_samples` rows (weighted sums for rows with sample weights).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct FirstPass {
    pub n_samples: u64,
    pub outcome: Outcome,
    /// The rows' sample weights, if they carry them.
    pub weights: Option<WeightSum>,
}

/// The sample weights of some rows: their sum `W`, and whether every one is a whole number
/// (then `W < 2^53` is exact and adaptive ranges cut where repeated rows would).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct WeightSum {
    pub total: f64,
    pub integral: bool,
}

impl WeightSum {
    /// The weights of `weights`' rows.
    fn of(weights: &SampleWeights) -> Self {
        Self { total: weights.total(), integral: weights.is_integral() }
    }

    /// The weights of the rows of `self` and `other` together.
    fn and(self, other: Self) -> Self {
        let total = self.total + other.total;
        Self { total, integral: self.integral && other.integral && total < 2f64.powi(53) }
    }
}

impl EvaluationState {
    pub(super) fn new(config: EvaluationConfig) -> Self {
        Self {
            format: FORMAT,
            config,
            shape: None,
            pass: 1,
            first: None,
            ranges: None,
            pass_sums: PassAccumulators::default(),
            rows_in_pass: 0,
            shards: vec![],
            covered: vec![],
        }
    }

    /// The configuration the state was accumulated under.
    pub fn config(&self) -> &EvaluationConfig {
        &self.config
    }

    /// Rows of the first pass.
    pub fn n_samples(&self) -> u64 {
        self.first.as_ref().map_or(0, |f| f.n_samples)
    }

    /// The pass running (1 first; adaptive ranges take more).
    pub fn pass(&self) -> u32 {
        self.pass
    }

    /// Rows the current pass has seen.
    pub fn rows_in_pass(&self) -> u64 {
        self.rows_in_pass
    }

    /// Whether adaptive ranges still need a pass over the rows (the first, or a later one)
    /// before [`report`](Self::report) has every metric.
    pub fn needs_pass(&self) -> bool {
        self.ranges.as_ref().is_some_and(|r| !r.done())
    }

    /// With adaptive ranges, the rows of each shard of the first pass in the order their
    /// states merged: shard `i`'s rows start at sample `shards[..i].sum()` in every later pass
    /// ([`StreamingEvaluation::with_first_row`]).
    pub fn shards(&self) -> &[u64] {
        &self.shards
    }

    /// Records `rows` more rows of the current pass, whose first is sample `first_row`.
    pub(super) fn add_rows(&mut self, first_row: u64, rows: u64) -> Result<()> {
        if self.pass == 1 {
            if self.config.needs_passes() {
                match self.shards.last_mut() {
                    Some(last) => *last += rows,
                    None => self.shards.push(rows),
                }
            }
        } else if rows > 0 {
            cover(&mut self.covered, (first_row, first_row + rows), self.pass)?;
        }
        self.rows_in_pass += rows;
        Ok(())
    }

    /// Refuses a chunk with sample weights (`weighted`) after rows without, or the other way
    /// round: what the first pass's sums or, in a later pass's worker state, the range
    /// searches say of the rows so far.
    pub(super) fn check_weights(&self, weighted: bool) -> Result<()> {
        let seen = self.first.as_ref().map(|f| f.weights.is_some());
        match seen.or(self.ranges.as_ref().map(|r| r.weighted)) {
            Some(w) if w != weighted => Err(CalibError::InvalidConfig(
                "every chunk of a streamed evaluation carries sample weights, or none does".into(),
            )),
            _ => Ok(()),
        }
    }

    pub(super) fn check_shape(&mut self, shape: (usize, ScoreKind)) -> Result<()> {
        match self.shape {
            Some(s) if s != shape => Err(CalibError::InvalidConfig(format!(
                "chunk has K = {} {}, earlier rows K = {} {}",
                shape.0,
                shape.1.describe(),
                s.0,
                s.1.describe()
            ))),
            _ => {
                self.shape = Some(shape);
                Ok(())
            }
        }
    }

    /// Adds the first pass's sums `o` of `rows` rows with sample weights `weights` (if any).
    ///
    /// # Errors
    /// [`CalibError::Incompatible`] when earlier rows carried weights and these do not, or
    /// the other way round ([`Self::check_weights`] refuses such a chunk first).
    pub(super) fn add_first(
        &mut self,
        o: Outcome,
        rows: u64,
        weights: Option<&SampleWeights>,
    ) -> Result<()> {
        self.add_first_sums(o, rows, weights.map(WeightSum::of))
    }

    /// [`Self::add_first`] with the weights' sum.
    fn add_first_sums(&mut self, o: Outcome, rows: u64, weights: Option<WeightSum>) -> Result<()> {
        match &mut self.first {
            None => self.first = Some(FirstPass { n_samples: rows, outcome: o, weights }),
            Some(f) if f.weights.is_some() != weights.is_some() => {
                return Err(incompatible_weights());
            }
            Some(f) => {
                f.n_samples += rows;
                add_outcome(&mut f.outcome, &o);
                f.weights = f.weights.zip(weights).map(|(a, b)| a.and(b));
            }
        }
        Ok(())
    }

    /// The first pass's total weight: `W`, or N without sample weights.
    pub fn total_weight(&self) -> f64 {
        self.first.as_ref().map_or(0.0, |f| f.weights.map_or(f.n_samples as f64, |w| w.total))
    }

    pub(super) fn end_pass(&mut self) -> Result<bool> {
        let Some(ranges) = &mut self.ranges else { return Ok(false) };
        if ranges.done() {
            return Ok(false);
        }
        let n = self.first.as_ref().map_or(0, |f| f.n_samples);
        // Rows of several shards that leave a gap (one stream's rows are one span from 0).
        let gap = !matches!(self.covered.as_slice(), [] | [(0, _)]);
        if self.pass > 1 && self.first.is_some() && gap {
            return Err(CalibError::Incompatible(format!(
                "pass {} saw rows {} of 0..{n}; every shard needs the pass, at its own first row",
                self.pass,
                spans(&self.covered)
            )));
        }
        if self.pass > 1 && self.first.is_some() && self.rows_in_pass != n {
            return Err(CalibError::Incompatible(format!(
                "pass {} saw {} rows, the first {n}; adaptive ranges need the same rows in \
                 every pass",
                self.pass, self.rows_in_pass
            )));
        }
        let sums = std::mem::take(&mut self.pass_sums).into_sums()?;
        let integral = self.first.as_ref().and_then(|f| f.weights).is_none_or(|w| w.integral);
        let more = ranges.end_pass(sums, self.pass == 1, integral)?;
        if more {
            self.pass += 1;
            self.pass_sums = PassAccumulators::new(ranges.empty_sums());
            self.rows_in_pass = 0;
            self.covered.clear();
        }
        Ok(more)
    }

    /// A copy for the workers of a later pass: without the first pass's sums (the
    /// coordinator keeps them), so merging the workers' states back adds them once.
    pub fn for_workers(&self) -> Self {
        Self { first: None, ..self.clone() }
    }

    /// The state of the one-pass metrics only (static bins, NLL, Brier, accuracy;
    /// [`EvaluationConfig::is_one_pass`]): what reports before the adaptive ranges' passes
    /// have run. `None` before the first pass has rows.
    pub fn one_pass(&self) -> Option<Self> {
        let first = self.first.clone()?;
        let kept = self.config.metrics.iter().filter(|m| self.config.is_one_pass(**m));
        let config = self.config.clone().with_metrics(kept.copied().collect());
        Some(Self {
            config,
            pass: 1,
            rows_in_pass: first.n_samples,
            first: Some(first),
            ranges: None,
            pass_sums: PassAccumulators::default(),
            shards: vec![],
            covered: vec![],
            ..self.clone()
        })
    }

    /// The state of the rows of `self` and `other` together.
    ///
    /// # Errors
    /// [`CalibError::Incompatible`] for states of other configurations (the engine aside), K,
    /// kinds of score, passes or range searches.
    pub fn merge(&self, other: &Self) -> Result<Self> {
        let same_config = EvaluationConfig { engine: Engine::Auto, ..self.config.clone() }
            == EvaluationConfig { engine: Engine::Auto, ..other.config.clone() };
        if !same_config {
            return Err(CalibError::Incompatible(
                "states of different metric configurations (metrics, bins, edges, ranges, \
                 thresholds, NLL eps or precision) do not merge"
                    .into(),
            ));
        }
        if self.pass != other.pass {
            return Err(CalibError::Incompatible(format!(
                "a state of pass {} and one of pass {} do not merge",
                self.pass, other.pass
            )));
        }
        let mut out = self.clone();
        out.merge_rows(other)?;
        if let Some(shape) = other.shape {
            out.check_shape(shape).map_err(|e| CalibError::Incompatible(e.to_string()))?;
        }
        if let Some(f) = &other.first {
            out.add_first_sums(f.outcome.clone(), f.n_samples, f.weights)?;
        }
        out.merge_ranges(other)?;
        out.rows_in_pass += other.rows_in_pass;
        Ok(out)
    }

    /// Merges the shard layout (first pass: `other`'s shards follow) and the rows covered.
    fn merge_rows(&mut self, other: &Self) -> Result<()> {
        if self.pass == 1 {
            self.shards.extend(&other.shards);
        } else if self.shards.is_empty() {
            self.shards = other.shards.clone();
        } else if !other.shards.is_empty() && other.shards != self.shards {
            return Err(CalibError::Incompatible(
                "states resumed from different merged states do not merge".into(),
            ));
        }
        for &span in &other.covered {
            cover(&mut self.covered, span, self.pass)?;
        }
        Ok(())
    }

    fn merge_ranges(&mut self, other: &Self) -> Result<()> {
        match (&self.ranges, &other.ranges) {
            (_, None) => return Ok(()),
            (None, Some(_)) => {
                self.ranges = other.ranges.clone();
                self.pass_sums = other.pass_sums.clone();
                return Ok(());
            }
            (Some(a), Some(b)) if a != b => {
                return Err(CalibError::Incompatible(
                    "states of different range searches do not merge".into(),
                ));
            }
            _ => {}
        }
        if self.pass_sums.is_empty() {
            self.pass_sums = other.pass_sums.clone();
            return Ok(());
        }
        let (own, others) = (self.pass_sums.settle()?, other.pass_sums.whole()?);
        for (a, b) in own.iter_mut().zip(others.iter()) {
            match (a, b) {
                (Some(a), Some(b)) => a.add(b.clone())?,
                (a @ None, Some(b)) => *a = Some(b.clone()),
                _ => {}
            }
        }
        Ok(())
    }

    /// The report of the rows the state holds.
    ///
    /// # Errors
    /// As [`StreamingEvaluation::finish`].
    pub fn report(&self) -> Result<Report> {
        StreamingEvaluation::from_state(self.clone())?.finish()
    }

    /// Bytes the state's sums hold (per-bin counts and sums of the first pass), for memory
    /// accounting; the range searches are not counted.
    pub fn size_hint(&self) -> usize {
        let bins = self
            .first
            .as_ref()
            .map_or(0, |f| f.outcome.stats.iter().map(|s| 3 * s.count.len()).sum::<usize>());
        std::mem::size_of::<Self>() + bins * std::mem::size_of::<f64>()
    }
}

/// Adds the rows `span` to the sorted disjoint spans `covered` (joining neighbours).
///
/// # Errors
/// [`CalibError::Incompatible`] when `span` overlaps rows already covered in pass `pass`.
fn cover(covered: &mut Vec<(u64, u64)>, span: (u64, u64), pass: u32) -> Result<()> {
    let i = covered.partition_point(|s| s.1 <= span.0);
    if covered.get(i).is_some_and(|s| s.0 < span.1) {
        let (a, b) = (span.0.max(covered[i].0), span.1.min(covered[i].1));
        return Err(CalibError::Incompatible(format!(
            "rows {a}..{b} were seen twice in pass {pass}; every shard needs its own first row"
        )));
    }
    let joins_left = i > 0 && covered[i - 1].1 == span.0;
    let joins_right = covered.get(i).is_some_and(|s| s.0 == span.1);
    match (joins_left, joins_right) {
        (true, true) => {
            covered[i - 1].1 = covered[i].1;
            covered.remove(i);
        }
        (true, false) => covered[i - 1].1 = span.1,
        (false, true) => covered[i].0 = span.0,
        (false, false) => covered.insert(i, span),
    }
    Ok(())
}

fn incompatible_weights() -> CalibError {
    CalibError::Incompatible(
        "a state of weighted rows and one of unweighted rows do not merge".into(),
    )
}

/// `a..b, c..d` for messages.
fn spans(covered: &[(u64, u64)]) -> String {
    let parts: Vec<String> = covered.iter().map(|(a, b)| format!("{a}..{b}")).collect();
    parts.join(", ")
}

fn add_outcome(acc: &mut Outcome, o: &Outcome) {
    for (a, b) in acc.stats.iter_mut().zip(&o.stats) {
        a.accumulate(b);
    }
    acc.nll_sum += o.nll_sum;
    acc.nll_clipped_sum += o.nll_clipped_sum;
    acc.brier_sum += o.brier_sum;
    acc.correct += o.correct;
}
