//! # calib
//!
//! Measure and fix the calibration of classifier probabilities, tensor-native on burn.
//!
//! This facade re-exports the workspace crates: [`calib_core`] (metrics) as the crate root,
//! [`calib_train`] (calibrators) as [`train`], and burn itself as [`burn`].
#![warn(missing_docs)]

pub use burn;
pub use calib_core;
pub use calib_core::*;
pub use calib_train;
pub use calib_train as train;
