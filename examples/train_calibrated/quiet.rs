//! A renderer for burn-train's `Learner` that prints the validation metrics every 10 epochs
//! (burn-train's own CLI renderer prints a line per batch).

use std::collections::HashMap;

use calib_burn_train::burn_train::LearnerSummary;
use calib_burn_train::burn_train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use calib_burn_train::burn_train::metric::{MetricDefinition, MetricId};
use calib_burn_train::burn_train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};

/// The latest validation value of each metric, printed at every 10th epoch's end.
#[derive(Default)]
pub struct Quiet {
    names: HashMap<MetricId, String>,
    latest: Vec<(MetricId, f64)>,
}

impl MetricsRendererTraining for Quiet {
    fn update_train(&mut self, _state: MetricState) {}

    fn update_valid(&mut self, state: MetricState) {
        if let MetricState::Numeric(entry, Some(value)) = state {
            self.latest.retain(|(id, _)| *id != entry.metric_id);
            self.latest.push((entry.metric_id, value.current()));
        }
    }

    fn on_train_end(
        &mut self,
        _summary: Option<LearnerSummary>,
    ) -> Result<(), Box<dyn core::error::Error>> {
        Ok(())
    }
}

impl TrainingProgressLogger for Quiet {
    fn start(&mut self, _: usize, _: usize, _: Option<usize>, _: Option<&str>) {}

    fn update_epoch(&mut self, epoch: usize) {
        if epoch.is_multiple_of(10) {
            let values: Vec<String> = self
                .latest
                .iter()
                .map(|(id, v)| format!("{} {v:.4}", self.names.get(id).map_or("?", |n| n.as_str())))
                .collect();
            println!("  epoch {epoch:>2}: valid {}", values.join(", "));
        }
    }

    fn start_split(&mut self, _: &str, _: usize) {}

    fn update_split(&mut self, _: usize) {}

    fn end_split(&mut self) {}

    fn end(&mut self) {}

    fn log_event_training(&mut self, _: String) {}
}

impl EvaluationProgressLogger for Quiet {
    fn start_global_progress(&mut self, _: usize) {}

    fn start_test(&mut self, _: &str, _: usize) {}

    fn update_test_progress(&mut self, _: usize) {}

    fn end_test(&mut self) {}

    fn end_global_progress(&mut self) {}

    fn log_event_evaluation(&mut self, _: String) {}
}

impl MetricsRendererEvaluation for Quiet {
    fn update_test(&mut self, _: EvaluationName, _: MetricState) {}
}

impl MetricsRenderer for Quiet {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        self.names.insert(definition.metric_id, definition.name.to_string());
    }
}
