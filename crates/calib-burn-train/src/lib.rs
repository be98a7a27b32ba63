//! calib's calibration metrics inside burn-train's `Learner`: ECE, SCE, ACE, TACE, NLL and
//! Brier as [`burn_train::metric::Metric`]s, fed from `ClassificationOutput`.
//!
//! ```text
//! static bins, NLL, Brier  per batch: the K x B bin statistics (and sums) computed where the
//!                          outputs live, merged on the host: exact over the epoch
//! ACE, TACE (adaptive)     the epoch's outputs kept on the device (as burn-train's AUROC does),
//!                          ranked once at `compute`
//! ```
//! Each metric equals `calib eval` on the epoch's concatenated outputs (docs/conventions.md
//! for the definitions).
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use burn_train::metric::{Metric, Numeric};
//! use calib_burn_train::{CalibrationInput, CalibrationMetric};
//!
//! let device = Device::flex();
//! let mut ece = CalibrationMetric::ece();
//! for _ in 0..3 {
//!     let logits = Tensor::<2>::from_floats([[2.0, 0.0], [0.0, 3.0], [1.0, 0.5]], &device);
//!     let labels = Tensor::<1, Int>::from_ints([0, 1, 1], &device);
//!     ece.update(&CalibrationInput::new(logits, labels), &calib_burn_train::metadata()).unwrap();
//! }
//! ece.compute().unwrap();
//! assert!(ece.final_value().current() > 0.0);
//! ```

mod input;
mod metric;

/// The burn-train this crate implements the metrics of (for its `Metric` trait).
pub use burn_train;
pub use input::CalibrationInput;
pub use metric::{CalibrationMetric, metadata};
