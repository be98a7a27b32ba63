//! The autodiff path of a fit: the starting map and data on burn's autodiff device, minimised
//! by burn's L-BFGS or Adam. The reference path, on any device.

use burn::tensor::{DType, Device};
use calib_core::input::Predictions;

use super::config::{FitConfig, Optimizer};
use super::context::{FitContext, Progress};
use super::data::FitData;
use super::map::CalibrationMap;
use super::record::{FitEngine, FitRecord};
use super::{adam, lbfgs};
use crate::error::Result;

/// Fits `init` (built on the autodiff version of `preds`' device) by minimising the mean NLL
/// plus its penalty, with the optimiser of `config`.
pub(crate) fn minimise<M: CalibrationMap>(
    init: impl FnOnce(&Device, DType) -> M,
    preds: &Predictions,
    method: &str,
    config: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<(M, FitRecord)> {
    let (map, data) = prepare(init, preds, method, config)?;
    minimise_on(map, &data, config, progress)
}

/// The starting map and the data of a fit, on the autodiff version of `preds`' device.
pub(crate) fn prepare<M: CalibrationMap>(
    init: impl FnOnce(&Device, DType) -> M,
    preds: &Predictions,
    method: &str,
    config: &FitConfig,
) -> Result<(M, FitData)> {
    let device = preds.device().clone();
    let dtype = config.dtype(&device);
    let ad = device.clone().autodiff();
    let map = init(&ad, dtype);
    let data = FitData::new(preds, method, &ad, dtype, |z| map.prepare(z))?;
    Ok((map, data))
}

/// [`minimise`] on data already prepared on the autodiff device.
pub(crate) fn minimise_on<M: CalibrationMap>(
    map: M,
    data: &FitData,
    config: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<(M, FitRecord)> {
    let device = data.features.device();
    let mut ctx =
        FitContext::new(config, &device, data.features.dtype(), FitEngine::Autodiff, progress);
    let (map, mut record) = match config.optimizer {
        Optimizer::Lbfgs { history_size } => lbfgs::fit_lbfgs(map, data, history_size, &mut ctx)?,
        Optimizer::Auto => lbfgs::fit_lbfgs(map, data, Optimizer::LBFGS_HISTORY, &mut ctx)?,
        Optimizer::Adam { learning_rate, batch_size, epochs, seed } => adam::fit_adam(
            map,
            data,
            adam::AdamRun { learning_rate, batch_size, epochs, seed },
            &mut ctx,
        )?,
    };
    record.n_samples = data.n_samples;
    record.n_classes = data.n_classes;
    Ok((map, record))
}
