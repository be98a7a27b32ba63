//! [`EvaluationConfig`]: several metrics in one pass, sharing all the work.
//!
//! Probabilities are computed once, each distinct binning once (ECE and top-label ECE share
//! one set of statistics, so do SCE and the Brier decomposition, so do RMSCE and the L2
//! errors), and the device is read once per row chunk.

use burn::config::Config;

use crate::backend::Precision;
use crate::binning::Binning;
use crate::curve::ReliabilityCurveConfig;
use crate::engine::{
    Engine, Outcome, Plan, Records, StatRequest, Workspace, run_fused, run_tensor,
};
use crate::error::{CalibError, Result};
use crate::input::{Predictions, SampleWeights, ScoreKind};
use crate::metrics::{
    BinningFreeTests, BrierDecomposition, CalibrationErrorConfig, CalibrationErrorValue,
    Computation, LogProbabilities, Metric, PairEstimator, RefinementSplit, RowSum, SmoothEce,
};
use crate::pairs::{PairSet, ScorePairs};
use crate::report::{MetricValue, Report};
use crate::stats::BinStats;

/// Which metrics to compute, and how.
///
/// # Example
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use calib_core::{EvaluationConfig, Metric, input::Predictions};
///
/// let device = Device::flex();
/// let logits = Tensor::<2>::from_floats([[2.0, 0.0], [0.0, 1.0], [3.0, 0.5], [0.2, 0.1]], &device);
/// let labels = Tensor::<1, Int>::from_ints([0, 1, 1, 1], &device);
/// let preds = Predictions::logits(logits, labels).unwrap();
/// let report = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Accuracy])
///     .evaluate(&preds).unwrap();
/// assert_eq!(report.get(Metric::Accuracy), Some(0.5));
/// ```
#[derive(Config, Debug, PartialEq)]
pub struct EvaluationConfig {
    /// Metrics to compute.
    #[config(default = "Metric::defaults()")]
    pub metrics: Vec<Metric>,
    /// B of the even-bin metrics (ECE, MCE, SCE, top-label ECE, Brier decomposition).
    #[config(default = 15)]
    pub n_bins: usize,
    /// Custom right-closed bin edges `0 = e0 < e1 < ... < eB = 1` for the even-bin metrics
    /// (they replace the `n_bins` even bins; adaptive metrics keep `n_ranges`).
    pub edges: Option<Vec<f64>>,
    /// R of the adaptive metrics (RMSCE, ACE, TACE, debiased and plug-in L2).
    #[config(default = 15)]
    pub n_ranges: usize,
    /// TACE's eps (strict).
    #[config(default = 0.01)]
    pub tace_threshold: f64,
    /// Clip `p[i,y]` at this eps in the NLL (scikit-learn's `log_loss` used 1e-15); `None`:
    /// exact.
    pub nll_eps: Option<f64>,
    /// Float precision on the device (`Auto`: f64 on CPU backends, f32 on GPU).
    #[config(default = "Precision::Auto")]
    pub precision: Precision,
    /// Which engine computes the statistics (`Auto`: fused on CPU, tensor ops on GPU).
    #[config(default = "Engine::Auto")]
    pub engine: Engine,
    /// The calibration and refinement metrics: `None` refits on the evaluated rows, `Some(F)`
    /// cross-fits over F folds (row `i` in fold `i mod F`).
    pub split_fits: Option<usize>,
}

