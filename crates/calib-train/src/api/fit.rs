//! [`Fit`]: how every calibrator's settings fit it to data (linfa's `Fit`).

use calib_core::input::Predictions;

use super::calibrator::{Calibrator, Fitted};
use crate::error::Result;
use crate::fit::{Progress, SampleWeighting};

/// Settings that fit a calibrator: every `...Config` of this crate implements it.
///
/// Settings are checked once when the fit starts ([`Fit::check`]), before any work; a fit
/// either returns a calibrator with a [`crate::FitRecord`] that says whether it converged, or
/// an error. Sample weights on the predictions reach every fit, as
/// [`Fit::SAMPLE_WEIGHTS`] says.
///
/// # Example
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use calib_core::input::Predictions;
/// use calib_train::{Calibrator, Fit, TemperatureScalingConfig};
///
/// let device = Device::flex();
/// let logits = Tensor::<2>::from_floats([[4.0, 0.0], [0.0, 3.0], [3.0, 0.0], [0.0, 2.0]], &device);
/// let labels = Tensor::<1, Int>::from_ints([0, 1, 1, 1], &device);
/// let preds = Predictions::logits(logits, labels)?;
/// let fitted = TemperatureScalingConfig::new().fit(&preds)?;
/// let calibrated = fitted.calibrator.calibrate(&preds)?;
/// assert_eq!(calibrated.n_samples(), 4);
/// # Ok::<(), calib_train::FitError>(())
/// ```
pub trait Fit {
    /// The calibrator these settings fit.
    type Calibrator: Calibrator;

    /// How the fit takes sample weights; every method states it.
    const SAMPLE_WEIGHTS: SampleWeighting;

    /// Checks the settings alone (strengths, tolerances, grids), as every fit does first;
    /// settings read from a file can be checked this way before any data is loaded. What
    /// depends on the data (folds against N, K against the calibrator) is checked by the fit.
    ///
    /// # Errors
    /// [`crate::FitError::InvalidConfig`] naming the setting.
    fn check(&self) -> Result<()>;

    /// The fit itself: `preds` carries weights only for a [`SampleWeighting::Weighted`]
    /// method (what [`Fit::fit_with_progress`] hands it).
    ///
    /// # Errors
    /// As [`Fit::fit_with_progress`].
    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<Self::Calibrator>>;

    /// Fits on `preds`, reporting each iteration of the (final) optimisation to `progress`;
    /// weighted predictions as [`Fit::SAMPLE_WEIGHTS`] says.
    ///
    /// # Errors
    /// [`crate::FitError`]: invalid settings, input the method does not take, weights with
    /// fractions for a [`SampleWeighting::Repeated`] method, or a loss that became non-finite.
    fn fit_with_progress(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<Self::Calibrator>> {
        match (Self::SAMPLE_WEIGHTS, preds.weights()) {
            (SampleWeighting::Repeated, Some(_)) => {
                let what = format!("calibrator `{}`", Self::Calibrator::METHOD.name());
                self.fit_rows(&preds.repeated_rows(&what)?, progress)
            }
            _ => self.fit_rows(preds, progress),
        }
    }

    /// Fits on `preds`.
    ///
    /// # Errors
    /// As [`Fit::fit_with_progress`].
    fn fit(&self, preds: &Predictions) -> Result<Fitted<Self::Calibrator>> {
        self.fit_with_progress(preds, &mut |_| {})
    }
}
