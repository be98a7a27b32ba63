//! The fit shared by structured matrix and vector scaling (SMS, SVS): the
//! temperature-and-mixture step, then the map on its log-probabilities under the ridge that
//! shrinks it back to that step.

use std::time::Instant;

use burn::tensor::{DType, Device};
use calib_core::input::Predictions;

use super::ridge_strengths::RidgeStrengths;
use super::temperature_mixture::TemperatureMixture;
use crate::api::Method;
use crate::error::{FitError, Result};
use crate::fit::{
    FitConfig, FitData, FitRecord, HostObjectiveMap, Progress, Regularisation, minimise_affine_on,
    prepare,
};

/// Fits `method`'s map (`full`: SMS's K x K, else SVS's diagonal) on `preds`: `start` builds it
/// at the mixture step with the ridge; the record is the map's, with the temperature step's
/// warnings and the time of the whole fit (both steps and the features between them).
///
/// # Errors
/// All strengths zero with fewer rows than classes (no finite optimum), and the fits' errors.
pub(crate) fn fit_structured<M: HostObjectiveMap>(
    fit: &FitConfig,
    strengths: &RidgeStrengths,
    preds: &Predictions,
    (method, full): (Method, bool),
    start: impl Fn(TemperatureMixture, usize, Regularisation, &Device, DType) -> M,
    progress: &mut dyn FnMut(Progress),
) -> Result<(M, FitRecord)> {
    let (n, k) = (preds.n_samples(), preds.n_classes());
    // With sample weights N is their total (the repeated rows' count).
    let reg = strengths.regularisation(preds.total_weight(), k, full);
    if n < k && !reg.is_active() {
        return Err(FitError::Underdetermined {
            method: method.name().into(),
            n_params: if full { k * (k + 1) } else { 2 * k },
            n_samples: n,
            hint: "keep a ridge strength above zero".into(),
        });
    }
    let start_time = Instant::now();
    let (mixture, first) = TemperatureMixture::fit(preds, fit)?;
    let init = |device: &Device, dtype| start(mixture, k, reg, device, dtype);
    let (map, data) = if features_on_host(preds, fit) {
        let device = preds.device().clone().autodiff();
        let dtype = fit.dtype(preds.device());
        let (logits, labels) = preds.host_rows()?;
        let features = mixture.host_features(&logits, k);
        let data = FitData::host_only(preds, features, &labels, &device, dtype);
        (init(&device, dtype), data)
    } else {
        prepare(init, preds, method.name(), fit)?
    };
    let (map, mut record) = minimise_affine_on(map, &data, fit, progress)?;
    record.wall_time_s = start_time.elapsed().as_secs_f64();
    Ok((map, after_temperature(record, &first)))
}

/// Whether the fit runs on the host objective (so its features are best made there): a
/// full-batch optimiser on a CPU device in f64, and no row of weight zero (the tensor path
/// drops those).
fn features_on_host(preds: &Predictions, fit: &FitConfig) -> bool {
    let zero_weight = preds.weights().is_some_and(|w| w.values().contains(&0.0));
    fit.optimizer.is_full_batch()
        && fit.engine.uses_host(preds.device(), fit.precision)
        && fit.dtype(preds.device()) == DType::F64
        && !zero_weight
}

/// The map's record, with the temperature step's warnings added.
fn after_temperature(mut record: FitRecord, first: &FitRecord) -> FitRecord {
    let said = first.warnings.iter().map(|w| format!("temperature step: {w}"));
    record.warnings.splice(0..0, said);
    if !first.converged {
        record.warnings.insert(0, "the temperature step did not converge".into());
    }
    record
}
