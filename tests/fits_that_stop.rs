//! Fits that stop: an underdetermined matrix scaling is regularised instead of grinding, and
//! separable labels end an iterative fit early with a reason.

mod common;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{Calibrator, Fit, FitConfig, MatrixScalingConfig, VectorScalingConfig};
use calib::{Engine, EvaluationConfig, Metric};
use common::load_dump;

/// N < K(K + 1): matrix scaling chooses ODIR strengths by cross-validation (MS-ODIR) instead of
/// grinding to its cap on a problem without a finite optimum, and keeps the accuracy.
#[test]
fn underdetermined_matrix_scaling_is_regularised_by_cross_validation() {
    let device = Device::flex();
    let val = load_dump("lenet5_cifar100.npz", "val").host_on(&device);
    let test = load_dump("lenet5_cifar100.npz", "test").host_on(&device);
    let fitted = MatrixScalingConfig::new().fit(&val).unwrap();
    let r = &fitted.record;
    assert!(r.converged && !r.cross_validation.is_empty(), "{r:?}");
    assert!(r.warnings.iter().any(|w| w.contains("MS-ODIR")), "{:?}", r.warnings);
    let accuracy = |p: &Predictions| {
        EvaluationConfig::new()
            .with_metrics(vec![Metric::Accuracy])
            .evaluate(p)
            .unwrap()
            .named_values()[0]
            .1
    };
    let (before, after) = (accuracy(&test), accuracy(&fitted.calibrator.calibrate(&test).unwrap()));
    assert!(after >= before - 0.01, "accuracy {before} -> {after}");
}

/// Labels the logits separate perfectly: vector scaling's NLL falls towards 0 as its weights
/// grow. The fit stops early, says so, and does not claim convergence.
#[test]
fn separable_labels_stop_quickly_with_a_clear_reason() {
    let device = Device::flex();
    let logits: Vec<f32> = (0..300)
        .flat_map(|i| {
            if i % 3 == 0 {
                [2.0, 0.0, 0.0]
            } else if i % 3 == 1 {
                [0.0, 1.5, 0.0]
            } else {
                [0.0, 0.0, 1.0]
            }
        })
        .collect();
    let labels: Vec<i64> = (0..300).map(|i| (i % 3) as i64).collect();
    let config = InputConfig::new(ScoreKind::Logits);
    let preds = Predictions::from_host(&logits, 3, &labels, config, &device).unwrap();
    for fitted in [
        VectorScalingConfig::new().fit(&preds).unwrap().record,
        VectorScalingConfig::new()
            .with_fit(FitConfig::new().with_engine(Engine::Tensor))
            .fit(&preds)
            .unwrap()
            .record,
    ] {
        assert!(!fitted.converged, "{fitted:?}");
        assert_eq!(fitted.stop_reason.to_string(), "separable", "{fitted:?}");
        assert!(fitted.iterations < 200, "{fitted:?}");
        assert!(fitted.warnings.iter().any(|w| w.contains("separates")), "{fitted:?}");
    }
}

/// The unregularised matrix fit on N < K(K + 1) (`--lambda 0`) has no finite optimum: the
/// Newton-CG fit sees its parameters grow while the gradient barely falls and stops within a
/// few dozen iterations instead of grinding to its cap, saying why.
#[test]
fn unregularised_underdetermined_matrix_scaling_stops_as_unbounded() {
    let device = Device::flex();
    let val = load_dump("lenet5_cifar100.npz", "val").host_on(&device);
    let r = MatrixScalingConfig::new().with_underdetermined(None).fit(&val).unwrap().record;
    assert!(!r.converged, "{r:?}");
    assert_eq!(r.stop_reason.to_string(), "unbounded", "{r:?}");
    assert!(r.iterations <= 64, "{r:?}");
    assert!(r.warnings.iter().any(|w| w.contains("without bound")), "{:?}", r.warnings);
}
