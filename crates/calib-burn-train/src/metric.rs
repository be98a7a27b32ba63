//! [`CalibrationMetric`]: one of calib's metrics as a burn-train metric.

use std::sync::Arc;

use burn::data::dataloader::Progress;
use burn::tensor::{Int, Tensor, TensorReadError};
use burn_train::metric::{
    Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes, NumericEntry,
    SerializedEntry,
};
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::{CalibError, EvaluationConfig, Metric as Measure, StreamingEvaluation};

use crate::CalibrationInput;

/// A calibration metric over an epoch; see the crate docs.
#[derive(Clone)]
pub struct CalibrationMetric {
    name: MetricName,
    measure: Measure,
    config: EvaluationConfig,
    kind: ScoreKind,
    epoch: Epoch,
    /// The epoch's value so far (static bins) or at `compute` (adaptive).
    value: Option<f64>,
}

/// What an epoch keeps.
#[derive(Clone)]
enum Epoch {
    /// Mergeable statistics: only K x B sums leave the device per batch.
    Merged(Box<StreamingEvaluation>),
    /// The outputs and labels, on their device, for metrics that rank the whole epoch.
    Outputs(Vec<Tensor<2>>, Vec<Tensor<1, Int>>),
}

impl CalibrationMetric {
    /// Top-label ECE, 15 even bins.
    pub fn ece() -> Self {
        Self::new(Measure::Ece)
    }

    /// Static (class-wise) calibration error, 15 even bins.
    pub fn sce() -> Self {
        Self::new(Measure::Sce)
    }

    /// Adaptive calibration error, 15 ranges.
    pub fn ace() -> Self {
        Self::new(Measure::Ace)
    }

    /// Thresholded ACE (eps = 0.01), 15 ranges.
    pub fn tace() -> Self {
        Self::new(Measure::Tace)
    }

    /// Mean negative log-likelihood.
    pub fn nll() -> Self {
        Self::new(Measure::Nll)
    }

    /// Mean Brier score.
    pub fn brier() -> Self {
        Self::new(Measure::Brier)
    }

    /// Any of calib's metrics that does not need every row at once (the pair metrics and the
    /// calibration/refinement parts do).
    ///
    /// # Panics
    /// For those (`ks`, `smece`, `lce_ece`, `calibration_nll`, ...): use `calib eval` on the
    /// epoch's outputs for those.
    pub fn new(measure: Measure) -> Self {
        assert!(
            !measure.needs_all_rows(),
            "{measure} needs every row at once: not a training metric"
        );
        Self::with_config(measure, EvaluationConfig::new())
    }

    /// `measure` with these settings (bins, ranges, TACE's threshold, precision); the metric
    /// list of `config` is replaced by `measure`.
    pub fn with_config(measure: Measure, config: EvaluationConfig) -> Self {
        let config = config.with_metrics(vec![measure]);
        Self {
            name: Arc::new(format!("Calibration {}", measure.name().to_uppercase())),
            measure,
            epoch: Epoch::empty(&config),
            config,
            kind: ScoreKind::Logits,
            value: None,
        }
    }

    /// Read the outputs as probabilities instead of logits.
    pub fn probabilities(mut self) -> Self {
        self.kind = ScoreKind::Probabilities;
        self
    }

    /// The entry burn-train logs: the epoch's value so far, no per-batch value.
    fn entry(&self, last: bool) -> SerializedEntry {
        match self.value {
            Some(v) => {
                let serialized =
                    if last { NumericEntry::Final(v) } else { NumericEntry::Value(v) }.serialize();
                SerializedEntry::new(format!("epoch {v:.4} - batch N/A"), serialized)
            }
            None => SerializedEntry::not_available(None),
        }
    }
}

impl Epoch {
    /// A new epoch: merged statistics where the metric is a one-pass sum, else the outputs
    /// (adaptive ranges would need a second pass over the epoch).
    fn empty(config: &EvaluationConfig) -> Self {
        match config.streaming() {
            Ok(stream) if !config.needs_passes() => Self::Merged(Box::new(stream)),
            _ => Self::Outputs(Vec::new(), Vec::new()),
        }
    }
}

/// calib's errors as burn-train's read errors (the only error a metric can return).
fn read_error(e: CalibError) -> TensorReadError {
    let reason = format!("calib: {e}");
    TensorReadError::Execution(burn::backend::ExecutionError::WithContext { reason })
}

impl Metric for CalibrationMetric {
    type Input = CalibrationInput;

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        let higher_is_better = self.measure == Measure::Accuracy;
        NumericAttributes { unit: None, higher_is_better }.into()
    }

    fn update(
        &mut self,
        item: &CalibrationInput,
        _metadata: &MetricMetadata,
    ) -> Result<SerializedEntry, TensorReadError> {
        match &mut self.epoch {
            Epoch::Merged(stream) => {
                let config = InputConfig::new(self.kind);
                let batch =
                    Predictions::from_tensors(item.outputs.clone(), item.targets.clone(), config)
                        .map_err(read_error)?;
                stream.update(&batch).map_err(read_error)?;
                self.value = stream.finish().map_err(read_error)?.get(self.measure);
            }
            Epoch::Outputs(outputs, targets) => {
                outputs.push(item.outputs.clone());
                targets.push(item.targets.clone());
            }
        }
        Ok(self.entry(false))
    }

    fn compute(&mut self) -> Result<SerializedEntry, TensorReadError> {
        if let Epoch::Outputs(outputs, targets) = &self.epoch
            && !outputs.is_empty()
        {
            let (values, labels) =
                (Tensor::cat(outputs.clone(), 0), Tensor::cat(targets.clone(), 0));
            let preds = Predictions::from_tensors(values, labels, InputConfig::new(self.kind))
                .map_err(read_error)?;
            self.value = self.config.evaluate(&preds).map_err(read_error)?.get(self.measure);
        }
        Ok(self.entry(true))
    }

    fn clear(&mut self) {
        self.value = None;
        self.epoch = Epoch::empty(&self.config);
    }
}

impl Numeric for CalibrationMetric {
    fn value(&self) -> Option<NumericEntry> {
        self.value.map(NumericEntry::Value)
    }

    fn running_value(&self) -> Option<NumericEntry> {
        self.value.map(NumericEntry::Value)
    }

    /// # Panics
    /// Before any batch (static bins) or before `compute` (adaptive ranges), as burn-train's
    /// own epoch metrics do.
    fn final_value(&self) -> NumericEntry {
        NumericEntry::Final(self.value.expect("compute must run on a non-empty epoch first"))
    }
}

/// Metadata for calling the metrics outside a `Learner` (tests, custom loops).
pub fn metadata() -> MetricMetadata {
    let progress = Progress { items_processed: 0, items_total: 0, unit: None };
    MetricMetadata { progress, iteration: None, lr: None }
}
