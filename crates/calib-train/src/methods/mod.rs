//! The calibration methods, one file each.

mod affine;
mod bbq;
mod beta;
mod cdf_spline;
mod centred_isotonic;
mod cross_validation;
mod dirichlet;
mod ece_temperature;
mod ensemble_temperature;
mod histogram;
mod isotonic;
mod kernel;
mod key_guide;
mod lane_blocks;
mod lce;
mod logit_polynomial;
mod matrix;
mod pav_blocks;
mod platt;
mod platt_map;
mod ridge_strengths;
mod scaling_binning;
mod score_buckets;
mod separable;
mod simplex_weights;
mod sorted_pairs;
mod spline;
mod spline_basis;
mod structured_fit;
mod structured_matrix;
mod structured_vector;
mod temperature;
mod temperature_mixture;
mod temperature_newton;
mod top_label_objective;
mod vector;
mod venn_abers;

use std::collections::BTreeMap;

pub use crate::fit::Regularisation;
pub use affine::AffineMap;
pub use bbq::{BayesianBinning, BayesianBinningConfig, BbqMap, bbq_bin_range};
pub use beta::{BetaCalibration, BetaCalibrationConfig, BetaForm, BetaMap};
pub use cdf_spline::{CdfSplineCalibration, CdfSplineCalibrationConfig, CdfSplineMap};
pub use centred_isotonic::{
    CentredIsotonicMap, CentredIsotonicRegression, CentredIsotonicRegressionConfig,
};
pub use cross_validation::CrossValidation;
pub use dirichlet::{DirichletCalibration, DirichletCalibrationConfig, DirichletRegularisation};
pub use ece_temperature::EceTemperatureConfig;
pub use ensemble_temperature::{
    EnsembleTemperatureScaling, EnsembleTemperatureScalingConfig, EtsLoss,
};
pub use histogram::{BinStrategy, HistogramBinning, HistogramBinningConfig, HistogramMap};
pub use isotonic::{IsotonicMap, IsotonicRegression, IsotonicRegressionConfig};
pub use kernel::{KernelBandwidth, KernelCalibration, KernelCalibrationConfig};
pub use lce::{
    BandwidthRule, Kernel, LceCalibration, LceCalibrationConfig, LceMap, Prior, Scale,
    silverman_bandwidth,
};
pub use logit_polynomial::{
    AffineLogitMap, AffineLogitScaling, AffineLogitScalingConfig, LogitPolynomialMap,
    QuadraticLogitMap, QuadraticLogitScaling, QuadraticLogitScalingConfig, floored_logit,
};
pub use matrix::{MatrixScaling, MatrixScalingConfig};
pub use platt::{PlattScaling, PlattScalingConfig};
pub use platt_map::{PlattMap, PlattMapConfig, PlattMaps};
pub use ridge_strengths::RidgeStrengths;
pub use scaling_binning::{ScalingBinning, ScalingBinningConfig, ScalingBinningMap};
pub use spline::{SplineCalibration, SplineCalibrationConfig, SplineMap};
pub use spline_basis::natural_spline_basis;
pub use structured_matrix::{StructuredMatrixScaling, StructuredMatrixScalingConfig};
pub use structured_vector::{StructuredVectorScaling, StructuredVectorScalingConfig};
pub use temperature::{TemperatureScaling, TemperatureScalingConfig, TemperatureSolver};
pub use temperature_mixture::TemperatureMixture;
pub use vector::{VectorScaling, VectorScalingConfig};
pub use venn_abers::{VennAbers, VennAbersConfig, VennAbersMap};

use crate::api::SavedTensor;
use crate::error::{FitError, Result};

/// A named saved parameter, or a format error naming it.
pub(crate) fn param<'a>(
    parameters: &'a BTreeMap<String, SavedTensor>,
    name: &str,
) -> Result<&'a SavedTensor> {
    parameters.get(name).ok_or_else(|| FitError::Format(format!("missing parameter `{name}`")))
}
