//! The affine map `W x + b` shared by matrix scaling and Dirichlet calibration, with its
//! regularisation.

use std::collections::BTreeMap;

use burn::module::{Module, Param};
use burn::tensor::{DType, Device, Tensor};

use crate::api::{SavedSettings, SavedTensor};
use crate::error::Result;
use crate::fit::{AffineShape, HostForm, Regularisation};

/// `x W^T + b` with `W: [K, K]`, `b: [K]`, and its penalty.
#[derive(Module, Debug)]
pub struct AffineMap {
    /// `W`, shape `[K, K]` (row k gives calibrated logit k).
    pub weight: Param<Tensor<2>>,
    /// `b`, shape `[K]`.
    pub bias: Param<Tensor<1>>,
    /// K.
    pub n_classes: usize,
    /// The penalty the map is fitted with (a setting, not a parameter).
    #[module(skip)]
    pub regularisation: Regularisation,
}

impl AffineMap {
    /// `W = I`, `b = 0`: the identity map.
    pub fn identity(n_classes: usize, reg: Regularisation, device: &Device, dtype: DType) -> Self {
        Self {
            weight: Param::from_tensor(Tensor::<2>::eye(n_classes, device).cast(dtype)),
            bias: Param::from_tensor(Tensor::zeros([n_classes], (device, dtype))),
            n_classes,
            regularisation: reg,
        }
    }

    /// Replaces the penalty (parameters unchanged).
    pub fn set_regularisation(&mut self, reg: Regularisation) {
        self.regularisation = reg;
    }

    /// `x W^T + b` for `x: [N, K]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let k = self.n_classes;
        x.matmul(self.weight.val().transpose()) + self.bias.val().reshape([1, k])
    }

    /// The form the fused host objective evaluates.
    pub(crate) fn host_form(&self) -> HostForm {
        HostForm { shape: AffineShape::Full, penalty: self.regularisation }
    }

    /// The penalty as a `[1]` tensor.
    pub fn penalty(&self) -> Option<Tensor<1>> {
        let k = self.n_classes as f64;
        let (w, b) = (self.weight.val(), self.bias.val());
        match self.regularisation {
            Regularisation::None => None,
            Regularisation::Odir { lambda, mu } => {
                let w2 = w.clone().powi_scalar(2);
                let diag = (w2.clone()
                    * Tensor::<2>::eye(self.n_classes, &w.device()).cast(w.dtype()))
                .sum();
                let off = (w2.sum() - diag).mul_scalar(lambda / (k * (k - 1.0)).max(1.0));
                Some(off + b.powi_scalar(2).sum().mul_scalar(mu / k))
            }
            Regularisation::L2 { lambda } => {
                let all = w.powi_scalar(2).sum() + b.powi_scalar(2).sum();
                Some(all.mul_scalar(lambda / (k * (k + 1.0))))
            }
            Regularisation::Ridge { intercept, diagonal, off_diagonal } => {
                let eye = Tensor::<2>::eye(self.n_classes, &w.device()).cast(w.dtype());
                let moved = (w - eye.clone()).powi_scalar(2);
                let diag = (moved.clone() * eye).sum();
                let off = moved.sum() - diag.clone();
                let bias = b.powi_scalar(2).sum().mul_scalar(intercept);
                Some(diag.mul_scalar(diagonal) + off.mul_scalar(off_diagonal) + bias)
            }
        }
    }

    /// Saved parameters.
    pub fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        let k = self.n_classes;
        Ok(BTreeMap::from([
            (
                "weight".into(),
                SavedTensor::read(self.weight.val().detach().reshape([k * k]), vec![k, k])?,
            ),
            ("bias".into(), SavedTensor::read(self.bias.val().detach(), vec![k])?),
        ]))
    }

    /// The penalty's strengths, for the record (0 where it has none).
    pub fn hyperparameters(&self) -> BTreeMap<String, f64> {
        self.regularisation.strengths()
    }

    /// The penalty, saved typed.
    pub fn settings(&self) -> SavedSettings {
        SavedSettings { regularisation: Some(self.regularisation), ..SavedSettings::default() }
    }

    /// Rebuilds from saved parameters (no penalty where the settings name none).
    pub fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        settings: &SavedSettings,
        k: usize,
        device: &Device,
    ) -> Result<Self> {
        let dtype = calib_core::Precision::Auto.dtype(device);
        let w = super::param(parameters, "weight")?.tensor("weight", [k, k], device, dtype)?;
        let b = super::param(parameters, "bias")?.tensor("bias", [k], device, dtype)?;
        Ok(Self {
            weight: Param::from_tensor(w),
            bias: Param::from_tensor(b),
            n_classes: k,
            regularisation: Regularisation::from_saved(settings.regularisation)?,
        })
    }
}

