//! The registry: the one list of calibration methods. [`Method`](super::Method),
//! [`AnyCalibrator`](super::AnyCalibrator), the saved-form loader and the default settings of
//! each method are generated from it (`calibrators!` hands the list to a generating macro).
//!
//! A line of `calibrators`: `family Variant = "name", code: Calibrator by Config;`
//! - `family`: `scaling` (maps logits, any K) or `map` (binary maps: binary scores, one-vs-rest
//!   or top-label);
//! - `Variant`: the [`Method`](super::Method) and [`AnyCalibrator`](super::AnyCalibrator)
//!   variant; `"name"`: its command-line and saved name;
//! - `code`: its number in format-1 files (which coded a top-label calibrator's base); never
//!   reuse one;
//! - `Calibrator`: the fitted type ([`Calibrator`](super::Calibrator)); `Config`: the settings
//!   that fit it ([`Fit`](super::Fit)), whose `new()` are the method's defaults.
//!
//! `methods` are names that fit a calibrator of the list another way (`fits` names it, `none`
//! when the base comes from the saved file); `forms` are calibrator types saved under another
//! method's name, told apart by the [`SavedSettings`](super::SavedSettings) field they set.
//!
//! Adding a calibrator: one line here (docs/architecture.md, "Adding a calibrator").

/// Hands the registry to `$then!`, a macro of the caller's that generates from it (calib-cli
/// generates `calib fit`'s subcommands so). The identifiers of a line are this crate's types.
#[macro_export]
macro_rules! calibrators {
    ($then:ident) => {
        $then! {
            calibrators {
                scaling Temperature = "temperature", 0: TemperatureScaling by TemperatureScalingConfig;
                scaling Vector = "vector", 1: VectorScaling by VectorScalingConfig;
                scaling Matrix = "matrix", 2: MatrixScaling by MatrixScalingConfig;
                scaling Dirichlet = "dirichlet", 3: DirichletCalibration by DirichletCalibrationConfig;
                scaling Sms = "sms", 14: StructuredMatrixScaling by StructuredMatrixScalingConfig;
                scaling Svs = "svs", 15: StructuredVectorScaling by StructuredVectorScalingConfig;
                scaling Ets = "ets", 19: EnsembleTemperatureScaling by EnsembleTemperatureScalingConfig;
                scaling Kernel = "kernel", 22: KernelCalibration by KernelCalibrationConfig;
                map Platt = "platt", 4: PlattScaling by PlattScalingConfig;
                map Isotonic = "isotonic", 5: IsotonicRegression by IsotonicRegressionConfig;
                map Histogram = "histogram", 6: HistogramBinning by HistogramBinningConfig;
                map Beta = "beta", 7: BetaCalibration by BetaCalibrationConfig;
                map ScalingBinning = "scaling-binning", 9: ScalingBinning by ScalingBinningConfig;
                map VennAbers = "venn-abers", 10: VennAbers by VennAbersConfig;
                map Lce = "lce", 11: LceCalibration by LceCalibrationConfig;
                map Spline = "spline", 12: SplineCalibration by SplineCalibrationConfig;
                map Affine = "affine", 16: AffineLogitScaling by AffineLogitScalingConfig;
                map Quadratic = "quadratic", 17: QuadraticLogitScaling by QuadraticLogitScalingConfig;
                map Cir = "cir", 18: CentredIsotonicRegression by CentredIsotonicRegressionConfig;
                map Bbq = "bbq", 20: BayesianBinning by BayesianBinningConfig;
                map CdfSpline = "cdf-spline", 21: CdfSplineCalibration by CdfSplineCalibrationConfig;
            }
            methods {
                map TopLabel = "top-label", 8 fits none;
                scaling EceTemperature = "ece-temperature", 13 fits Temperature;
            }
            forms {
                PlattMaps: PlattMaps of Platt when form;
            }
        }
    };
}

pub(crate) use crate::calibrators;
