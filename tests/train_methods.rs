//! Vector, matrix and Dirichlet scaling and Platt scaling: convergence against long reference
//! runs, improvement on real CIFAR logits, save/load, determinism and edge cases.

mod common;

use calib::burn::tensor::{DType, Device, Int, Tensor, TensorData};
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{
    AnyCalibrator, Calibrator, CrossValidation, DirichletCalibrationConfig, Fit, FitAny, FitConfig,
    FitEngine, FitError, MatrixScalingConfig, Optimizer, PlattScalingConfig, Regularisation,
    SavedCalibrator, TemperatureScalingConfig, VectorScalingConfig,
};
use calib::{Engine, EvaluationConfig, Metric};
use common::load_dump;

/// A long, tight run: burn's L-BFGS through autodiff (not the fused host path the defaults
/// take on CPU) with a full-size memory, no loss-change stop, many iterations.
fn reference_fit() -> FitConfig {
    FitConfig::new()
        .with_optimizer(Optimizer::Lbfgs { history_size: 300 })
        .with_max_iter(4000)
        .with_tolerance_grad(Some(1e-10))
        .with_tolerance_change(Some(0.0))
        .with_engine(Engine::Tensor)
}

#[test]
fn default_fits_reach_the_nll_of_long_reference_runs() {
    let device = Device::flex();
    let val = load_dump("densenet40_cifar10.npz", "val").host_on(&device);
    let odir = Regularisation::Odir { lambda: 1e-2, mu: 1e-2 };
    let pairs = [
        (
            "vector",
            VectorScalingConfig::new().fit(&val).unwrap().record,
            VectorScalingConfig::new().with_fit(reference_fit()).fit(&val).unwrap().record,
        ),
        (
            "matrix",
            MatrixScalingConfig::new().fit(&val).unwrap().record,
            MatrixScalingConfig::new().with_fit(reference_fit()).fit(&val).unwrap().record,
        ),
        (
            "dirichlet",
            DirichletCalibrationConfig::new().with_regularisation(odir).fit(&val).unwrap().record,
            DirichletCalibrationConfig::new()
                .with_regularisation(odir)
                .with_fit(reference_fit())
                .fit(&val)
                .unwrap()
                .record,
        ),
    ];
    for (name, fit, reference) in pairs {
        assert!(fit.converged, "{name}: {fit:?}");
        assert!(
            (fit.final_loss - reference.final_loss).abs() <= 1e-4,
            "{name}: {} vs reference {}",
            fit.final_loss,
            reference.final_loss
        );
        // The reference is at least as good (up to arithmetic).
        assert!(reference.final_loss <= fit.final_loss + 1e-9, "{name}");
    }
}

/// The fused host objective + host L-BFGS (the CPU default) and burn autodiff + burn's L-BFGS
/// reach the same optimum: both run tightly, and loss and parameters agree.
#[test]
fn host_and_autodiff_engines_reach_the_same_fit() {
    let device = Device::flex();
    let val = load_dump("densenet40_cifar10.npz", "val").host_on(&device);
    let tight = |engine| {
        FitConfig::new()
            .with_tolerance_grad(Some(1e-9))
            .with_tolerance_change(Some(0.0))
            .with_max_iter(3000)
            .with_engine(engine)
    };
    let odir = Regularisation::Odir { lambda: 1e-2, mu: 1e-2 };
    type Params = std::collections::BTreeMap<String, calib::train::SavedTensor>;
    let fit = |engine| -> Vec<(&str, calib::train::FitRecord, Params)> {
        let vector = VectorScalingConfig::new().with_fit(tight(engine)).fit(&val).unwrap();
        let matrix = MatrixScalingConfig::new()
            .with_regularisation(odir)
            .with_fit(tight(engine))
            .fit(&val)
            .unwrap();
        let dirichlet = DirichletCalibrationConfig::new()
            .with_regularisation(odir)
            .with_fit(tight(engine))
            .fit(&val)
            .unwrap();
        vec![
            ("vector", vector.record, vector.calibrator.parameters().unwrap()),
            ("matrix", matrix.record, matrix.calibrator.parameters().unwrap()),
            ("dirichlet", dirichlet.record, dirichlet.calibrator.parameters().unwrap()),
        ]
    };
    for ((name, host, pa), (_, autodiff, pb)) in
        fit(Engine::Fused).into_iter().zip(fit(Engine::Tensor))
    {
        assert_eq!(host.engine, FitEngine::Host, "{name}");
        assert_eq!(autodiff.engine, FitEngine::Autodiff, "{name}");
        assert!(host.converged && autodiff.converged, "{name}: {host:?} {autodiff:?}");
        let (a, b) = (host.final_loss, autodiff.final_loss);
        assert!((a - b).abs() <= 1e-9 * b, "{name}: loss {a} vs {b}");
        for (key, ta) in &pa {
            for (x, y) in ta.values.iter().zip(&pb[key].values) {
                assert!((x - y).abs() <= 1e-4, "{name} {key}: {x} vs {y}");
            }
        }
    }
}

