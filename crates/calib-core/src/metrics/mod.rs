//! Metrics: the general calibration error, its named presets, the proper scores and the
//! binning-free tests.

mod binning_free;
mod brier_decomposition;
mod calibration_error;
mod computation;
mod gce_variant;
mod metric;
mod refinement;
mod registry;
mod smooth_ece;

pub use binning_free::{BinningFreeTests, ks_pvalue, kuiper_pvalue};
pub use brier_decomposition::BrierDecomposition;
pub use calibration_error::{
    BinWeighting, CalibrationErrorConfig, CalibrationErrorValue, Norm, ScoreSet,
};
pub use computation::{BinSettings, Computation, PairEstimator, RowSum};
pub use gce_variant::{GCE_THRESHOLD, GceProperty, GceVariant};
pub use metric::Metric;
pub use refinement::{LogProbabilities, LossPart, ProperLoss, RefinementSplit};
pub use smooth_ece::SmoothEce;
