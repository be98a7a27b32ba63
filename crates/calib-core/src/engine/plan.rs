//! What one evaluation needs computed: the distinct bin statistics and the scalar sums.

use crate::binning::Binning;
use crate::metrics::{CalibrationErrorConfig, ScoreSet};
use crate::stats::{BinLayout, BinStats};

/// One set of bin statistics to compute.
///
/// Static bins are always computed per group (class or predicted class) and pooled on the
/// host when a metric asks for it, so ECE and top-label ECE share one request, and so do SCE
/// and the Brier decomposition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatRequest {
    pub binning: Binning,
    pub scores: ScoreSet,
    /// One group per class (column, or predicted class for top-label); else one group.
    pub grouped: bool,
    pub threshold: Option<f64>,
}

impl StatRequest {
    pub fn for_config(config: &CalibrationErrorConfig) -> Self {
        let grouped = match config.binning {
            Binning::Adaptive { .. } => config.class_conditional,
            _ => true,
        };
        Self {
            binning: config.binning.clone(),
            scores: config.scores,
            grouped,
            threshold: config.threshold,
        }
    }

    /// Number of groups for input of `n_classes` classes (binary input has one).
    pub fn n_groups(&self, n_classes: usize, binary: bool) -> usize {
        if binary || !self.grouped { 1 } else { n_classes }
    }

    /// Empty statistics for this request.
    pub fn zeros(&self, n_classes: usize, binary: bool) -> BinStats {
        let layout = match self.binning.edges() {
            Some(e) => BinLayout::Edges(e),
            None => BinLayout::Adaptive { n_ranges: self.binning.n_bins() },
        };
        BinStats::zeros(layout, self.n_groups(n_classes, binary))
    }
}

/// The requests of one evaluation, deduplicated, plus whether the proper scores are needed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub requests: Vec<StatRequest>,
    /// Compute NLL, Brier and accuracy sums.
    pub scalars: bool,
    /// Also the NLL with `p[i,y]` clipped at this eps.
    pub nll_eps: Option<f64>,
}

impl Plan {
    /// Adds a request (if new) and returns its index.
    pub fn request(&mut self, r: StatRequest) -> usize {
        match self.requests.iter().position(|q| *q == r) {
            Some(i) => i,
            None => {
                self.requests.push(r);
                self.requests.len() - 1
            }
        }
    }

    pub fn needs_probabilities(&self) -> bool {
        self.scalars || self.requests.iter().any(|r| r.scores == ScoreSet::AllClasses)
    }
}

/// What an engine returns: one [`crate::stats::BinStats`] per request, and the sums.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Outcome {
    pub stats: Vec<crate::stats::BinStats>,
    pub nll_sum: f64,
    pub nll_clipped_sum: f64,
    pub brier_sum: f64,
    pub correct: f64,
}
