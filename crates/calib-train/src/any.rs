//! [`AnyCalibrator`]: any fitted or loaded calibrator, chosen at run time.

use burn::tensor::Device;
use calib_core::input::Predictions;

use crate::binary::TopLabelPrediction;
use crate::calibrator::{Calibrator, Method};
use crate::error::{FitError, Result};
use crate::methods::{
    BetaCalibration, DirichletCalibration, HistogramBinning, IsotonicRegression, LceCalibration,
    MatrixScaling, PlattMaps, PlattScaling, ScalingBinning, SplineCalibration, TemperatureScaling,
    VectorScaling, VennAbers,
};
use crate::saved::SavedCalibrator;

/// Any calibrator of this crate (what a saved file holds).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AnyCalibrator {
    /// Temperature scaling.
    Temperature(TemperatureScaling),
    /// Vector scaling.
    Vector(VectorScaling),
    /// Matrix scaling.
    Matrix(MatrixScaling),
    /// Dirichlet calibration.
    Dirichlet(DirichletCalibration),
    /// Platt scaling.
    Platt(PlattScaling),
    /// Isotonic regression (binary, one-vs-rest or top-label).
    Isotonic(IsotonicRegression),
    /// Histogram binning (binary, one-vs-rest or top-label).
    Histogram(HistogramBinning),
    /// Beta calibration (binary, one-vs-rest or top-label).
    Beta(BetaCalibration),
    /// Platt scaling one-vs-rest or top-label (saved as `platt` with a `form`).
    PlattMaps(PlattMaps),
    /// Scaling-binning (binary, one-vs-rest or top-label).
    ScalingBinning(ScalingBinning),
    /// Inductive Venn-ABERS (binary, one-vs-rest or top-label).
    VennAbers(VennAbers),
    /// LCE calibration (binary, one-vs-rest or top-label).
    Lce(LceCalibration),
    /// Spline calibration (binary, one-vs-rest or top-label).
    Spline(SplineCalibration),
}

macro_rules! each {
    ($self:expr, $c:ident => $body:expr) => {
        match $self {
            AnyCalibrator::Temperature($c) => $body,
            AnyCalibrator::Vector($c) => $body,
            AnyCalibrator::Matrix($c) => $body,
            AnyCalibrator::Dirichlet($c) => $body,
            AnyCalibrator::Platt($c) => $body,
            AnyCalibrator::Isotonic($c) => $body,
            AnyCalibrator::Histogram($c) => $body,
            AnyCalibrator::Beta($c) => $body,
            AnyCalibrator::PlattMaps($c) => $body,
            AnyCalibrator::ScalingBinning($c) => $body,
            AnyCalibrator::VennAbers($c) => $body,
            AnyCalibrator::Lce($c) => $body,
            AnyCalibrator::Spline($c) => $body,
        }
    };
}

impl AnyCalibrator {
    /// Rebuilds a saved calibrator on `device`.
    ///
    /// # Errors
    /// [`FitError::Format`] when parameters are missing or misshapen.
    pub fn from_saved(saved: &SavedCalibrator, device: &Device) -> Result<Self> {
        let (p, h, k) = (&saved.parameters, &saved.hyperparameters, saved.n_classes);
        let method = match saved.method {
            Method::TopLabel => {
                let code = h.get("base").copied().unwrap_or(-1.0);
                Method::from_code(code)
                    .filter(|m| m.is_binary_map() && *m != Method::TopLabel)
                    .ok_or_else(|| FitError::Format(format!("unknown top-label base {code}")))?
            }
            m => m,
        };
        Ok(match method {
            Method::Temperature | Method::EceTemperature => {
                Self::Temperature(TemperatureScaling::from_parameters(p, h, k, device)?)
            }
            Method::Vector => Self::Vector(VectorScaling::from_parameters(p, h, k, device)?),
            Method::Matrix => Self::Matrix(MatrixScaling::from_parameters(p, h, k, device)?),
            Method::Dirichlet => {
                Self::Dirichlet(DirichletCalibration::from_parameters(p, h, k, device)?)
            }
            Method::Platt if h.contains_key("form") => {
                Self::PlattMaps(PlattMaps::from_parameters(p, h, k, device)?)
            }
            Method::Platt => Self::Platt(PlattScaling::from_parameters(p, h, k, device)?),
            Method::Isotonic => {
                Self::Isotonic(IsotonicRegression::from_parameters(p, h, k, device)?)
            }
            Method::Histogram => {
                Self::Histogram(HistogramBinning::from_parameters(p, h, k, device)?)
            }
            Method::Beta => Self::Beta(BetaCalibration::from_parameters(p, h, k, device)?),
            Method::VennAbers => Self::VennAbers(VennAbers::from_parameters(p, h, k, device)?),
            Method::Lce => Self::Lce(LceCalibration::from_parameters(p, h, k, device)?),
            Method::Spline => Self::Spline(SplineCalibration::from_parameters(p, h, k, device)?),
            Method::ScalingBinning => {
                Self::ScalingBinning(ScalingBinning::from_parameters(p, h, k, device)?)
            }
            other => return Err(FitError::Format(format!("`{other}` cannot be loaded"))),
        })
    }

