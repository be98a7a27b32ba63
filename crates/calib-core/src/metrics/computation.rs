//! [`Computation`]: how the registry's metrics are computed, one of five ways the evaluation
//! knows (docs/conventions.md gives each formula).

use super::calibration_error::CalibrationErrorConfig;
use super::refinement::{LossPart, ProperLoss};
use crate::binning::Binning;

/// The settings a binned preset reads: B of the even-bin metrics, R of the adaptive ones and
/// the eps of TACE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinSettings {
    /// B, the even bins.
    pub n_bins: usize,
    /// R, the adaptive ranges.
    pub n_ranges: usize,
    /// TACE's threshold eps.
    pub tace_threshold: f64,
}

impl BinSettings {
    /// The general calibration error over B even bins (top-label, L1, mass-weighted).
    pub fn even(&self) -> CalibrationErrorConfig {
        CalibrationErrorConfig::new().with_binning(Binning::Even { n_bins: self.n_bins })
    }

    /// The general calibration error over R adaptive ranges (top-label, L1, mass-weighted).
    pub fn adaptive(&self) -> CalibrationErrorConfig {
        CalibrationErrorConfig::new().with_binning(Binning::Adaptive { n_ranges: self.n_ranges })
    }
}

/// A mean over rows that the binning engine sums beside its bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSum {
    /// `-log p[i, y]` (clipped like scikit-learn's `log_loss` when the evaluation says so).
    Nll,
    /// `sum_k (p[i,k] - 1[y = k])^2`.
    Brier,
    /// `1[argmax_k p[i,k] = y]`.
    Correct,
}

/// An estimator on the sorted or smoothed top-label (score, outcome) pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairEstimator {
    /// [`BinningFreeTests`](super::BinningFreeTests): KS, Kuiper, Spiegelhalter and their
    /// p-values, one sort for all six.
    BinningFreeTests,
    /// [`SmoothEce`](super::SmoothEce).
    SmoothEce,
    /// The LCE reliability curve's ECE ([`crate::curve::ReliabilityCurveConfig::lce_ece`]).
    LceEce,
}

/// How a metric is computed.
#[derive(Debug, Clone, Copy)]
pub enum Computation {
    /// A preset of the general calibration error, reduced from the engine's per-bin
    /// statistics.
    Binned(fn(&BinSettings) -> CalibrationErrorConfig),
    /// Murphy's decomposition of the Brier score: the preset's per-bin statistics and the
    /// Brier sum.
    BrierDecomposition(fn(&BinSettings) -> CalibrationErrorConfig),
    /// A mean over rows.
    Sum(RowSum),
    /// An estimator on the (score, outcome) pairs: it needs every row at once.
    Pairs(PairEstimator),
    /// A part of a proper loss split by a temperature-and-mixture refit
    /// ([`RefinementSplit`](super::RefinementSplit)): it needs every row at once.
    Refit(ProperLoss, LossPart),
}