impl Default for EvaluationConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl EvaluationConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.metrics.is_empty() {
            return Err(CalibError::InvalidConfig("no metric requested".into()));
        }
        if self.n_bins == 0 || self.n_ranges == 0 {
            return Err(CalibError::InvalidConfig("the number of bins must be at least 1".into()));
        }
        if let Some(edges) = &self.edges {
            crate::binning::validate_edges(edges)?;
        }
        if let Some(eps) = self.nll_eps
            && !(eps > 0.0 && eps < 1.0)
        {
            return Err(CalibError::InvalidConfig(format!("nll eps {eps} outside (0, 1)")));
        }
        if let Some(folds) = self.split_fits
            && folds < 2
        {
            return Err(CalibError::InvalidConfig(format!("{folds} split fits: at least 2")));
        }
        Ok(())
    }

    /// Computes every requested metric on `preds`.
    pub fn evaluate(&self, preds: &Predictions) -> Result<Report> {
        self.evaluate_in(preds, &mut Workspace::new())
    }

    /// [`evaluate`](Self::evaluate) with the fused engine's buffers kept in `workspace`
    /// between calls (repeated evaluations skip the cost of fresh memory; see [`Workspace`]).
    /// The same report, bit for bit.
    ///
    /// Predictions with sample weights are evaluated on the host from each row's recorded
    /// contributions (the bootstrap's records), whatever the engine: every bin sum, count and
    /// row mean is weighted (docs/conventions.md, "Sample weights").
    pub fn evaluate_in(&self, preds: &Predictions, workspace: &mut Workspace) -> Result<Report> {
        self.validate()?;
        if preds.weights().is_some_and(|w| w.total() <= 0.0) {
            return Err(CalibError::InvalidConfig(
                "the sample weights sum to 0: at least one must be positive".into(),
            ));
        }
        let (plan, binned) = self.plan();
        let outcome = run(preds, &plan, self.precision, self.engine, workspace)?;
        let (n, total, k) = (preds.n_samples(), preds.total_weight(), preds.n_classes());
        let mut report = self.assemble(&binned, &outcome, n, total, k, preds.kind());
        let weights = preds.weights().map(SampleWeights::values);
        if self.metrics.iter().any(|m| m.uses_pairs()) {
            let pairs = ScorePairs::of(preds, PairSet::TopLabel)?;
            self.fill_pair_metrics(&pairs, weights, &mut report);
        }
        if self.refits() {
            let split =
                RefinementSplit::of(&LogProbabilities::of(preds)?, weights, self.split_fits)?;
            self.fill_refit_metrics(&split, &mut report);
        }
        Ok(report)
    }

    /// Computes every requested metric on the rows of `parts`, in order: the report of their
    /// concatenation, without forming it (an input larger than one buffer, or than memory,
    /// held as parts on a device).
    ///
    /// On a GPU device (engine [`Engine::Auto`] or [`Engine::Kernels`], f32) the kernels run
    /// over the parts where they lie, adaptive ranges included, and only bin counts come back;
    /// elsewhere the parts stream through [`crate::StreamingEvaluation`], with the further
    /// passes its adaptive ranges take. One part is [`Self::evaluate`].
    ///
    /// # Errors
    /// [`CalibError::Empty`] without parts; [`CalibError::InvalidConfig`] for parts of
    /// differing K or kind, and (over several parts) for the metrics that sort, smooth or
    /// refit every score at once, as [`Self::streaming`] says; otherwise as
    /// [`Self::evaluate`].
    pub fn evaluate_parts(&self, parts: &[Predictions]) -> Result<Report> {
        self.validate()?;
        let [first, rest @ ..] = parts else { return Err(CalibError::Empty) };
        if rest.is_empty() {
            return self.evaluate(first);
        }
        let shape = |p: &Predictions| (p.n_classes(), p.kind());
        if let Some(other) = rest.iter().find(|p| shape(p) != shape(first)) {
            return Err(CalibError::InvalidConfig(format!(
                "parts of {} and {} classes ({:?} and {:?} scores): every part must have the \
                 same classes and kind",
                first.n_classes(),
                other.n_classes(),
                first.kind(),
                other.kind()
            )));
        }
        #[cfg(feature = "wgpu")]
        if let Some(report) = self.evaluate_parts_on_device(parts)? {
            return Ok(report);
        }
        let mut stream = self.streaming()?;
        loop {
            parts.iter().try_for_each(|p| stream.update(p))?;
            if !stream.end_pass()? {
                return stream.finish();
            }
        }
    }

    /// [`Self::evaluate_parts`] by the kernels, when they take every part (`None` otherwise).
    #[cfg(feature = "wgpu")]
    fn evaluate_parts_on_device(&self, parts: &[Predictions]) -> Result<Option<Report>> {
        let (plan, binned) = self.plan();
        let unweighted = parts.iter().all(|p| p.weights().is_none());
        if !(matches!(self.engine, Engine::Auto | Engine::Kernels)
            && self.can_stream()
            && unweighted
            && crate::engine::supports_parts(parts, &plan, self.precision))
        {
            return Ok(None);
        }
        let outcome = crate::engine::run_cube_parts(parts, &plan)?;
        let n: usize = parts.iter().map(Predictions::n_samples).sum();
        let (k, kind) = (parts[0].n_classes(), parts[0].kind());
        Ok(Some(self.assemble(&binned, &outcome, n, n as f64, k, kind)))
    }

    /// Whether a calibration or refinement metric is asked for.
    pub(crate) fn refits(&self) -> bool {
        self.metrics.iter().any(|m| matches!(m.computation(), Computation::Refit(..)))
    }

    /// Writes the calibration and refinement metrics of `split` into `report`.
    pub(crate) fn fill_refit_metrics(&self, split: &RefinementSplit, report: &mut Report) {
        for v in &mut report.values {
            if let Computation::Refit(loss, part) = v.metric.computation() {
                v.value = split.value(loss, part);
            }
        }
    }

    /// Writes the metrics computed from the sorted or smoothed pairs (the binning-free tests,
    /// smooth ECE) into `report`, each estimator run once whatever the number of its metrics.
    /// With `weights` (row `i` of `pairs` weighted by `weights[i]`), the tests and the kernel
    /// estimators are weighted.
    pub(crate) fn fill_pair_metrics(
        &self,
        pairs: &ScorePairs,
        weights: Option<&[f64]>,
        report: &mut Report,
    ) {
        let wants = |e: PairEstimator| {
            self.metrics.iter().any(|m| matches!(m.computation(), Computation::Pairs(p) if p == e))
        };
        let tests = wants(PairEstimator::BinningFreeTests)
            .then(|| BinningFreeTests::weighted(pairs, weights));
        let smooth =
            wants(PairEstimator::SmoothEce).then(|| SmoothEce::weighted(pairs, weights).value);
        // Pairs are never empty here and the bandwidth is Silverman's: lce_ece cannot fail.
        let lce = wants(PairEstimator::LceEce).then(|| {
            ReliabilityCurveConfig::new().lce_ece_weighted(pairs, weights).unwrap_or(f64::NAN)
        });
        for v in &mut report.values {
            let Computation::Pairs(estimator) = v.metric.computation() else { continue };
            v.value = match estimator {
                PairEstimator::BinningFreeTests => tests.as_ref().and_then(|t| t.value(v.metric)),
                PairEstimator::SmoothEce => smooth,
                PairEstimator::LceEce => lce,
            }
            .unwrap_or(v.value);
        }
    }

    /// A validated configuration's plan: the deduplicated statistics and, per metric, its
    /// binned configuration and request index.
    pub(crate) fn plan(&self) -> (Plan, Vec<Binned>) {
        let mut plan = Plan { nll_eps: self.nll_eps, ..Plan::default() };
        let mut binned = Vec::new();
        for &m in &self.metrics {
            let config = self.binned(m);
            let request = config.as_ref().map(|c| plan.request(StatRequest::for_config(c)));
            if matches!(m.computation(), Computation::Sum(_) | Computation::BrierDecomposition(_)) {
                plan.scalars = true;
            }
            binned.push((m, config, request));
        }
        (plan, binned)
    }

    /// The binned configuration of `metric` under these settings (custom edges replace even
    /// bins), `None` for the unbinned metrics.
    pub(crate) fn binned(&self, metric: Metric) -> Option<CalibrationErrorConfig> {
        let config = metric.calibration_error(self.n_bins, self.n_ranges, self.tace_threshold)?;
        Some(match (&self.edges, &config.binning) {
            (Some(edges), Binning::Even { .. }) => {
                config.with_binning(Binning::Custom { edges: edges.clone() })
            }
            _ => config,
        })
    }

    /// The report of `outcome` (statistics and sums over `n_samples` rows of total weight
    /// `total`: N without weights).
    pub(crate) fn assemble(
        &self,
        binned: &[Binned],
        outcome: &Outcome,
        n_samples: usize,
        total: f64,
        n_classes: usize,
        kind: ScoreKind,
    ) -> Report {
        let n = total;
        let brier = outcome.brier_sum / n;
        let mut report =
            Report { n_samples, n_classes, kind, values: Vec::new(), brier_decomposition: None };
        for (metric, config, request) in binned {
            let metric = *metric;
            let value = match (metric.computation(), config, request) {
                (Computation::BrierDecomposition(_), _, Some(r)) => {
                    let d = BrierDecomposition::from_stats(&outcome.stats[*r], total, brier);
                    report.brier_decomposition = Some(d);
                    MetricValue {
                        metric,
                        value: d.reliability,
                        per_class: vec![],
                        bins: Some(outcome.stats[*r].clone()),
                    }
                }
                (Computation::Binned(_), Some(config), Some(r)) => {
                    let stats = display_stats(config, &outcome.stats[*r]);
                    let CalibrationErrorValue { value, per_group } =
                        config.reduce(&outcome.stats[*r]);
                    MetricValue { metric, value, per_class: per_group, bins: Some(stats) }
                }
                (Computation::Sum(sum), ..) => {
                    let value = match sum {
                        RowSum::Nll if self.nll_eps.is_some() => outcome.nll_clipped_sum / n,
                        RowSum::Nll => outcome.nll_sum / n,
                        RowSum::Brier => brier,
                        RowSum::Correct => outcome.correct / n,
                    };
                    MetricValue { metric, value, per_class: vec![], bins: None }
                }
                // Filled in from the sorted pairs or the refit by the caller that has every row.
                (Computation::Pairs(_) | Computation::Refit(..), ..) => {
                    MetricValue { metric, value: f64::NAN, per_class: vec![], bins: None }
                }
                _ => unreachable!("every binned metric has a request"),
            };
            report.values.push(value);
        }
        report
    }
}

