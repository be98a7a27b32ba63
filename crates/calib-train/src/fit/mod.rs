//! Fitting: the objective (mean NLL plus regularisation), the optimisers that minimise it
//! (full-batch L-BFGS by default, mini-batch Adam as the option) and the record they leave.
//! Below `methods/`: nothing here knows a method. `dispatch.rs` is the one place that picks the
//! host, device or autodiff path of a fit.

mod adam;
mod autodiff;
mod config;
mod context;
mod data;
mod device;
mod dispatch;
pub(crate) mod host;
mod host_rows;
mod lbfgs;
mod map;
mod objective;
pub(crate) mod params;
mod point;
mod record;
mod regularisation;
mod sample_weighting;
mod unbounded;

pub(crate) use autodiff::{minimise, minimise_on, prepare};
pub use config::{FitConfig, Optimizer};
pub(crate) use context::FitContext;
pub use context::Progress;
pub(crate) use data::{FitData, require_logits};
pub(crate) use dispatch::minimise_affine_on;
pub(crate) use host::{AffineShape, HostForm, HostObjectiveMap, host_nll, with_host_rows_for};
pub use map::CalibrationMap;
pub(crate) use objective::objective;
pub(crate) use point::Point;
pub use record::{CvScore, FitEngine, FitRecord, FloatType, MetricSearch, Solver, StopReason};
pub use regularisation::Regularisation;
pub use sample_weighting::SampleWeighting;
