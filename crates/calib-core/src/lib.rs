//! # calib-core
//!
//! Calibration metrics of classifier probabilities as burn tensor ops: ECE, MCE, RMSCE, SCE
//! (class-wise ECE), ACE, TACE, top-label ECE per predicted class, debiased and plug-in L2
//! calibration error, NLL, Brier score and its decomposition, accuracy — all from one binning
//! engine configured in Nixon et al.'s general calibration error space.
//!
//! Every metric means exactly what `docs/conventions.md` pins (bin edges, `p = 0` and
//! `p = 1`, ties, reductions): even bins are right-closed (`b/B < p <= (b+1)/B`, `p = 0` in bin
//! 0), adaptive ranges split a stable sort by position, empty bins add nothing, argmax ties go
//! to the lowest class.
//!
//! - [`metrics`]: the registry of named metrics ([`Metric`]), the general calibration error,
//!   the binning-free tests (KS, Kuiper, Spiegelhalter), smooth ECE and the Brier
//!   decomposition; [`EvaluationConfig`] evaluates any set of them into a [`Report`].
//! - [`engine`]: the fused multi-threaded host engine, the burn-tensor engine and (feature
//!   `wgpu`) calib's CubeCL kernels; [`binning`] and [`stats`]: the bins and their mergeable
//!   statistics; [`pairs`]: the sorted (score, outcome) pairs.
//! - [`bootstrap`]: bootstrap and per-bin intervals; [`curve`]: the continuous reliability
//!   curve and its band.
//! - [`StreamingEvaluation`] and [`EvaluationState`]: evaluation in row chunks, states that
//!   serialise and merge across shards, exact adaptive ranges over several passes.
//! - [`input`]: validated [`Predictions`](input::Predictions) on a device or on the host;
//!   [`backend`]: devices by name; [`synthetic`]: seeded synthetic logits.
//!
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use calib_core::{EvaluationConfig, Metric, input::Predictions};
//!
//! let device = Device::flex();
//! let logits = Tensor::<2>::from_floats([[4.0, 0.0, 0.0], [0.0, 3.0, 1.0], [1.0, 1.2, 0.0]], &device);
//! let labels = Tensor::<1, Int>::from_ints([0, 2, 1], &device);
//! let preds = Predictions::logits(logits, labels)?;
//! let report = EvaluationConfig::new().evaluate(&preds)?;
//! let ece = report.get(Metric::Ece).unwrap();
//! assert!((0.0..=1.0).contains(&ece));
//! # Ok::<(), calib_core::CalibError>(())
//! ```
#![warn(missing_docs)]

pub mod backend;
pub mod binning;
pub mod bootstrap;
pub mod curve;
pub mod engine;
pub mod error;
mod evaluate;
mod host;
pub mod input;
pub mod metrics;
pub mod pairs;
mod report;
pub mod stats;
mod streaming;
pub mod synthetic;

pub use backend::{BackendKind, Precision};
pub use engine::{Engine, Workspace};
pub use error::{CalibError, Result};
pub use evaluate::EvaluationConfig;
pub use metrics::Metric;
pub use report::{MetricValue, Report};
pub use streaming::{EvaluationState, StreamingEvaluation};