    /// The method.
    pub fn method(&self) -> Method {
        each!(self, c => c.method())
    }

    /// K (0 for temperature scaling, which takes any K).
    pub fn n_classes(&self) -> usize {
        each!(self, c => c.n_classes())
    }

    /// Calibrated scores of `preds` (see [`Calibrator::calibrate`]).
    ///
    /// # Errors
    /// As [`Calibrator::calibrate`].
    pub fn calibrate(&self, preds: &Predictions) -> Result<Predictions> {
        each!(self, c => c.calibrate(preds))
    }

    /// True for binary maps in their top-label form (see [`Self::top_label`]).
    pub fn is_top_label(&self) -> bool {
        match self {
            Self::Isotonic(c) => c.is_top_label(),
            Self::Histogram(c) => c.is_top_label(),
            Self::Beta(c) => c.is_top_label(),
            Self::PlattMaps(c) => c.is_top_label(),
            Self::ScalingBinning(c) => c.is_top_label(),
            Self::VennAbers(c) => c.is_top_label(),
            Self::Lce(c) => c.is_top_label(),
            Self::Spline(c) => c.is_top_label(),
            _ => false,
        }
    }

    /// Calibrated scores of `preds` (see [`Calibrator::calibrate`]) and, for top-label
    /// calibrators, each row's prediction and calibrated confidence
    /// ([`crate::binary::TopLabelPrediction`]; `None` for every other calibrator), from one
    /// read of `preds`.
    ///
    /// # Errors
    /// As [`Calibrator::calibrate`].
    pub fn calibrate_with_top_label(
        &self,
        preds: &Predictions,
    ) -> Result<(Predictions, Option<TopLabelPrediction>)> {
        match self {
            Self::Isotonic(c) => c.calibrate_with_top_label(preds),
            Self::Histogram(c) => c.calibrate_with_top_label(preds),
            Self::Beta(c) => c.calibrate_with_top_label(preds),
            Self::PlattMaps(c) => c.calibrate_with_top_label(preds),
            Self::ScalingBinning(c) => c.calibrate_with_top_label(preds),
            Self::VennAbers(c) => c.calibrate_with_top_label(preds),
            Self::Lce(c) => c.calibrate_with_top_label(preds),
            Self::Spline(c) => c.calibrate_with_top_label(preds),
            other => Ok((other.calibrate(preds)?, None)),
        }
    }

    /// The saved form (without a fit record).
    ///
    /// # Errors
    /// [`FitError::Backend`] when parameters cannot be read back.
    pub fn to_saved(&self) -> Result<SavedCalibrator> {
        each!(self, c => SavedCalibrator::from_calibrator(c))
    }
}

macro_rules! from_calibrator {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for AnyCalibrator {
            fn from(calibrator: $ty) -> Self {
                Self::$variant(calibrator)
            }
        }
    )*};
}

from_calibrator!(
    Temperature(TemperatureScaling),
    Vector(VectorScaling),
    Matrix(MatrixScaling),
    Dirichlet(DirichletCalibration),
    Platt(PlattScaling),
    Isotonic(IsotonicRegression),
    Histogram(HistogramBinning),
    Beta(BetaCalibration),
    PlattMaps(PlattMaps),
    ScalingBinning(ScalingBinning),
    VennAbers(VennAbers),
    Lce(LceCalibration),
    Spline(SplineCalibration)
);

impl TryFrom<(&SavedCalibrator, &Device)> for AnyCalibrator {
    type Error = FitError;
    fn try_from((saved, device): (&SavedCalibrator, &Device)) -> Result<Self> {
        Self::from_saved(saved, device)
    }
}
