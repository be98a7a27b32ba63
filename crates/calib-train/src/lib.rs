//! # calib-train
//!
//! Calibrators, as `docs/conventions.md` ("Calibrators") defines them:
//! - the scaling family, fitted by minimising the mean NLL: temperature, vector and matrix
//!   scaling (Guo et al. 2017), Dirichlet calibration with ODIR regularisation (Kull et al.
//!   2019), Platt scaling for binary scores (Platt 1999), and ECE-optimised temperature
//!   (Nixon et al.);
//! - the binary maps ([`binary`]), each on binary scores, one-vs-rest over K classes or
//!   top-label per predicted class (Gupta & Ramdas): Platt, isotonic regression, histogram
//!   binning, beta calibration, spline calibration, scaling-binning, inductive Venn-ABERS and
//!   LCE calibration;
//! - [`losses`]: differentiable calibration losses for training loops.
//!
//! [`api`] is the face of every method: the registry (`api/registry.rs`, the one list of
//! methods) generates [`Method`] and [`AnyCalibrator`], any calibrator chosen at run time.
//!
//! Each calibrator's settings implement [`Fit`]; each fitted calibrator implements
//! [`Calibrator`], whose [`Calibrator::calibrate`] applies it to
//! [`Predictions`](calib_core::input::Predictions). Each calibrator is also a burn
//! [`Module`](burn::module::Module) with `Param` tensors implementing [`CalibrationMap`]
//! (`forward` on logit tensors), so it works inside a user's own training loop. Fits are
//! full-batch and second order by default ([`Optimizer::Auto`]): burn's L-BFGS with a
//! strong-Wolfe line search under autodiff on any device; on CPU a fused host objective
//! (`FitConfig::engine`) with Newton-CG for matrix scaling and Dirichlet calibration, a host
//! L-BFGS for vector scaling and an exact Newton solver for temperature scaling
//! ([`TemperatureSolver`]). Mini-batch Adam is the option for training loops. Every fit
//! returns a [`FitRecord`] (iterations, loss, gradient norm, wall time, `converged`). Fitted
//! calibrators save to JSON ([`SavedCalibrator`]: parameters and typed [`SavedSettings`]) and
//! load back bit-identical; applying them runs in row chunks on any device.
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use calib_core::input::Predictions;
//! use calib_train::{Calibrator, Fit, TemperatureScalingConfig};
//!
//! let device = Device::flex();
//! let logits = Tensor::<2>::from_floats(
//!     [[5.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0], [4.0, 0.0, 1.0], [0.0, 5.0, 0.0]],
//!     &device,
//! );
//! let labels = Tensor::<1, Int>::from_ints([0, 1, 2, 2, 0], &device);
//! let preds = Predictions::logits(logits, labels)?;
//! let fitted = TemperatureScalingConfig::new().fit(&preds)?;
//! assert!(fitted.record.converged);
//! let calibrated = fitted.calibrator.calibrate(&preds)?; // calibrated logits, same argmax
//! assert_eq!(calibrated.n_samples(), 5);
//! # Ok::<(), calib_train::FitError>(())
//! ```
#![warn(missing_docs)]

pub mod api;
pub mod binary;
pub mod error;
pub mod fit;
pub mod losses;
pub mod methods;

pub use api::{
    AnyCalibrator, Calibrator, FORMAT, Fit, FitAny, Fitted, Method, SampleWeighting,
    SavedCalibrator, SavedSettings, SavedTensor,
};
pub use binary::{
    BinaryFit, BinaryFitted, BinaryMap, DeviceFit, Form, MapCalibrator, Reduction,
    TopLabelPrediction,
};
pub use error::{FitError, Result};
pub use fit::{
    CalibrationMap, CvScore, FitConfig, FitEngine, FitRecord, FloatType, MetricSearch, Optimizer,
    Progress, Solver, StopReason,
};
pub use methods::*;
