//! [`ReliabilityDiagram`]: the numbers a reliability diagram draws, taken from calib-core's bin
//! statistics (so what is drawn is what the metrics reduce).

use calib_core::binning::Binning;
use calib_core::engine::Engine;
use calib_core::input::{Predictions, ScoreKind};
use calib_core::stats::{AccuracyInterval, BinSummary};
use calib_core::{Metric, Precision};

use super::CurveOverlay;
use super::binomial::acceptance_interval;
use super::scores::{DiagramScores, format_percent};
use crate::error::plain;
use crate::error::{CliError, Result};

/// How a diagram bins its scores.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagramConfig {
    /// Scores to bin.
    pub scores: DiagramScores,
    /// Bins (even) or ranges (adaptive).
    pub n_bins: usize,
    /// Equal-mass ranges instead of even bins.
    pub adaptive: bool,
    /// Custom right-closed edges from 0 to 1 instead of even bins.
    pub edges: Option<Vec<f64>>,
    /// 1 - coverage of the acceptance intervals and of the accuracy intervals (default 0.05).
    pub alpha: f64,
    /// Also draw each bin's interval of its accuracy, by this method.
    pub accuracy_interval: Option<AccuracyInterval>,
}

impl DiagramConfig {
    /// 15 even top-label bins, 95 % intervals.
    pub fn new() -> Self {
        Self {
            scores: DiagramScores::TopLabel,
            n_bins: 15,
            adaptive: false,
            edges: None,
            alpha: 0.05,
            accuracy_interval: None,
        }
    }
}

impl Default for DiagramConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// One drawn bin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiagramBin {
    /// Left edge of the bar.
    pub lower: f64,
    /// Right edge of the bar.
    pub upper: f64,
    /// Samples in the bin.
    pub count: f64,
    /// Mean confidence (`None` when empty).
    pub confidence: Option<f64>,
    /// Accuracy, the bar's height (`None` when empty).
    pub accuracy: Option<f64>,
    /// Binomial acceptance interval of the accuracy under calibration.
    pub interval: Option<(f64, f64)>,
    /// Confidence interval of the accuracy itself, when asked for.
    pub accuracy_interval: Option<(f64, f64)>,
}

/// Everything a reliability diagram shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ReliabilityDiagram {
    /// The bins, left to right.
    pub bins: Vec<DiagramBin>,
    /// Samples binned.
    pub n_samples: f64,
    /// `sum_b (n_b / N) |acc_b - conf_b|` over these bins: the ECE for top-label even bins,
    /// class k's ECE term for `--class k`.
    pub calibration_error: f64,
    /// Label of the x axis.
    pub x_label: String,
    /// Short description for the title (`15 even bins`, `15 equal-mass ranges`).
    pub binning: String,
    /// Legend of the acceptance intervals, with the level used (`95% acceptance interval`).
    pub acceptance_label: String,
    /// Legend of the accuracy intervals, when drawn (`95% Clopper-Pearson interval`).
    pub accuracy_label: Option<String>,
    /// The continuous reliability curve drawn over the bars, when asked for.
    pub curve: Option<CurveOverlay>,
}

