//! # calib
//!
//! Measure and fix the calibration of classifier probabilities, tensor-native on burn.
//!
//! Metrics at the crate root (calib-core), calibrators in [`train`] (calib-train), and the
//! burn version calib is built on as [`burn`], so a user's tensors and calib's agree. Features
//! add `io` (calib-io's file formats), `burn_train` (calib's metrics as burn-train metrics)
//! and `datafusion` (SQL aggregates and workers).
//!
//! ```
//! use calib::burn::tensor::{Device, Int, Tensor};
//! use calib::train::{Calibrator, Fit, TemperatureScalingConfig};
//! use calib::{EvaluationConfig, Metric, input::Predictions};
//!
//! let device = Device::flex();
//! let logits = Tensor::<2>::from_floats([[6.0, 0.0], [0.0, 5.0], [5.0, 0.0], [0.0, 6.0]], &device);
//! let labels = Tensor::<1, Int>::from_ints([0, 1, 1, 1], &device);
//! let preds = Predictions::logits(logits, labels)?;
//! let fitted = TemperatureScalingConfig::new().fit(&preds)?;
//! let calibrated = fitted.calibrator.calibrate(&preds)?;
//! let nll = |p| EvaluationConfig::new().with_metrics(vec![Metric::Nll]).evaluate(p);
//! assert!(nll(&calibrated)?.get(Metric::Nll) < nll(&preds)?.get(Metric::Nll));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub use burn;
/// calib's metrics inside burn-train's `Learner` (feature `burn-train`).
#[cfg(feature = "burn-train")]
pub use calib_burn_train as burn_train;
pub use calib_core::*;
/// calib's metrics as DataFusion aggregates, local or distributed (feature `datafusion`).
#[cfg(feature = "datafusion")]
pub use calib_datafusion as datafusion;
/// calib's file formats: npy, npz, safetensors, CSV, Parquet and Arrow IPC (feature `io`).
#[cfg(feature = "io")]
pub use calib_io as io;
pub use calib_train as train;
