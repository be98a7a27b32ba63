//! Fits that stop: an underdetermined matrix scaling is regularised instead of grinding, and
//! separable labels end an iterative fit early with a reason.

mod common;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{
    Calibrator, Fit, FitConfig, MatrixScalingConfig, Optimizer, Regularisation, SavedCalibrator,
    VectorScalingConfig,
};
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

/// The unregularised matrix fit on N < K(K + 1) (`--lambda 0`) on LeNet-5 logits, which span
/// 86 of the 101 augmented dimensions (84 hidden units): the NLL is flat along the other 15 per
/// class. Steps kept in the data's span converge in a few dozen Newton iterations to a map of
/// moderate size; steps that drift along the flat directions reached weights of 1e7, which
/// turn the logits' f32 rounding into noise (the fit then "converged" after 639 iterations
/// and 222 s to a lower training NLL by fitting that noise).
#[test]
fn unregularised_underdetermined_matrix_scaling_converges_in_the_data_span() {
    let device = Device::flex();
    let val = load_dump("lenet5_cifar100.npz", "val").host_on(&device);
    // `--lambda 0` gives a zero-strength ODIR penalty: the same unpenalised fit.
    let zero = Regularisation::Odir { lambda: 0.0, mu: 0.0 };
    for config in [
        MatrixScalingConfig::new().with_underdetermined(None),
        MatrixScalingConfig::new().with_underdetermined(None).with_regularisation(zero),
    ] {
        let fitted = config.fit(&val).unwrap();
        let r = &fitted.record;
        assert!(r.converged && r.iterations <= 64, "{r:?}");
        assert!(r.warnings.iter().any(|w| w.contains("expect overfitting")), "{:?}", r.warnings);
        let saved = SavedCalibrator::from_calibrator(&fitted.calibrator).unwrap();
        let values = saved.parameters.values().flat_map(|t| t.values.iter());
        let largest = values.fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(largest < 100.0, "largest parameter {largest}");
    }
}

/// Class 0 is separated from the others by the first logit (600 rows); classes 1 and 2
/// overlap. The NLL has no minimiser (the separating weight can always grow) but a finite
/// infimum approached exponentially fast, so every solver meets the gradient tolerance within
/// a few dozen iterations at the same loss. Newton-CG used to crawl here to its cap: its block
/// preconditioner dropped every row of the separated class (weights below an absolute floor).
#[test]
fn quasi_separable_labels_converge_quickly_in_every_solver() {
    let device = Device::flex();
    let preds = quasi_separable(&device);
    let lbfgs = || FitConfig::new().with_optimizer(Optimizer::Lbfgs { history_size: 100 });
    let matrix = || MatrixScalingConfig::new().with_underdetermined(None);
    let fits = [
        ("newton-cg", matrix().fit(&preds).unwrap().record),
        ("host l-bfgs", matrix().with_fit(lbfgs()).fit(&preds).unwrap().record),
        (
            "burn l-bfgs",
            matrix().with_fit(lbfgs().with_engine(Engine::Tensor)).fit(&preds).unwrap().record,
        ),
    ];
    for (name, r) in &fits {
        assert!(r.converged && r.iterations <= 64, "{name}: {r:?}");
        assert!((r.final_loss - fits[0].1.final_loss).abs() < 1e-6, "{name}: {r:?}");
    }
}

/// Class 0 is separated from classes 1 and 2 by the first logit; 1 and 2 overlap.
fn quasi_separable(device: &Device) -> Predictions {
    let mut state = 7u64;
    let mut noise = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) as f32
    };
    let (mut logits, mut labels) = (Vec::new(), Vec::new());
    for i in 0..600 {
        let y = (i % 3) as i64;
        let first = if y == 0 { 1.0 + noise().abs() } else { -1.0 - noise().abs() };
        logits.extend([first, noise(), noise()]);
        labels.push(y);
    }
    let config = InputConfig::new(ScoreKind::Logits);
    Predictions::from_host(&logits, 3, &labels, config, device).unwrap()
}
