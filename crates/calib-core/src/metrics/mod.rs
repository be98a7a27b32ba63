//! Metrics: the general calibration error, its named presets, and the proper scores.

mod brier_decomposition;
mod calibration_error;
mod metric;

pub use brier_decomposition::BrierDecomposition;
pub use calibration_error::{
    BinWeighting, CalibrationErrorConfig, CalibrationErrorValue, Norm, ScoreSet,
};
pub use metric::Metric;