/// A metric, its binned configuration (if binned) and the index of its statistics request.
pub(crate) type Binned = (Metric, Option<CalibrationErrorConfig>, Option<usize>);

/// The statistics a diagram of this metric shows: pooled unless class-conditional.
fn display_stats(config: &CalibrationErrorConfig, stats: &BinStats) -> BinStats {
    if !config.class_conditional && stats.n_groups > 1 { stats.pooled() } else { stats.clone() }
}

/// Runs `plan` with the chosen engine; weighted predictions on the host records
/// (whatever the engine).
pub(crate) fn run(
    preds: &Predictions,
    plan: &Plan,
    precision: Precision,
    engine: Engine,
    workspace: &mut Workspace,
) -> Result<crate::engine::Outcome> {
    engine.check(precision)?;
    if let Some(weights) = preds.weights() {
        return Ok(Records::new(preds, plan)?.weighted(weights));
    }
    if engine.uses_host(preds.device(), precision) {
        return run_fused(preds, plan, workspace);
    }
    #[cfg(feature = "wgpu")]
    if matches!(engine, Engine::Auto | Engine::Kernels)
        && crate::engine::cube_supports(preds, plan, precision)
    {
        return crate::engine::run_cube(preds, plan);
    }
    if engine == Engine::Kernels {
        return Err(CalibError::InvalidConfig(
            "the kernel engine takes multi-class input on a GPU device (feature `wgpu`) with at \
             most 256 bins per class-wise request; use Engine::Tensor"
                .into(),
        ));
    }
    run_tensor(preds, plan, precision)
}

