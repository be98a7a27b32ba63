//! Matrix scaling (Guo et al. 2017, §4.2): a full affine map of the logits.
//!
//! ```text
//! p = softmax(W z + b),   W in R^{K x K} (identity at the start), b in R^K (zero)
//! ```
//!
//! Fitted by minimising the mean NLL plus an optional [`Regularisation`] (`docs/conventions.md`,
//! "Calibrators"). With `K (K + 1)` parameters it overfits small calibration sets; with fewer
//! samples than classes the unregularised problem has no minimum, so the fit refuses it.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{DType, Device, Tensor};
use calib_core::input::Predictions;

use super::affine::{AffineMap, warm_or_identity};
use super::cross_validation::{CrossValidation, edge_warning, select_by_cross_validation};
use crate::api::Fit;
use crate::api::{Fitted, Method};
use crate::error::{FitError, Result};
use crate::fit::Regularisation;
use crate::fit::{
    CalibrationMap, FitConfig, FitData, Progress, minimise_affine_on, prepare, with_host_rows_for,
};

/// A matrix-scaling calibrator.
///
/// # Parameters
/// - `affine.weight`: `[K, K]`; `affine.bias`: `[K]`.
#[derive(Module, Debug)]
pub struct MatrixScaling {
    /// The affine map and its penalty.
    pub affine: AffineMap,
}

impl MatrixScaling {
    /// The identity map for K classes.
    pub fn identity(n_classes: usize, reg: Regularisation, device: &Device, dtype: DType) -> Self {
        Self { affine: AffineMap::identity(n_classes, reg, device, dtype) }
    }
}

impl CalibrationMap for MatrixScaling {
    fn parameter_dtype(&self) -> DType {
        self.affine.weight.val().dtype()
    }

    fn forward_features(&self, logits: Tensor<2>) -> Tensor<2> {
        self.affine.forward(logits)
    }

    fn penalty(&self) -> Option<Tensor<1>> {
        self.affine.penalty()
    }
}

super::affine::affine_calibrator!(MatrixScaling, Method::Matrix);

/// Settings of a matrix-scaling fit.
#[derive(Config, Debug, PartialEq)]
pub struct MatrixScalingConfig {
    /// Optimiser, stopping rule, precision.
    #[config(default = "FitConfig::new()")]
    pub fit: FitConfig,
    /// Penalty.
    #[config(default = "Regularisation::None")]
    pub regularisation: Regularisation,
    /// When `regularisation` is inactive and N < K(K + 1) (more parameters than samples, so
    /// the unregularised fit has no finite optimum and grinds), choose ODIR strengths by this
    /// cross-validation instead: Kull et al.'s "MS-ODIR". `None` fits as asked.
    #[config(default = "Some(CrossValidation::default())")]
    pub underdetermined: Option<CrossValidation>,
}

impl Fit for MatrixScalingConfig {
    type Calibrator = MatrixScaling;

    /// Weighted, except that the cross-validated strength of an underdetermined fit (folds
    /// `i mod F`) runs on the repeated rows.
    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.fit.validate()?;
        self.regularisation.validate()
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<MatrixScaling>> {
        self.check()?;
        let (n, k) = (preds.n_samples(), preds.n_classes());
        if n < k && !self.regularisation.is_active() {
            return Err(FitError::Underdetermined {
                method: "matrix scaling".into(),
                n_params: k * (k + 1),
                n_samples: n,
                hint: "set a regularisation (ODIR or L2), or use temperature or vector scaling"
                    .into(),
            });
        }
        // Cross-validation needs two rows a fold; fewer rows are fitted as asked (and warned).
        // With sample weights N is their total, as for the repeated rows.
        let total = preds.total_weight();
        let auto = self.underdetermined.as_ref().filter(|cv| {
            total < (k * (k + 1)) as f64
                && !self.regularisation.is_active()
                && total >= (2 * cv.folds) as f64
                && n >= cv.folds
        });
        if let Some(cv) = auto {
            return self.fit_cross_validated(cv, preds, progress);
        }
        let reg = self.regularisation;
        let init = |device: &_, dtype| MatrixScaling::identity(k, reg, device, dtype);
        let (map, data) = prepare(init, preds, Method::Matrix.name(), &self.fit)?;
        let (map, mut record) = minimise_affine_on(map, &data, &self.fit, progress)?;
        if n < k * (k + 1) && !reg.is_active() {
            record.warnings.push(format!(
                "{} parameters from {n} samples without regularisation: expect overfitting; \
                 Dirichlet calibration with ODIR is the regularised alternative",
                k * (k + 1)
            ));
        }
        Ok(Fitted { calibrator: map.valid(), record })
    }
}

impl MatrixScalingConfig {
    /// MS-ODIR: ODIR strengths chosen by `cv`, then the full fit with them.
    fn fit_cross_validated(
        &self,
        cv: &CrossValidation,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<MatrixScaling>> {
        let k = preds.n_classes();
        let device = preds.device().clone();
        let dtype = self.fit.dtype(&device);
        let ad = device.autodiff();
        let make = warm_or_identity::<MatrixScaling>(k, ad.clone(), dtype);
        let data = FitData::new(preds, Method::Matrix.name(), &ad, dtype, |z| z)?;
        let data = with_host_rows_for(data, &self.fit)?;
        let (reg, scores) = select_by_cross_validation(cv, &data, &self.fit, &make)?;
        let (map, mut record) = minimise_affine_on(make(reg, None), &data, &self.fit, progress)?;
        record.cross_validation = scores;
        record.warnings.push(format!(
            "N = {} < K(K + 1) = {}: ODIR regularisation chosen by cross-validation (MS-ODIR, \
             Kull et al. 2019); --lambda 0 forces the unregularised fit",
            preds.n_samples(),
            k * (k + 1)
        ));
        record.warnings.extend(edge_warning(cv, reg));
        Ok(Fitted { calibrator: map.valid(), record })
    }
}
