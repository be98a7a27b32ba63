//! The binning engine: turns [`crate::input::Predictions`] into bin statistics and sums.
//!
//! Three implementations behind one plan:
//! - tensor: burn tensor ops on any device, in row chunks; the reference path.
//! - fused: one fused pass over host rows in plain Rust for the CPU backends.
//! - cube (feature `wgpu`): calib's CubeCL kernels on a GPU device.
//!
//! Weighted rows (sample weights, bootstrap multiplicities) go through `records.rs`: each row's
//! contributions recorded once, then summed under any weights.
//!
//! Tests check them against each other and against independent f64 loops.

#[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
mod cost;
#[cfg(feature = "wgpu")]
mod cube;
mod fused;
mod plan;
mod records;
mod tensor;

pub use cost::{DeviceCost, read_back};
#[cfg(feature = "wgpu")]
pub use cube::{
    AFFINE_MAX_CLASSES, AffineSums, BinnedProblems, DevicePairs, EnsembleMixture, LogisticFeatures,
    LogisticRows, LogisticSpec, LogisticSums, MapTable, PooledBlock, PooledProblems, SoftmaxTerms,
    TemperedRows, affine_softmax_terms, apply_map_tables, checked_kernels, diagonal_affine_pass,
    map_tables_nll, set_checked_kernels,
};
#[cfg(feature = "wgpu")]
pub(crate) use cube::{run_cube, run_cube_parts, supports as cube_supports, supports_parts};
pub use fused::Workspace;
pub(crate) use fused::{from_order_key, order_key, run_fused, score_row};
pub(crate) use plan::{Outcome, Plan, StatRequest};
pub(crate) use records::{BATCH, Batch, Records};
pub(crate) use tensor::{first_argmax, run_tensor};

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use crate::backend::{BackendKind, Precision};
use crate::error::{CalibError, Result};

/// Which implementation computes: a fused f64 pass over host rows, or burn tensor ops on the
/// input's device. The same choice serves metrics and calibrator fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Engine {
    /// The fused host kernel on CPU backends, tensor ops on GPU backends.
    #[default]
    Auto,
    /// burn tensor ops on the input's device (the reference path).
    Tensor,
    /// The fused host kernel (reads the rows to the host once).
    Fused,
    /// calib's CubeCL kernels on a GPU device (feature `wgpu`; multi-class input, f32).
    /// [`Engine::Auto`] takes them on GPU devices wherever they apply.
    Kernels,
}

impl Engine {
    /// Whether work on `device` at `precision` runs on the host (the fused f64 path) rather
    /// than as burn tensor ops on the device: the one rule for metrics and fits.
    ///
    /// [`Engine::Auto`] takes the host path on CPU backends unless f32 is asked for: there the
    /// rows already live in host memory and the fused pass is several times faster. On GPU
    /// backends it stays on the device.
    pub fn uses_host(self, device: &Device, precision: Precision) -> bool {
        match self {
            Self::Fused => true,
            Self::Tensor | Self::Kernels => false,
            Self::Auto => BackendKind::of(device).is_cpu() && precision != Precision::F32,
        }
    }

    /// Checks that the engine can honour `precision`: the fused engine computes in f64 only.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for [`Engine::Fused`] with [`Precision::F32`].
    pub fn check(self, precision: Precision) -> Result<()> {
        if self == Self::Kernels && precision == Precision::F64 {
            return Err(CalibError::InvalidConfig(
                "the kernel engine computes in f32; use Engine::Tensor for f64".into(),
            ));
        }
        if self == Self::Fused && precision == Precision::F32 {
            return Err(CalibError::InvalidConfig(
                "the fused engine computes in f64; use Engine::Tensor (or Engine::Auto) for f32"
                    .into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_the_host_path_on_cpu_unless_f32_is_asked_for() {
        let device = Device::flex();
        assert!(Engine::Auto.uses_host(&device, Precision::Auto));
        assert!(Engine::Auto.uses_host(&device, Precision::F64));
        assert!(!Engine::Auto.uses_host(&device, Precision::F32));
        assert!(Engine::Fused.uses_host(&device, Precision::Auto));
        assert!(!Engine::Tensor.uses_host(&device, Precision::F64));
    }

    #[test]
    fn the_fused_engine_refuses_f32() {
        assert!(Engine::Fused.check(Precision::F32).is_err());
        assert!(Engine::Fused.check(Precision::Auto).is_ok());
        assert!(Engine::Tensor.check(Precision::F32).is_ok());
    }
}