impl CalibrationErrorConfig {
    /// Computes this calibration error on `preds` (default precision and engine).
    ///
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use calib_core::{binning::Binning, input::Predictions, metrics::CalibrationErrorConfig};
    ///
    /// // McCaffrey's worked example: 10 binary items, 3 even bins, CE = 0.241.
    /// let device = Device::flex();
    /// let s = [0.61, 0.39, 0.31, 0.76, 0.22, 0.59, 0.92, 0.83, 0.57, 0.41];
    /// let y = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0];
    /// let preds = Predictions::binary(Tensor::from_floats(s, &device), Tensor::from_ints(y, &device)).unwrap();
    /// let ce = CalibrationErrorConfig::new().with_binning(Binning::Even { n_bins: 3 }).compute(&preds).unwrap();
    /// assert!((ce.value - 0.241).abs() < 5e-4);
    /// ```
    pub fn compute(&self, preds: &Predictions) -> Result<CalibrationErrorValue> {
        self.compute_with(preds, Precision::Auto, Engine::Auto)
    }

    /// Computes this calibration error with an explicit precision and engine.
    pub fn compute_with(
        &self,
        preds: &Predictions,
        precision: Precision,
        engine: Engine,
    ) -> Result<CalibrationErrorValue> {
        self.validate()?;
        let mut plan = Plan::default();
        plan.request(StatRequest::for_config(self));
        let outcome = run(preds, &plan, precision, engine, &mut Workspace::new())?;
        Ok(self.reduce(&outcome.stats[0]))
    }

