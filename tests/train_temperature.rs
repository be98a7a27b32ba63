//! Temperature scaling reaches the 1-D optimum of the NLL on every dump, with both
//! solvers, and keeps accuracy; the optimum T* comes from an independent f64 golden-section
//! search written in `common` (no calib code).

mod common;

use calib::burn::tensor::Device;
use calib::train::{
    Calibrator, Fit, FitConfig, Optimizer, Solver, TemperatureScalingConfig, TemperatureSolver,
};
use calib::{EvaluationConfig, Metric};
use common::{
    collection_dir, golden_section_temperature, load_dump, load_dump_at, nll_at_temperature,
    npz_files, shipped_dumps,
};
use std::path::PathBuf;

fn check_solver(solver: TemperatureSolver, dumps: Vec<PathBuf>) {
    let device = Device::flex();
    for path in dumps {
        let name = path.display();
        let val = load_dump_at(&path, "val");
        let t_star = golden_section_temperature(&val);
        let nll_star = nll_at_temperature(&val, t_star);
        let fitted = TemperatureScalingConfig::new()
            .with_solver(solver)
            .fit(&val.host_on(&device))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(fitted.record.converged, "{name}: {:?}", fitted.record);
        let t = fitted.calibrator.temperature().unwrap();
        let nll = nll_at_temperature(&val, t);
        assert!(
            (nll - nll_star).abs() <= 1e-6 * nll_star,
            "{name} ({solver:?}): NLL(T = {t}) = {nll} vs NLL(T* = {t_star}) = {nll_star}"
        );
        // The record's loss is the NLL at the returned T.
        assert!((fitted.record.final_nll - nll).abs() <= 1e-9 * nll, "{name}");
    }
}

#[test]
fn newton_reaches_the_one_dimensional_optimum_on_every_shipped_dump() {
    check_solver(TemperatureSolver::Newton, shipped_dumps());
}

#[test]
fn lbfgs_reaches_the_one_dimensional_optimum_on_every_shipped_dump() {
    check_solver(TemperatureSolver::Optimizer, shipped_dumps());
}

/// The same over the larger optional collection (`CALIB_DATA_DIR`, or `../shared/data/logits`).
#[test]
fn both_solvers_reach_the_optimum_on_the_collection() {
    let Some(dir) = collection_dir("both_solvers_reach_the_optimum_on_the_collection") else {
        return;
    };
    let dumps = npz_files(&dir);
    assert!(!dumps.is_empty(), "no .npz in {}", dir.display());
    check_solver(TemperatureSolver::Newton, dumps.clone());
    check_solver(TemperatureSolver::Optimizer, dumps);
}

#[test]
fn temperature_keeps_test_accuracy_and_lowers_test_nll_and_ece() {
    let device = Device::flex();
    for name in ["densenet40_cifar10.npz", "resnet110_cifar10-lt.npz", "lenet5_cifar100.npz"] {
        let (val, test) = (load_dump(name, "val"), load_dump(name, "test"));
        let fitted = TemperatureScalingConfig::new().fit(&val.host_on(&device)).unwrap();
        let before = test.host_on(&device);
        let after = fitted.calibrator.calibrate(&before).unwrap();
        let config =
            EvaluationConfig::new().with_metrics(vec![Metric::Accuracy, Metric::Nll, Metric::Ece]);
        let (b, a) = (config.evaluate(&before).unwrap(), config.evaluate(&after).unwrap());
        assert_eq!(b.get(Metric::Accuracy), a.get(Metric::Accuracy), "{name}");
        assert!(a.get(Metric::Nll).unwrap() < b.get(Metric::Nll).unwrap(), "{name}");
        assert!(a.get(Metric::Ece).unwrap() < b.get(Metric::Ece).unwrap(), "{name}");
    }
}

#[test]
fn adam_gets_close_to_the_optimum_and_says_how_close() {
    let device = Device::flex();
    let val = load_dump("densenet40_cifar10.npz", "val");
    let t_star = golden_section_temperature(&val);
    let config = TemperatureScalingConfig::new()
        .with_solver(TemperatureSolver::Optimizer)
        .with_fit(FitConfig::new().with_optimizer(Optimizer::Adam {
            learning_rate: 0.05,
            batch_size: 500,
            epochs: 100,
            seed: 3,
        }));
    let fitted = config.fit(&val.host_on(&device)).unwrap();
    let t = fitted.calibrator.temperature().unwrap();
    assert!((t / t_star - 1.0).abs() < 0.02, "Adam T = {t}, T* = {t_star}");
    assert_eq!(fitted.record.optimizer, Solver::Adam);
    // Deterministic: the same seed gives the same temperature.
    let again = config.fit(&val.host_on(&device)).unwrap();
    assert_eq!(again.calibrator.temperature().unwrap(), t);
}