/// A calibrator whose parameters are one `affine: AffineMap` (implemented by
/// [`affine_calibrator!`]).
pub(crate) trait AffineCalibrator: Clone {
    /// The identity map with penalty `reg`.
    fn at_identity(n_classes: usize, reg: Regularisation, device: &Device, dtype: DType) -> Self;

    /// Its affine map.
    fn affine_mut(&mut self) -> &mut AffineMap;
}

/// The starting maps of a strength search: the previous strength's fit with `reg` set (a warm
/// start), or the identity.
pub(crate) fn warm_or_identity<M: AffineCalibrator>(
    n_classes: usize,
    device: Device,
    dtype: DType,
) -> impl Fn(Regularisation, Option<&M>) -> M {
    move |reg, warm| match warm {
        Some(prev) => {
            let mut map = prev.clone();
            map.affine_mut().set_regularisation(reg);
            map
        }
        None => M::at_identity(n_classes, reg, &device, dtype),
    }
}

/// [`HostObjectiveMap`](crate::fit::HostObjectiveMap) and [`Calibrator`](crate::Calibrator)
/// for a calibrator whose parameters are one `affine: AffineMap` (matrix scaling, Dirichlet
/// calibration): everything but the features they map and the method's name is the map's.
macro_rules! affine_calibrator {
    ($ty:ty, $method:expr) => {
        impl $crate::fit::HostObjectiveMap for $ty {
            fn host_form(&self) -> $crate::fit::HostForm {
                self.affine.host_form()
            }
        }

        impl $crate::methods::affine::AffineCalibrator for $ty {
            fn at_identity(
                n_classes: usize,
                reg: Regularisation,
                device: &burn::tensor::Device,
                dtype: burn::tensor::DType,
            ) -> Self {
                Self::identity(n_classes, reg, device, dtype)
            }

            fn affine_mut(&mut self) -> &mut AffineMap {
                &mut self.affine
            }
        }

        impl $crate::api::Calibrator for $ty {
            const METHOD: $crate::api::Method = $method;

            fn n_classes(&self) -> usize {
                self.affine.n_classes
            }

            fn device(&self) -> burn::tensor::Device {
                self.affine.weight.val().device()
            }

            fn dtype(&self) -> burn::tensor::DType {
                self.affine.weight.val().dtype()
            }

            fn forward_scores(&self, scores: burn::tensor::Tensor<2>) -> burn::tensor::Tensor<2> {
                use burn::module::Module as _;
                use $crate::fit::CalibrationMap as _;
                self.valid().forward(scores)
            }

            fn parameters(
                &self,
            ) -> $crate::error::Result<std::collections::BTreeMap<String, $crate::api::SavedTensor>>
            {
                self.affine.parameters()
            }

            fn hyperparameters(&self) -> std::collections::BTreeMap<String, f64> {
                self.affine.hyperparameters()
            }

            fn settings(&self) -> $crate::api::SavedSettings {
                self.affine.settings()
            }

            fn from_parameters(
                parameters: &std::collections::BTreeMap<String, $crate::api::SavedTensor>,
                settings: &$crate::api::SavedSettings,
                n_classes: usize,
                device: &burn::tensor::Device,
            ) -> $crate::error::Result<Self> {
                let affine = $crate::methods::AffineMap::from_parameters(
                    parameters, settings, n_classes, device,
                )?;
                Ok(Self { affine })
            }
        }
    };
}

pub(crate) use affine_calibrator;
