//! The one place that chooses how an affine map is fitted: the fused host objective and host
//! solvers where [`host::use_host`] says so, the device passes and host L-BFGS where
//! [`device::use_device`] does, burn autodiff otherwise. Only the host objective weighs rows.

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
        host::minimise_on_host(map, data, config, progress)
    } else if data.weights.is_some() {
        // `prepare` repeats weighted rows for the other paths; this is a caller's slip.
        Err(crate::error::FitError::InvalidConfig(
            "weighted rows fit on the host path only (a full-batch optimiser on a CPU engine)"
                .into(),
        ))
    } else if device::use_device(data, config) {
        device::minimise_on_device(map, data, config, progress)
    } else {
        minimise_on(map, data, config, progress)
    }
}
