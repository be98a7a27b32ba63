//! The TS-mix step of structured scaling (Berta et al. 2025, "Structured matrix scaling for
//! multi-class calibration"; probmetrics' `ts-mix`): temperature scaling fitted by NLL, then
//! a mixture with the uniform distribution whose weight is fixed by the calibration set's
//! size.
//!
//! ```text
//! q = (1 - e) softmax(z / T) + e / K,   e = 1 / (N + 1)
//! x = ln q                               (the features of SMS and SVS)
//! ```
//!
//! The mixture keeps every log-probability above `ln(e / K)`, so the maps fitted on `x` never
//! see the `-69` of a floored zero probability. `T` is [`TemperatureScalingConfig`]'s exact
//! NLL minimiser (probmetrics bisects the same gradient to float32 resolution).

use std::collections::BTreeMap;

use burn::tensor::Tensor;
use burn::tensor::activation::log_softmax;
use calib_core::input::{HostValues, Predictions};
use calib_kernels::{Score, dispatch, exp_nonpositive, ln_positive};

use super::temperature::TemperatureScalingConfig;
use crate::api::{Fit, SavedTensor};
use crate::error::{FitError, Result};
use crate::fit::{FitConfig, FitRecord};

/// Rows per thread of [`TemperatureMixture::host_features`], at least.
const HOST_ROWS_PER_THREAD: usize = 1024;

/// A fitted temperature and uniform-mixture weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemperatureMixture {
    /// `T > 0`.
    pub temperature: f64,
    /// `e` in `[0, 1)`.
    pub mixture: f64,
}

impl Default for TemperatureMixture {
    /// `T = 1`, `e = 0`: the identity.
    fn default() -> Self {
        Self { temperature: 1.0, mixture: 0.0 }
    }
}

impl TemperatureMixture {
    /// Fits `T` by NLL on `preds` (logits) with `fit`'s precision; `e = 1 / (N + 1)` (N: the
    /// total sample weight, with weights).
    ///
    /// # Errors
    /// As [`TemperatureScalingConfig::fit`].
    pub fn fit(preds: &Predictions, fit: &FitConfig) -> Result<(Self, FitRecord)> {
        let config = TemperatureScalingConfig::new().with_fit(fit.clone());
        let fitted = config.fit(preds)?;
        let temperature = fitted.calibrator.temperature()?;
        let mixture = 1.0 / (preds.total_weight() + 1.0);
        Ok((Self { temperature, mixture }, fitted.record))
    }

    /// The features `x = ln((1 - e) softmax(z / T) + e / K)` of logits `z: [N, K]`.
    pub fn features(&self, logits: Tensor<2>) -> Tensor<2> {
        let [_, k] = logits.dims();
        let scaled = log_softmax(logits.div_scalar(self.temperature), 1).exp();
        scaled.mul_scalar(1.0 - self.mixture).add_scalar(self.mixture / k as f64).log()
    }

    /// [`Self::features`] of row-major host logits `[N, K]` (f32 widened exactly, or f64), in
    /// f64 on the cores, through the vectorised kernels (within a few ulp of the tensor path,
    /// without its three passes of the C library's `exp` and `log`). With `s = z / T`,
    /// `u_j = exp(s_j - max s)` and `S = sum_j u_j`:
    ///
    /// ```text
    /// x_j = ln((1 - e) u_j / S + e / K)            (e > 0: one exp and one ln per value)
    /// x_j = ln(1 - e) + s_j - max s - ln S         (e = 0)
    /// ```
    ///
    /// For `e > 0` the argument of the logarithm is at least `e / K`, a sum of two positive
    /// terms each within a few ulp, so the logarithm is within a few ulp too.
    pub fn host_features(&self, logits: &HostValues<'_>, k: usize) -> Vec<f64> {
        match logits {
            HostValues::F32(z) => self.features_of(z, k),
            HostValues::F64(z) => self.features_of(z, k),
        }
    }

    /// [`Self::host_features`] of one float type, split over the cores.
    fn features_of<T: Score>(&self, logits: &[T], k: usize) -> Vec<f64> {
        let mut out = vec![0.0; logits.len()];
        let rows = (logits.len() / k.max(1)).max(1);
        let cores = calib_kernels::threads();
        let per = rows.div_ceil(cores.min(rows.div_ceil(HOST_ROWS_PER_THREAD)).max(1)) * k;
        std::thread::scope(|scope| {
            for (z, x) in logits.chunks(per).zip(out.chunks_mut(per)) {
                scope.spawn(move || {
                    dispatch(
                        #[inline(always)]
                        || self.host_rows_into(z, x, k),
                    )
                });
            }
        });
        out
    }

