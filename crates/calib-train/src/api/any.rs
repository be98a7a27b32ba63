//! [`AnyCalibrator`]: any fitted or loaded calibrator, chosen at run time, and [`FitAny`]: any
//! method's settings; both generated from the registry.

use burn::tensor::Device;
use calib_core::input::Predictions;

use super::calibrator::{Calibrator, Fitted};
use super::fit::Fit;
use super::method::Method;
use super::registry::calibrators;
use super::saved::SavedCalibrator;
use crate::binary::TopLabelPrediction;
use crate::error::{FitError, Result};
use crate::fit::{Progress, SampleWeighting};
// The registry names the calibrators and configs; every one is exported by `methods`.
use crate::methods::*;

/// `AnyCalibrator`, its dispatch, loader and conversions, and the default settings of each
/// method, from the registry.
macro_rules! define_any {
    (
        calibrators { $($family:ident $variant:ident = $name:literal, $code:literal : $cal:ident by $config:ident;)* }
        methods { $($mfamily:ident $mvariant:ident = $mname:literal, $mcode:literal fits $base:ident;)* }
        forms { $($form:ident : $fty:ident of $of:ident when $key:ident;)* }
    ) => {
        /// Any calibrator of this crate (what a saved file holds).
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub enum AnyCalibrator {
            $(
                #[doc = concat!("[`", stringify!($cal), "`].")]
                $variant($cal),
            )*
            $(
                #[doc = concat!("[`", stringify!($fty), "`] (saved as `", stringify!($of), "`).")]
                $form($fty),
            )*
        }

        $(impl From<$cal> for AnyCalibrator {
            fn from(calibrator: $cal) -> Self {
                Self::$variant(calibrator)
            }
        })*
        $(impl From<$fty> for AnyCalibrator {
            fn from(calibrator: $fty) -> Self {
                Self::$form(calibrator)
            }
        })*

        impl AnyCalibrator {
            /// The method.
            pub fn method(&self) -> Method {
                match self {
                    $(Self::$variant(c) => c.method(),)*
                    $(Self::$form(c) => c.method(),)*
                }
            }

            /// K (0 for temperature scaling, which takes any K).
            pub fn n_classes(&self) -> usize {
                match self {
                    $(Self::$variant(c) => c.n_classes(),)*
                    $(Self::$form(c) => c.n_classes(),)*
                }
            }

            /// Calibrated scores of `preds` (see [`Calibrator::calibrate`]).
            ///
            /// # Errors
            /// As [`Calibrator::calibrate`].
            pub fn calibrate(&self, preds: &Predictions) -> Result<Predictions> {
                match self {
                    $(Self::$variant(c) => c.calibrate(preds),)*
                    $(Self::$form(c) => c.calibrate(preds),)*
                }
            }

            /// True for binary maps in their top-label form ([`Calibrator::is_top_label`]).
            pub fn is_top_label(&self) -> bool {
                match self {
                    $(Self::$variant(c) => c.is_top_label(),)*
                    $(Self::$form(c) => c.is_top_label(),)*
                }
            }

            /// [`Calibrator::calibrate_with_top_label`].
            ///
            /// # Errors
            /// As [`Calibrator::calibrate`].
            pub fn calibrate_with_top_label(
                &self,
                preds: &Predictions,
            ) -> Result<(Predictions, Option<TopLabelPrediction>)> {
                match self {
                    $(Self::$variant(c) => c.calibrate_with_top_label(preds),)*
                    $(Self::$form(c) => c.calibrate_with_top_label(preds),)*
                }
            }

            /// The saved form (without a fit record).
            ///
            /// # Errors
            /// [`FitError::Backend`] when parameters cannot be read back.
            pub fn to_saved(&self) -> Result<SavedCalibrator> {
                match self {
                    $(Self::$variant(c) => SavedCalibrator::from_calibrator(c),)*
                    $(Self::$form(c) => SavedCalibrator::from_calibrator(c),)*
                }
            }

            /// Rebuilds a saved calibrator on `device`.
            ///
            /// # Errors
            /// [`FitError::Format`] when parameters are missing or misshapen.
            pub fn from_saved(saved: &SavedCalibrator, device: &Device) -> Result<Self> {
                let (p, s, k) = (&saved.parameters, &saved.settings, saved.n_classes);
                Ok(match saved_calibrator(saved)? {
                    $(Method::$of if s.$key.is_some() => {
                        Self::$form($fty::from_parameters(p, s, k, device)?)
                    })*
                    $(Method::$variant => Self::$variant($cal::from_parameters(p, s, k, device)?),)*
                    other => return Err(FitError::Format(format!("`{other}` cannot be loaded"))),
                })
            }
        }

        impl Method {
            /// The method's default settings (each config's `new()`).
            pub fn default_config(self) -> Option<Box<dyn FitAny>> {
                Some(match self {
                    $(Self::$variant => Box::new(<$config>::new()),)*
                    $(Self::$mvariant => return None,)*
                })
            }

            /// The calibrator a saved file of this method holds (a method that fits a
            /// calibrator another way saves as that calibrator).
            fn saved_as(self) -> Option<Self> {
                match self {
                    $(Self::$mvariant => base!($base),)*
                    other => Some(other),
                }
            }
        }
    };
}

