//! The one place that chooses how an affine map is fitted: the fused host objective and host
//! solvers where [`host::use_host`] says so, the device passes and host L-BFGS where
//! [`device::use_device`] does, burn autodiff otherwise. The host objective and autodiff
//! weigh rows; weighted rows skip the device passes.

use super::autodiff::minimise_on;
use super::config::FitConfig;
use super::context::Progress;
use super::data::FitData;
use super::host::HostObjectiveMap;
use super::record::FitRecord;
use super::{device, host};
use crate::error::Result;

/// Minimises `map`'s objective on `data` on the path `config` and the device call for.
pub(crate) fn minimise_affine_on<M: HostObjectiveMap>(
    map: M,
    data: &FitData,
    config: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<(M, FitRecord)> {
    if host::use_host(data, config) {
        return host::minimise_on_host(map, data, config, progress);
    }
    // An invariant of the callers, not of the input: host-only data is made for fits that
    // `use_host` sends to the host.
    assert!(data.has_tensor_rows(), "host-only fit data reached a tensor path");
    if device::use_device(data, config) && data.weights.is_none() {
        device::minimise_on_device(map, data, config, progress)
    } else {
        minimise_on(map, data, config, progress)
    }
}