    /// [`Self::host_features`] of the rows `z` into `x`.
    #[inline(always)]
    fn host_rows_into<T: Score>(&self, z: &[T], x: &mut [f64], k: usize) {
        let inv_t = 1.0 / self.temperature;
        let keep = 1.0 - self.mixture;
        let floor = self.mixture / k as f64;
        for (zrow, xrow) in z.chunks_exact(k).zip(x.chunks_exact_mut(k)) {
            let max: f64 = zrow.iter().map(|&v| v.into()).fold(f64::NEG_INFINITY, f64::max);
            let shifted = |v: T| (v.into() - max) * inv_t;
            xrow.iter_mut().zip(zrow).for_each(|(o, &v)| *o = exp_nonpositive(shifted(v)));
            let total = xrow.iter().sum::<f64>();
            if self.mixture > 0.0 {
                let scale = keep / total;
                xrow.iter_mut().for_each(|o| *o = ln_positive(*o * scale + floor));
            } else {
                let offset = keep.ln() - total.ln();
                xrow.iter_mut().zip(zrow).for_each(|(o, &v)| *o = offset + shifted(v));
            }
        }
    }

    /// Adds `temperature` and `mixture` (`[1]` each) to saved parameters.
    pub(crate) fn save(&self, out: &mut BTreeMap<String, SavedTensor>) {
        let scalar = |v: f64| SavedTensor { shape: vec![1], values: vec![v] };
        out.insert("temperature".into(), scalar(self.temperature));
        out.insert("mixture".into(), scalar(self.mixture));
    }

    /// Reads what [`Self::save`] wrote.
    pub(crate) fn load(parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let scalar = |name: &str| -> Result<f64> {
            let p = super::param(parameters, name)?;
            match p.values.as_slice() {
                [v] => Ok(*v),
                _ => Err(FitError::Format(format!("parameter `{name}` must hold one value"))),
            }
        };
        let (temperature, mixture) = (scalar("temperature")?, scalar("mixture")?);
        if !(temperature > 0.0 && temperature.is_finite() && (0.0..1.0).contains(&mixture)) {
            return Err(FitError::Format(format!(
                "temperature {temperature} must be finite and positive, mixture {mixture} in [0, 1)"
            )));
        }
        Ok(Self { temperature, mixture })
    }
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use burn::tensor::{DType, Device, TensorData};

    use super::*;

    #[test]
    fn features_are_the_log_of_the_mixture() {
        let device = Device::flex();
        let z: [[f64; 3]; 2] = [[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]];
        let logits = Tensor::<2>::from_data(TensorData::from(z), (&device, DType::F64));
        let m = TemperatureMixture { temperature: 1.5, mixture: 0.1 };
        let got = m.features(logits).into_data().convert::<f64>().try_to_vec::<f64>().unwrap();
        for (r, row) in z.iter().enumerate() {
            let e: Vec<f64> = row.iter().map(|v| (v / 1.5).exp()).collect();
            let total: f64 = e.iter().sum();
            for (j, v) in e.iter().enumerate() {
                let want = (0.9 * v / total + 0.1 / 3.0).ln();
                assert!((got[r * 3 + j] - want).abs() < 1e-14, "{r} {j}");
            }
        }
    }

    #[test]
    fn host_features_equal_the_tensor_path() {
        let device = Device::flex();
        let (k, n) = (7, 3000);
        let z: Vec<f64> = (0..n * k).map(|i| ((i * 37 % 101) as f64 - 50.0) * 0.31).collect();
        for m in [
            TemperatureMixture { temperature: 1.7, mixture: 1.0 / 3001.0 },
            TemperatureMixture { temperature: 0.4, mixture: 0.0 },
        ] {
            let logits =
                Tensor::<2>::from_data(TensorData::new(z.clone(), [n, k]), (&device, DType::F64));
            let want = m.features(logits).into_data().convert::<f64>().try_to_vec::<f64>().unwrap();
            let got = m.host_features(&HostValues::F64(z.as_slice().into()), k);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-13 * w.abs().max(1.0), "{g} vs {w}");
            }
            // f32 logits are widened exactly: the same features as their f64 copies.
            let z32: Vec<f32> = z.iter().map(|&v| v as f32).collect();
            let widened: Vec<f64> = z32.iter().map(|&v| f64::from(v)).collect();
            let got = m.host_features(&HostValues::F32(z32.into()), k);
            assert_eq!(got, m.host_features(&HostValues::F64(widened.into()), k));
        }
    }
}