/// A `fits` target of the registry's `methods`.
macro_rules! base {
    (none) => {
        None
    };
    ($base:ident) => {
        Some(Method::$base)
    };
}

/// The calibrator `saved` holds: a top-label file names its binary base.
fn saved_calibrator(saved: &SavedCalibrator) -> Result<Method> {
    if saved.method == Method::TopLabel {
        let base = saved.settings.base;
        return base.filter(|m| m.is_binary_map() && m.default_config().is_some()).ok_or_else(
            || FitError::Format(format!("top-label base {base:?} is not a binary map")),
        );
    }
    saved
        .method
        .saved_as()
        .ok_or_else(|| FitError::Format(format!("`{}` cannot be loaded", saved.method)))
}

calibrators!(define_any);

impl Fitted<AnyCalibrator> {
    /// The saved form (JSON-ready), with the fit record.
    ///
    /// # Errors
    /// [`FitError::Backend`] when parameters cannot be read back.
    pub fn to_saved(&self) -> Result<SavedCalibrator> {
        Ok(self.calibrator.to_saved()?.with_record(self.record.clone()))
    }
}

impl TryFrom<(&SavedCalibrator, &Device)> for AnyCalibrator {
    type Error = FitError;
    fn try_from((saved, device): (&SavedCalibrator, &Device)) -> Result<Self> {
        Self::from_saved(saved, device)
    }
}

/// A [`Fit`] whose calibrator is returned as an [`AnyCalibrator`]: one object type for every
/// method, for code that chooses the method at run time (`Box<dyn FitAny>`).
pub trait FitAny {
    /// The method these settings fit.
    fn method(&self) -> Method;

    /// [`Fit::check`].
    ///
    /// # Errors
    /// As [`Fit::check`].
    fn check_settings(&self) -> Result<()>;

    /// [`Fit::SAMPLE_WEIGHTS`]: how the method takes sample weights.
    fn sample_weighting(&self) -> SampleWeighting;

    /// [`Fit::fit_with_progress`], the calibrator wrapped in [`AnyCalibrator`].
    ///
    /// # Errors
    /// As [`Fit::fit_with_progress`].
    fn fit_any(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<AnyCalibrator>>;
}

impl<F: Fit> FitAny for F
where
    F::Calibrator: Into<AnyCalibrator>,
{
    fn method(&self) -> Method {
        F::Calibrator::METHOD
    }

    fn check_settings(&self) -> Result<()> {
        self.check()
    }

    fn sample_weighting(&self) -> SampleWeighting {
        F::SAMPLE_WEIGHTS
    }

    fn fit_any(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<AnyCalibrator>> {
        let Fitted { calibrator, record } = self.fit_with_progress(preds, progress)?;
        Ok(Fitted { calibrator: calibrator.into(), record })
    }
}