    /// Several calibration errors of `preds` in one pass (distinct binnings computed once):
    /// one value per configuration, in order.
    ///
    /// # Errors
    /// As [`Self::compute`], for the first invalid configuration or a failed pass.
    pub fn compute_many(
        configs: &[CalibrationErrorConfig],
        preds: &Predictions,
    ) -> Result<Vec<CalibrationErrorValue>> {
        configs.iter().try_for_each(Self::validate)?;
        let mut plan = Plan::default();
        let requests: Vec<usize> =
            configs.iter().map(|c| plan.request(StatRequest::for_config(c))).collect();
        let outcome = run(preds, &plan, Precision::Auto, Engine::Auto, &mut Workspace::new())?;
        Ok(configs.iter().zip(requests).map(|(c, r)| c.reduce(&outcome.stats[r])).collect())
    }

    /// The bin statistics this configuration reduces (for diagrams, merging, serialising).
    pub fn statistics(
        &self,
        preds: &Predictions,
        precision: Precision,
        engine: Engine,
    ) -> Result<BinStats> {
        self.validate()?;
        let mut plan = Plan::default();
        plan.request(StatRequest::for_config(self));
        Ok(run(preds, &plan, precision, engine, &mut Workspace::new())?.stats.remove(0))
    }
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::input::InputConfig;

    /// Binary input: a prediction is right when `s > 0.5` agrees with the label (both
    /// engines); the binned metrics keep the label as the outcome of `(s, y)`.
    #[test]
    fn binary_accuracy_compares_the_prediction_with_the_label() {
        let config = InputConfig::new(ScoreKind::Binary);
        let scores = [0.9f64, 0.8, 0.2, 0.1];
        let preds =
            Predictions::from_host(&scores, 1, &[1, 1, 1, 0], config, &Device::flex()).unwrap();
        for engine in [Engine::Fused, Engine::Tensor] {
            let report = EvaluationConfig::new()
                .with_metrics(vec![Metric::Accuracy, Metric::Ece])
                .with_engine(engine)
                .evaluate(&preds)
                .unwrap();
            assert_eq!(report.get(Metric::Accuracy), Some(0.75), "{engine:?}");
            let ece = (0.1 + 0.2 + 0.8 + 0.1) / 4.0;
            assert!((report.get(Metric::Ece).unwrap() - ece).abs() < 1e-12, "{engine:?}");
        }
    }
}