impl ReliabilityDiagram {
    /// Bins `preds` by `config` with calib-core's engine.
    ///
    /// # Errors
    /// [`CliError::Usage`] for a class out of range or zero bins; [`CliError::Core`] when the
    /// engine fails.
    pub fn compute(preds: &Predictions, config: &DiagramConfig) -> Result<Self> {
        if config.n_bins == 0 {
            return Err(CliError::Usage("--bins must be at least 1".into()));
        }
        let (metric, group) = match (config.scores, config.adaptive) {
            (DiagramScores::TopLabel, false) => (Metric::Ece, 0),
            (DiagramScores::TopLabel, true) => (Metric::Rmsce, 0),
            (DiagramScores::Class(k), adaptive) => {
                let n_classes = preds.n_classes();
                if k >= n_classes {
                    return Err(CliError::Usage(format!(
                        "--class {k} is out of range: the data has K = {n_classes} classes \
                         (0..{})",
                        n_classes - 1
                    )));
                }
                // Binary scores bin one class, the positive one (class-wise group 0).
                let group = match (preds.kind(), k) {
                    (ScoreKind::Binary, 1) => 0,
                    (ScoreKind::Binary, _) => {
                        return Err(CliError::Usage(
                            "--class 0 of binary scores: their bins hold the positive class; \
                             draw --class 1 (class 0's diagram is its mirror image)"
                                .into(),
                        ));
                    }
                    _ => k,
                };
                (if adaptive { Metric::Ace } else { Metric::Sce }, group)
            }
        };
        let mut ce = metric
            .calibration_error(config.n_bins, config.n_bins, 0.0)
            .ok_or_else(|| CliError::Usage(format!("{metric} has no bins")))?;
        if let (Some(edges), false) = (&config.edges, config.adaptive) {
            Binning::Custom { edges: edges.clone() }
                .validate()
                .map_err(|e| CliError::Usage(plain(e)))?;
            ce = ce.with_binning(Binning::Custom { edges: edges.clone() });
        }
        let stats = ce
            .statistics(preds, Precision::Auto, Engine::default())
            .map_err(|e| CliError::core("reliability diagram", e))?;
        // Top-label even bins come grouped by predicted class (shared with top-label ECE); the
        // diagram, like ECE, pools them.
        let stats = if stats.n_groups > 1 && config.scores == DiagramScores::TopLabel {
            stats.pooled()
        } else {
            stats
        };
        let summaries = stats.summaries(group);
        let n = stats.group_count(group);
        Ok(Self::from_summaries(&summaries, n, config))
    }

    /// The diagram of bin summaries (as [`calib_core::stats::BinStats::summaries`] gives them)
    /// of `n` samples.
    pub fn from_summaries(summaries: &[BinSummary], n: f64, config: &DiagramConfig) -> Self {
        let edges = bar_edges(summaries);
        let bins: Vec<DiagramBin> = summaries
            .iter()
            .zip(edges)
            .map(|(s, (lower, upper))| DiagramBin {
                lower,
                upper,
                count: s.count,
                confidence: s.confidence,
                accuracy: s.accuracy,
                interval: s.confidence.and_then(|c| acceptance_interval(s.count, c, config.alpha)),
                accuracy_interval: config
                    .accuracy_interval
                    .and_then(|m| s.accuracy_interval(m, 1.0 - config.alpha)),
            })
            .collect();
        let calibration_error = bins
            .iter()
            .filter_map(|b| Some(b.count / n * (b.accuracy? - b.confidence?).abs()))
            .sum::<f64>();
        let x_label = match config.scores {
            DiagramScores::TopLabel => "confidence (top-label probability)".to_string(),
            DiagramScores::Class(k) => format!("probability of class {k}"),
        };
        let binning = match (&config.edges, config.adaptive) {
            (_, true) => format!("{} equal-mass ranges", config.n_bins),
            (Some(edges), false) => format!("{} custom bins", edges.len() - 1),
            (None, false) => format!("{} even bins", config.n_bins),
        };
        let percent = format_percent(1.0 - config.alpha);
        let acceptance_label = format!("{percent} acceptance interval (if calibrated)");
        let accuracy_label = config
            .accuracy_interval
            .map(|m| format!("{percent} {} interval of accuracy", m.name()));
        Self {
            bins,
            n_samples: n,
            calibration_error,
            x_label,
            binning,
            acceptance_label,
            accuracy_label,
            curve: None,
        }
    }
}

