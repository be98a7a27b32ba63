//! [`Report`]: the values of an evaluation, with everything a reliability diagram needs.

use serde::{Deserialize, Serialize};

use crate::input::ScoreKind;
use crate::metrics::{BrierDecomposition, Metric};
use crate::stats::{BinStats, BinSummary};

/// One metric's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MetricValue {
    /// Which metric.
    pub metric: Metric,
    /// The value (for the Brier decomposition: the reliability term).
    pub value: f64,
    /// Per-class values of class-conditional metrics (`E_g`), else empty.
    pub per_class: Vec<f64>,
    /// The bin statistics it was reduced from (binned metrics only).
    pub bins: Option<BinStats>,
}

/// The result of [`crate::EvaluationConfig::evaluate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// N.
    pub n_samples: usize,
    /// K (2 for binary input).
    pub n_classes: usize,
    /// What the scores were.
    pub kind: ScoreKind,
    /// One entry per requested metric, in request order.
    pub values: Vec<MetricValue>,
    /// The Brier decomposition, when requested.
    pub brier_decomposition: Option<BrierDecomposition>,
}

impl Report {
    /// The value of `metric`, if it was computed.
    pub fn get(&self, metric: Metric) -> Option<f64> {
        self.values.iter().find(|v| v.metric == metric).map(|v| v.value)
    }

    /// `(name, value)` pairs; the Brier decomposition adds `brier_reliability`,
    /// `brier_resolution` and `brier_uncertainty`.
    pub fn named_values(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for v in &self.values {
            match (v.metric, self.brier_decomposition) {
                (Metric::BrierDecomposition, Some(d)) => {
                    out.push(("brier_reliability".into(), d.reliability));
                    out.push(("brier_resolution".into(), d.resolution));
                    out.push(("brier_uncertainty".into(), d.uncertainty));
                }
                _ => out.push((v.metric.name().to_string(), v.value)),
            }
        }
        out
    }

    /// Reliability-diagram data of a binned metric: the bins of `group` (0 for pooled
    /// metrics, the class for class-conditional ones).
    pub fn reliability(&self, metric: Metric, group: usize) -> Option<Vec<BinSummary>> {
        let v = self.values.iter().find(|v| v.metric == metric)?;
        let bins = v.bins.as_ref()?;
        if group >= bins.n_groups {
            return None;
        }
        Some(bins.summaries(group))
    }
}
