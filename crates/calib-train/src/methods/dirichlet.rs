//! Dirichlet calibration (Kull et al. 2019, "Beyond temperature scaling: Obtaining
//! well-calibrated multi-class probabilities with Dirichlet calibration", NeurIPS).
//!
//! ```text
//! p = softmax(W log_softmax(z) + b)
//! ODIR penalty: lambda * sum_{i != j} W_ij^2 / (K (K - 1)) + mu * sum_k b_k^2 / K
//! ```
//!
//! Fitted by minimising the mean NLL plus the penalty (`docs/conventions.md`, "Calibrators").
//! When the strengths are not fixed they are chosen by k-fold cross-validation of the held-out
//! NLL over a grid, walked from the strongest penalty down ([`CrossValidation`]), then the map
//! is refitted on all rows. On CPU every fit is a Newton-CG run on the fused host objective
//! ([`crate::Optimizer::Auto`]), which needs far fewer passes than L-BFGS on these
//! ill-conditioned maps (docs/benchmarks.md). Sample weights: the weighted mean NLL; the
//! folds keep each row whole with its weight ([`select_by_cross_validation`]).
//!
//! # Note
//! dirichletcal parameterises `W` relative to its last row (`ref_row`), so its ODIR penalty
//! acts on differences of rows; this implementation follows the paper's formula (and
//! docs/conventions.md) on `W` itself.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::activation::log_softmax;
use burn::tensor::{DType, Device, Tensor};
use calib_core::input::Predictions;
use serde::{Deserialize, Serialize};

use super::affine::{AffineMap, warm_or_identity};
use super::cross_validation::{CrossValidation, edge_warning, select_by_cross_validation};
use crate::api::Fit;
use crate::api::{Fitted, Method};
use crate::error::Result;
use crate::fit::Regularisation;
use crate::fit::{
    CalibrationMap, FitConfig, FitData, Progress, minimise_affine_on, with_host_rows_for,
};

/// A Dirichlet calibrator.
///
/// # Parameters
/// - `affine.weight`: `[K, K]`; `affine.bias`: `[K]`, applied to `log_softmax(z)`.
#[derive(Module, Debug)]
pub struct DirichletCalibration {
    /// The affine map on log-probabilities and its penalty.
    pub affine: AffineMap,
}

impl DirichletCalibration {
    /// The identity map (`W = I`, `b = 0`: returns the uncalibrated probabilities).
    pub fn identity(n_classes: usize, reg: Regularisation, device: &Device, dtype: DType) -> Self {
        Self { affine: AffineMap::identity(n_classes, reg, device, dtype) }
    }
}

impl CalibrationMap for DirichletCalibration {
    fn parameter_dtype(&self) -> DType {
        self.affine.weight.val().dtype()
    }

    fn prepare(&self, logits: Tensor<2>) -> Tensor<2> {
        log_softmax(logits, 1)
    }

    fn forward_features(&self, features: Tensor<2>) -> Tensor<2> {
        self.affine.forward(features)
    }

    fn penalty(&self) -> Option<Tensor<1>> {
        self.affine.penalty()
    }
}

super::affine::affine_calibrator!(DirichletCalibration, Method::Dirichlet);

/// How Dirichlet calibration is regularised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum DirichletRegularisation {
    /// A fixed penalty.
    Fixed {
        /// The penalty.
        regularisation: Regularisation,
    },
    /// ODIR with `(lambda, mu)` chosen by k-fold cross-validation of held-out NLL.
    CrossValidated(CrossValidation),
}

impl Default for DirichletRegularisation {
    fn default() -> Self {
        Self::CrossValidated(CrossValidation::default())
    }
}

/// Settings of a Dirichlet-calibration fit.
///
/// # Example
/// ```
/// use calib_train::{DirichletCalibrationConfig, Regularisation};
/// let fixed = DirichletCalibrationConfig::new()
///     .with_regularisation(Regularisation::Odir { lambda: 1e-2, mu: 1e-2 });
/// # let _ = fixed;
/// ```
#[derive(Config, Debug, PartialEq)]
pub struct DirichletCalibrationConfig {
    /// Optimiser, stopping rule, precision.
    #[config(default = "FitConfig::new()")]
    pub fit: FitConfig,
    /// The penalty, or its cross-validated search (default: ODIR by 5-fold CV).
    #[config(default = "DirichletRegularisation::default()")]
    pub penalty: DirichletRegularisation,
}

impl DirichletCalibrationConfig {
    /// Fixes the penalty (no cross-validation).
    pub fn with_regularisation(self, regularisation: Regularisation) -> Self {
        self.with_penalty(DirichletRegularisation::Fixed { regularisation })
    }

    /// Chooses ODIR strengths by cross-validation with these settings.
    pub fn with_cross_validation(self, cv: CrossValidation) -> Self {
        self.with_penalty(DirichletRegularisation::CrossValidated(cv))
    }
}

impl Fit for DirichletCalibrationConfig {
    type Calibrator = DirichletCalibration;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.fit.validate()?;
        match &self.penalty {
            DirichletRegularisation::Fixed { regularisation } => regularisation.validate(),
            DirichletRegularisation::CrossValidated(cv) => cv.check(),
        }
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<DirichletCalibration>> {
        self.check()?;
        let k = preds.n_classes();
        let device = preds.device().clone();
        let dtype = self.fit.dtype(&device);
        let ad = device.autodiff();
        let make = warm_or_identity::<DirichletCalibration>(k, ad.clone(), dtype);
        let data =
            FitData::new(preds, Method::Dirichlet.name(), &ad, dtype, |z| log_softmax(z, 1))?;
        let data = with_host_rows_for(data, &self.fit)?;
        let (reg, scores) = match &self.penalty {
            DirichletRegularisation::Fixed { regularisation } => (*regularisation, Vec::new()),
            DirichletRegularisation::CrossValidated(cv) => {
                select_by_cross_validation(cv, &data, &self.fit, &make)?
            }
        };
        let (map, mut record) = minimise_affine_on(make(reg, None), &data, &self.fit, progress)?;
        record.cross_validation = scores;
        if let DirichletRegularisation::CrossValidated(cv) = &self.penalty {
            record.warnings.extend(edge_warning(cv, reg));
        }
        Ok(Fitted { calibrator: map.valid(), record })
    }
}
