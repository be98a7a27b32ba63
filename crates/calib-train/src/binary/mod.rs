//! Binary calibration maps (a score in `[0, 1]` to a probability) and the three ways a map
//! calibrates predictions: on binary scores, one-vs-rest over the K probability columns, or on
//! the top-label confidence (Gupta & Ramdas 2021). Every non-parametric method of
//! `docs/conventions.md` ("The non-parametric, binary and top-label calibrators") is a
//! [`BinaryMap`] with a [`BinaryFit`] that fits it on `(score, outcome)` pairs.
//!
//! # Note
//! These maps run on the host in f64: they are sorts, searches and table lookups, not tensor
//! algebra. [`MapCalibrator`] reads the rows back once, applies the maps and returns host
//! [`Predictions`](calib_core::input::Predictions) on the input's device.

mod calibrator;
mod device_fit;
#[cfg(feature = "wgpu")]
mod device_logistic;
mod fit_maps;
mod form;
mod local_rows;
mod logistic;
mod logistic_rows;
mod map;
mod scores;
mod top_label;
mod top_label_rows;

pub use calibrator::MapCalibrator;
pub use device_fit::DeviceFit;
#[cfg(feature = "wgpu")]
pub use device_logistic::DeviceLogistic;
pub use form::{Form, Reduction};
pub use map::{BinaryFit, BinaryFitted, BinaryMap};
pub use top_label::TopLabelPrediction;

pub(crate) use fit_maps::fit_maps;
pub(crate) use local_rows::LocalRows;
pub(crate) use logistic::{LogisticFit, LogisticProblem, newton_step, sigmoid, sigmoid_fast};
pub(crate) use logistic_rows::{Features, RowFeatures, Targets};
pub(crate) use map::{put, table};

/// `impl Fit` for a [`BinaryFit`] config with a `reduction` field: check, then
/// [`fit_maps`] (the binary maps fit in one pass, so `progress` hears nothing).
macro_rules! fit_by_maps {
    ($config:ty, $calibrator:ty) => {
        impl $crate::api::Fit for $config {
            type Calibrator = $calibrator;

            const SAMPLE_WEIGHTS: $crate::fit::SampleWeighting =
                <$config as $crate::binary::BinaryFit>::SAMPLE_WEIGHTS;

            fn check(&self) -> $crate::error::Result<()> {
                $crate::binary::BinaryFit::check(self)
            }

            fn fit_rows(
                &self,
                preds: &calib_core::input::Predictions,
                _progress: &mut dyn FnMut($crate::fit::Progress),
            ) -> $crate::error::Result<$crate::api::Fitted<$calibrator>> {
                $crate::binary::fit_maps(self, self.reduction, preds)
            }
        }
    };
}
pub(crate) use fit_by_maps;
