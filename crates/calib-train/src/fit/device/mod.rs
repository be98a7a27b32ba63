//! Fits of the affine maps whose passes stay on the device: [`DeviceObjective`] computes the
//! objective, gradient and Hessian diagonal as burn tensor ops where the rows live, and the
//! host L-BFGS (Jacobi-scaled, f64) drives it. Used on GPU devices under
//! [`calib_core::Engine::Auto`] or [`calib_core::Engine::Kernels`], and on CPU devices in f32.

mod objective;
mod span;
#[cfg(all(test, feature = "flex"))]
mod tests;

use std::time::Instant;

pub(crate) use objective::DeviceObjective;

use super::config::{FitConfig, Optimizer};
use super::context::{FitContext, Progress};
use super::data::FitData;
use super::host::{HostObjectiveMap, minimise_flat};
use super::params::{flat_params, load_flat};
use crate::error::Result;
use crate::fit::objective::Evaluation;
use crate::fit::record::{FitEngine, FitRecord};

/// Whether `config` sends a fit on `data` through the device passes: a full-batch optimiser,
/// hard labels, and an engine that allows them (not the autodiff reference, not the host).
pub(crate) fn use_device(data: &FitData, config: &FitConfig) -> bool {
    use calib_core::Engine;
    config.optimizer.is_full_batch()
        && data.targets.is_none()
        && matches!(config.engine, Engine::Auto | Engine::Kernels)
}

/// Minimises `map`'s objective on `data` with the device passes and the host L-BFGS.
pub(crate) fn minimise_on_device<M: HostObjectiveMap>(
    map: M,
    data: &FitData,
    config: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<(M, FitRecord)> {
    let start = Instant::now();
    let device = data.features.device();
    let dtype = data.features.dtype();
    let objective = DeviceObjective::new(&data.features, &data.labels, map.host_form())?;
    let mut ctx = FitContext::new(config, &device, dtype, FitEngine::Device, progress);
    let x0 = Evaluation::params_of(flat_params(&map))?;
    let history = match config.optimizer {
        Optimizer::Lbfgs { history_size } => history_size,
        _ => Optimizer::LBFGS_HISTORY,
    };
    let fitted = minimise_flat(&objective, x0.clone(), history, &mut ctx);
    if let Some(failure) = objective.take_failure() {
        return Err(failure);
    }
    let (x, mut record) = fitted?;
    let x = objective.terms().canonical(x, &x0);
    record.n_samples = data.n_samples;
    record.n_classes = data.n_classes;
    record.wall_time_s = start.elapsed().as_secs_f64();
    Ok((load_flat(&map, &x), record))
}
