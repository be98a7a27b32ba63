//! The binning engine: turns [`crate::input::Predictions`] into bin statistics and sums.
//!
//! Two implementations behind one plan:
//! - tensor: burn tensor ops on any device, in row chunks; the reference path.
//! - fused: one fused pass over host rows in plain Rust for the CPU backends.
//!
//! Tests check both against each other and against independent f64 loops.

mod class_columns;
mod fused;
mod plan;
mod tensor;
mod workspace;

pub(crate) use fused::run_fused;
pub(crate) use plan::{Outcome, Plan, StatRequest};
pub(crate) use tensor::run_tensor;
pub use workspace::Workspace;

use serde::{Deserialize, Serialize};

/// Which implementation computes the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The fused host kernel on CPU backends, tensor ops on GPU backends.
    #[default]
    Auto,
    /// burn tensor ops on the input's device (the reference path).
    Tensor,
    /// The fused host kernel (reads the rows to the host once).
    Fused,
}