#[test]
fn fitted_on_val_every_method_improves_test_nll_and_ece() {
    let device = Device::flex();
    for name in ["densenet40_cifar10.npz", "resnet110_cifar10-lt.npz"] {
        let val = load_dump(name, "val").host_on(&device);
        let test = load_dump(name, "test").host_on(&device);
        let config = EvaluationConfig::new().with_metrics(vec![Metric::Nll, Metric::Ece]);
        let before = config.evaluate(&test).unwrap();
        let cv = DirichletCalibrationConfig::new();
        let outputs = vec![
            ("vector", VectorScalingConfig::new().fit(&val).unwrap().calibrator.calibrate(&test)),
            ("matrix", MatrixScalingConfig::new().fit(&val).unwrap().calibrator.calibrate(&test)),
            ("dirichlet", cv.fit(&val).unwrap().calibrator.calibrate(&test)),
        ];
        for (method, out) in outputs {
            let after = config.evaluate(&out.unwrap()).unwrap();
            for m in [Metric::Nll, Metric::Ece] {
                assert!(
                    after.get(m).unwrap() < before.get(m).unwrap(),
                    "{name} {method} {m:?}: {:?} -> {:?}",
                    before.get(m),
                    after.get(m)
                );
            }
        }
    }
}

#[test]
fn dirichlet_cross_validation_reports_its_grid_and_picks_the_best() {
    let device = Device::flex();
    let val = load_dump("resnet110_cifar10-lt.npz", "val").host_on(&device);
    let fitted = DirichletCalibrationConfig::new().fit(&val).unwrap();
    let cv = &fitted.record.cross_validation;
    let grid = CrossValidation::default().lambdas.len();
    // Walked strongest first; it stops two points after the best unless the grid ran out.
    assert!(cv.windows(2).all(|w| w[0].lambda > w[1].lambda), "{cv:?}");
    let best_at = (0..cv.len()).min_by(|&a, &b| cv[a].held_out_nll.total_cmp(&cv[b].held_out_nll));
    let best_at = best_at.unwrap();
    assert!(cv.len() == grid || cv.len() - 1 - best_at == 2, "{cv:?}");
    let h = fitted.calibrator.hyperparameters();
    assert_eq!((h["lambda"], h["mu"]), (cv[best_at].lambda, cv[best_at].mu));
    assert!(cv.iter().all(|s| s.held_out_nll.is_finite() && s.held_out_nll > 0.0));
    // The whole grid: the same scores where both fitted (same folds, same warm starts) and,
    // on this U-shaped curve, the same choice.
    let every = CrossValidation { patience: None, ..CrossValidation::default() };
    let all = DirichletCalibrationConfig::new().with_cross_validation(every).fit(&val).unwrap();
    let all_cv = &all.record.cross_validation;
    assert_eq!(all_cv.len(), grid);
    assert_eq!(&all_cv[..cv.len()], &cv[..]);
    let h_all = all.calibrator.hyperparameters();
    assert_eq!((h_all["lambda"], h_all["mu"]), (h["lambda"], h["mu"]), "{all_cv:?}");
}