/// Bar edges: the bin edges for static bins; for adaptive ranges (which have no edges) the
/// midpoints between neighbouring mean confidences, the outer bars as wide as their neighbours'
/// half-gaps, within [0, 1].
fn bar_edges(summaries: &[BinSummary]) -> Vec<(f64, f64)> {
    if summaries.iter().all(|s| s.lower.is_some() && s.upper.is_some()) {
        return summaries
            .iter()
            .map(|s| (s.lower.unwrap_or(0.0), s.upper.unwrap_or(1.0)))
            .collect();
    }
    let centres: Vec<Option<f64>> = summaries.iter().map(|s| s.confidence).collect();
    let known: Vec<f64> = centres.iter().flatten().copied().collect();
    let mut out = Vec::with_capacity(summaries.len());
    let mut seen = 0;
    for c in &centres {
        let Some(c) = *c else {
            out.push((0.0, 0.0));
            continue;
        };
        let prev = if seen > 0 { Some(known[seen - 1]) } else { None };
        let next = known.get(seen + 1).copied();
        let lower = match (prev, next) {
            (Some(p), _) => (p + c) / 2.0,
            (None, Some(n)) => c - (n - c) / 2.0,
            (None, None) => c - 0.05,
        };
        let upper = match (next, prev) {
            (Some(n), _) => (n + c) / 2.0,
            (None, Some(p)) => c + (c - p) / 2.0,
            (None, None) => c + 0.05,
        };
        out.push((lower.clamp(0.0, 1.0), upper.clamp(0.0, 1.0)));
        seen += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(count: f64, conf: f64, acc: f64, edges: Option<(f64, f64)>) -> BinSummary {
        BinSummary {
            count,
            confidence: Some(conf),
            accuracy: Some(acc),
            lower: edges.map(|e| e.0),
            upper: edges.map(|e| e.1),
        }
    }

    #[test]
    fn error_is_the_weighted_gap_of_the_drawn_bins() {
        // Two bins: 30 at conf 0.25 / acc 0.2 and 70 at conf 0.75 / acc 0.9:
        // 0.3 * 0.05 + 0.7 * 0.15 = 0.12.
        let s = [
            summary(30.0, 0.25, 0.2, Some((0.0, 0.5))),
            summary(70.0, 0.75, 0.9, Some((0.5, 1.0))),
        ];
        let d = ReliabilityDiagram::from_summaries(&s, 100.0, &DiagramConfig::new());
        assert!((d.calibration_error - 0.12).abs() < 1e-12);
        assert_eq!((d.bins[1].lower, d.bins[1].upper), (0.5, 1.0));
        assert_eq!(d.bins[1].accuracy, Some(0.9));
    }

    #[test]
    fn adaptive_bars_meet_at_midpoints() {
        let s = [
            summary(10.0, 0.2, 0.2, None),
            summary(10.0, 0.4, 0.4, None),
            summary(10.0, 0.8, 0.8, None),
        ];
        let d = ReliabilityDiagram::from_summaries(&s, 30.0, &DiagramConfig::new());
        let edges: Vec<(f64, f64)> = d.bins.iter().map(|b| (b.lower, b.upper)).collect();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(edges[0].0, 0.1) && close(edges[0].1, 0.3));
        assert!(close(edges[1].0, 0.3) && close(edges[1].1, 0.6));
        assert!(close(edges[2].0, 0.6) && close(edges[2].1, 1.0));
    }

    #[test]
    fn binary_scores_draw_the_positive_class() {
        use burn::tensor::Device;
        use calib_core::input::InputConfig;
        let (scores, labels) = ([0.1f64, 0.7, 0.4, 0.9], [0i64, 1, 0, 1]);
        let config = InputConfig::new(ScoreKind::Binary);
        let preds = Predictions::from_host(&scores, 1, &labels, config, &Device::flex()).unwrap();
        let class = |k| DiagramConfig {
            scores: DiagramScores::Class(k),
            n_bins: 2,
            ..DiagramConfig::new()
        };
        let d = ReliabilityDiagram::compute(&preds, &class(1)).unwrap();
        assert_eq!(d.bins.iter().map(|b| b.count).collect::<Vec<_>>(), [2.0, 2.0]);
        assert_eq!((d.bins[0].accuracy, d.bins[1].accuracy), (Some(0.0), Some(1.0)));
        let err = ReliabilityDiagram::compute(&preds, &class(0)).unwrap_err().to_string();
        assert!(err.contains("--class 1"), "{err}");
    }
}