#[test]
fn saved_calibrators_load_back_bit_identical_and_apply_identically() {
    let device = Device::flex();
    let val = load_dump("densenet40_cifar10.npz", "val").host_on(&device);
    let test = load_dump("densenet40_cifar10.npz", "test").host_on(&device);
    let odir = Regularisation::Odir { lambda: 1e-3, mu: 1e-3 };
    let saved = vec![
        TemperatureScalingConfig::new().fit(&val).unwrap().to_saved().unwrap(),
        VectorScalingConfig::new().fit(&val).unwrap().to_saved().unwrap(),
        MatrixScalingConfig::new().fit(&val).unwrap().to_saved().unwrap(),
        DirichletCalibrationConfig::new()
            .with_regularisation(odir)
            .fit(&val)
            .unwrap()
            .to_saved()
            .unwrap(),
    ];
    let dir = std::env::temp_dir().join(format!("calib-saved-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for s in saved {
        let path = dir.join(format!("{}.json", s.method));
        s.save(&path).unwrap();
        let back = SavedCalibrator::load(&path).unwrap();
        assert_eq!(back, s, "{}", s.method);
        assert!(back.fit.is_some());
        let (a, b) = (
            AnyCalibrator::from_saved(&s, &device).unwrap(),
            AnyCalibrator::from_saved(&back, &device).unwrap(),
        );
        let (ra, rb) = (a.calibrate(&test).unwrap(), b.calibrate(&test).unwrap());
        let nll = EvaluationConfig::new().with_metrics(vec![Metric::Nll]);
        assert_eq!(
            nll.evaluate(&ra).unwrap().get(Metric::Nll),
            nll.evaluate(&rb).unwrap().get(Metric::Nll)
        );
        assert_eq!(a.to_saved().unwrap().parameters, s.parameters);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fits_are_deterministic() {
    let device = Device::flex();
    let val = load_dump("resnet110_cifar10-lt.npz", "val").host_on(&device);
    let a = VectorScalingConfig::new().fit(&val).unwrap().to_saved().unwrap();
    let b = VectorScalingConfig::new().fit(&val).unwrap().to_saved().unwrap();
    assert_eq!(a.parameters, b.parameters);
}

fn logits(rows: &[&[f64]], labels: &[i64], device: &Device) -> Predictions {
    let k = rows[0].len();
    let flat: Vec<f64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Predictions::from_host(&flat, k, labels, InputConfig::new(ScoreKind::Logits), device).unwrap()
}

#[test]
fn separable_data_stays_finite_and_is_reported() {
    let device = Device::flex();
    let preds = logits(
        &[&[2.0, 0.0, 0.0], &[0.0, 1.0, 0.5], &[0.0, 0.2, 3.0], &[1.0, 0.0, 0.0]],
        &[0, 1, 2, 0],
        &device,
    );
    for solver in
        [calib::train::TemperatureSolver::Newton, calib::train::TemperatureSolver::Optimizer]
    {
        let fitted = TemperatureScalingConfig::new().with_solver(solver).fit(&preds).unwrap();
        let t = fitted.calibrator.temperature().unwrap();
        assert!(t.is_finite() && t > 0.0, "{solver:?}: T = {t}");
        assert!(!fitted.record.converged, "{solver:?}");
        assert!(fitted.record.warnings.iter().any(|w| w.contains("no minimum")), "{solver:?}");
        assert!(fitted.record.final_loss.is_finite());
    }
    // Unregularised full maps (Newton-CG on CPU) drive the NLL towards 0 without a minimum:
    // the fit ends with finite parameters, whatever its stop reason.
    let matrix = MatrixScalingConfig::new().fit(&preds).unwrap();
    let dirichlet = DirichletCalibrationConfig::new()
        .with_regularisation(Regularisation::None)
        .fit(&preds)
        .unwrap();
    for (name, record, params) in [
        ("matrix", matrix.record, matrix.calibrator.parameters().unwrap()),
        ("dirichlet", dirichlet.record, dirichlet.calibrator.parameters().unwrap()),
    ] {
        assert!(record.final_loss.is_finite() && record.final_loss < 0.1, "{name}: {record:?}");
        assert!(params.values().all(|t| t.values.iter().all(|v| v.is_finite())), "{name}");
    }
}

#[test]
fn a_single_class_present_and_two_classes_work() {
    let device = Device::flex();
    // Only class 1 appears among the labels (K = 3).
    let preds = logits(
        &[&[2.0, 1.0, 0.0], &[0.0, 1.0, 0.5], &[1.0, 0.2, 3.0], &[1.0, 0.5, 0.0]],
        &[1, 1, 1, 1],
        &device,
    );
    let v = VectorScalingConfig::new()
        .with_fit(FitConfig::new().with_max_iter(200))
        .fit(&preds)
        .unwrap();
    assert!(v.record.final_loss.is_finite() && v.record.final_loss < 0.1, "{:?}", v.record);
    let t = TemperatureScalingConfig::new().fit(&preds).unwrap();
    assert!(t.calibrator.temperature().unwrap().is_finite());
    // K = 2.
    let d = common::synthetic(2000, 2, 5);
    let p = d.host_on(&device);
    for fitted in [
        VectorScalingConfig::new().fit(&p).unwrap().record,
        MatrixScalingConfig::new().fit(&p).unwrap().record,
        DirichletCalibrationConfig::new().fit(&p).unwrap().record,
    ] {
        assert!(fitted.converged, "{fitted:?}");
    }
}

#[test]
fn matrix_scaling_with_fewer_samples_than_classes_refuses_or_regularises() {
    let device = Device::flex();
    let d = common::synthetic(8, 20, 1);
    let preds = d.host_on(&device);
    let err = MatrixScalingConfig::new().fit(&preds).unwrap_err();
    assert!(matches!(err, FitError::Underdetermined { n_samples: 8, n_params: 420, .. }), "{err}");
    let reg = Regularisation::Odir { lambda: 1.0, mu: 1.0 };
    let fitted = MatrixScalingConfig::new().with_regularisation(reg).fit(&preds).unwrap();
    assert!(fitted.record.final_loss.is_finite());
}

#[test]
fn non_finite_loss_is_an_error_naming_the_iteration() {
    let device = Device::flex();
    // Finite logits whose scaled softmax overflows f64 at the start.
    let preds = logits(&[&[1e308, -1e308], &[-1e308, 1e308]], &[0, 0], &device);
    let err = VectorScalingConfig::new().fit(&preds).unwrap_err();
    assert!(matches!(err, FitError::NonFinite { iteration: 0, .. }), "{err}");
}

#[test]
fn wrong_input_kinds_are_refused_plainly() {
    let device = Device::flex();
    let scores = Tensor::<1>::from_data(TensorData::new(vec![0.2f32, 0.9], [2]), &device);
    let labels = Tensor::<1, Int>::from_data(TensorData::new(vec![0i64, 1], [2]), &device);
    let binary = Predictions::binary(scores, labels).unwrap();
    let err = TemperatureScalingConfig::new().fit(&binary).unwrap_err();
    assert!(err.to_string().contains("Platt"), "{err}");
    let multi = logits(&[&[1.0, 0.0], &[0.0, 1.0]], &[0, 1], &device);
    assert!(matches!(
        PlattScalingConfig::new().fit(&multi).unwrap_err(),
        FitError::UnsuitableInput { .. }
    ));
    // A calibrator for K = 2 applied to K = 3 logits.
    let k3 = logits(&[&[1.0, 0.0, 2.0]], &[2], &device);
    let v = VectorScalingConfig::new().fit(&multi).unwrap();
    assert!(matches!(
        v.calibrator.calibrate(&k3).unwrap_err(),
        FitError::ClassMismatch { expected: 2, found: 3 }
    ));
    let bad = FitConfig::new().with_max_iter(0);
    assert!(matches!(
        VectorScalingConfig::new().with_fit(bad).fit(&multi).unwrap_err(),
        FitError::InvalidConfig(_)
    ));
}

#[test]
fn platt_scaling_fits_binary_scores() {
    let device = Device::flex();
    // Over-confident binary scores: s = sigmoid(3 x) where the truth is sigmoid(x).
    let mut rng = common::Rng(11);
    let n = 4000;
    let (mut s, mut y) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let x = 2.0 * rng.normal();
        let truth = 1.0 / (1.0 + (-x).exp());
        y.push(i64::from(rng.uniform() < truth));
        s.push(1.0 / (1.0 + (-3.0 * x).exp()));
    }
    let preds =
        Predictions::from_host(&s, 1, &y, InputConfig::new(ScoreKind::Binary), &device).unwrap();
    for soft in [true, false] {
        let fitted = PlattScalingConfig::new().with_soft_targets(soft).fit(&preds).unwrap();
        assert!(fitted.record.converged, "{:?}", fitted.record);
        let p = fitted.calibrator.parameters().unwrap();
        // The slope undoes the factor 3 on the logit scale.
        assert!((p["slope"].values[0] - 1.0 / 3.0).abs() < 0.05, "{p:?}");
        let out = fitted.calibrator.calibrate(&preds).unwrap();
        let ece = EvaluationConfig::new().with_metrics(vec![Metric::Ece]);
        assert!(
            ece.evaluate(&out).unwrap().get(Metric::Ece)
                < ece.evaluate(&preds).unwrap().get(Metric::Ece)
        );
    }
    let _ = DType::F64;
}

/// Settings are checked on their own, before any data: what `fit` does first.
#[test]
fn settings_are_checked_before_any_data() {
    let cv = |cv: CrossValidation| DirichletCalibrationConfig::new().with_cross_validation(cv);
    let bad: Vec<Box<dyn FitAny>> = vec![
        Box::new(TemperatureScalingConfig::new().with_fit(FitConfig::new().with_max_iter(0))),
        Box::new(
            VectorScalingConfig::new()
                .with_fit(FitConfig::new().with_optimizer(Optimizer::Lbfgs { history_size: 0 })),
        ),
        Box::new(
            MatrixScalingConfig::new().with_regularisation(Regularisation::L2 { lambda: -1.0 }),
        ),
        Box::new(cv(CrossValidation { folds: 1, ..CrossValidation::default() })),
        Box::new(cv(CrossValidation { lambdas: vec![], ..CrossValidation::default() })),
        Box::new(
            PlattScalingConfig::new()
                .with_fit(FitConfig::new().with_tolerance_grad(Some(f64::NAN))),
        ),
    ];
    for config in bad {
        let outcome = config.check_settings();
        assert!(
            matches!(outcome, Err(FitError::InvalidConfig(_))),
            "{}: {outcome:?}",
            config.method()
        );
    }
    assert!(DirichletCalibrationConfig::new().check().is_ok());
    assert!(TemperatureScalingConfig::new().check().is_ok());
}
