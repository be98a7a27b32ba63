//! calib's CubeCL kernels (`Engine::Kernels`) against the fused f64 engine, on wgpu (Mesa's
//! software Vulkan in CI, `CALIB_REQUIRE_WGPU=1`; a real GPU where there is one): real
//! logits, probabilities stored in f32 (the same bins exactly), ties, values on bin edges,
//! p = 0 and 1, partial workgroups, K not a multiple of the workgroup, N smaller than one,
//! thresholds and many bins; and the temperature solver on the device against the host fit.
#![cfg(feature = "wgpu")]

mod common;

use calib::binning::Binning;
use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::input::Predictions;
use calib::metrics::{CalibrationErrorConfig, ScoreSet};
use calib::stats::BinStats;
use calib::train::{Fit, TemperatureScalingConfig, VectorScalingConfig};
use calib::{Engine, EvaluationConfig, Metric, Precision, Report};
use common::Rng;

/// `a` and `b` agree to `tol`, the adaptive metrics to `adaptive_tol`.
fn assert_close(a: &Report, b: &Report, tol: f64, adaptive_tol: f64, what: &str) {
    for (x, y) in a.named_values().iter().zip(b.named_values()) {
        assert_eq!(x.0, y.0);
        let tol = common::tolerance_of(&x.0, tol, adaptive_tol);
        assert!(x.1 == y.1 || (x.1 - y.1).abs() <= tol, "{what} {}: {} vs {}", x.0, x.1, y.1);
    }
}

/// Every default metric with the kernels equals the fused engine's.
fn kernels_match(preds_gpu: &Predictions, preds_cpu: &Predictions, tol: f64, what: &str) {
    kernels_match_ranges(preds_gpu, preds_cpu, tol, tol, what);
}

/// [`kernels_match`], the adaptive metrics to `adaptive_tol`.
fn kernels_match_ranges(
    preds_gpu: &Predictions,
    preds_cpu: &Predictions,
    tol: f64,
    adaptive_tol: f64,
    what: &str,
) {
    let config = EvaluationConfig::new();
    let kernels = config.clone().with_engine(Engine::Kernels).evaluate(preds_gpu).unwrap();
    let fused = config.with_engine(Engine::Fused).evaluate(preds_cpu).unwrap();
    if std::env::var("CALIB_SHOW_DIFFERENCES").is_ok() {
        for (x, y) in kernels.named_values().iter().zip(fused.named_values()) {
            eprintln!("{what} {}: {:.3e}", x.0, (x.1 - y.1).abs());
        }
    }
    assert_close(&kernels, &fused, tol, adaptive_tol, what);
}

fn logits(values: Vec<f32>, labels: Vec<i64>, k: usize, device: &Device) -> Predictions {
    let n = labels.len();
    let v = Tensor::<2>::from_data(TensorData::new(values, [n, k]), device);
    Predictions::logits(v, Tensor::<1, Int>::from_data(TensorData::new(labels, [n]), device))
        .unwrap()
}

fn probabilities(values: Vec<f32>, labels: Vec<i64>, k: usize, device: &Device) -> Predictions {
    let n = labels.len();
    let v = Tensor::<2>::from_data(TensorData::new(values, [n, k]), device);
    let l = Tensor::<1, Int>::from_data(TensorData::new(labels, [n]), device);
    Predictions::probabilities(v, l).unwrap()
}

#[test]
fn kernels_equal_the_fused_engine_on_real_logits() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    for name in ["densenet40_cifar10.npz", "lenet5_cifar100.npz"] {
        let dump = common::load_dump(name, "test");
        kernels_match_ranges(&dump.on(&gpu), &dump.on(&flex), 1e-5, 1e-4, name);
    }
}

/// Sizes around the workgroups: N below one workgroup, N one past it, K one past the
/// class-wise workgroup (64), K = 2, and rows wide enough for the row pass's lanes to take
/// four values at a time (K = 129, 333, 1,000: the unrolled loop and its remainder).
#[test]
fn partial_workgroups_and_small_inputs() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    let sizes =
        [(1, 2), (3, 5), (255, 3), (257, 65), (1_000, 129), (5_000, 2), (200, 333), (100, 1_000)];
    for (n, k) in sizes {
        let dump = common::synthetic(n, k, n as u64 + k as u64);
        kernels_match(&dump.on(&gpu), &dump.on(&flex), 1e-5, &format!("{n}x{k}"));
    }
}

/// Probabilities on a grid of tenths and quarters (values on the edges of 10 and 20 even
/// bins, p = 0 and 1, tied maxima), stored in f32: the kernels put every score in the bin the
/// fused f64 engine does, so counts and hits are equal and score sums equal to 1e-6.
#[test]
fn probabilities_in_f32_fall_in_the_same_bins() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    let rows: [[f32; 4]; 6] = [
        [1.0, 0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0, 0.0],
        [0.1, 0.2, 0.3, 0.4],
        [0.25, 0.25, 0.25, 0.25],
        [0.0, 0.7, 0.2, 0.1],
        [0.6, 0.0, 0.15, 0.25],
    ];
    let mut rng = Rng(3);
    let (mut values, mut labels) = (Vec::new(), Vec::new());
    for i in 0..3_000 {
        values.extend_from_slice(&rows[i % rows.len()]);
        labels.push((rng.next_u64() % 4) as i64);
    }
    let gpu_preds = probabilities(values.clone(), labels.clone(), 4, &gpu);
    let cpu_preds = probabilities(values, labels, 4, &flex);
    for n_bins in [10, 20] {
        for scores in [ScoreSet::TopLabel, ScoreSet::AllClasses] {
            for threshold in [None, Some(0.1)] {
                let config = CalibrationErrorConfig::new()
                    .with_binning(Binning::Even { n_bins })
                    .with_scores(scores)
                    .with_threshold(threshold);
                let what = format!("{n_bins} bins {scores:?} threshold {threshold:?}");
                let k = config.statistics(&gpu_preds, Precision::Auto, Engine::Kernels).unwrap();
                let f = config.statistics(&cpu_preds, Precision::Auto, Engine::Fused).unwrap();
                same_bins(&k, &f, &what);
                // burn's tensor ops in f32 bin the same way (edges rounded down there too);
                // their f32 scatter-add sums are good to f32 rounding only.
                let t = config.statistics(&gpu_preds, Precision::F32, Engine::Tensor).unwrap();
                assert_eq!(t.count, f.count, "tensor engine, {what}");
                assert_eq!(t.sum_outcome, f.sum_outcome, "tensor engine, {what}");
            }
        }
    }
    kernels_match(&gpu_preds, &cpu_preds, 1e-6, "grid probabilities");
}

fn same_bins(a: &BinStats, b: &BinStats, what: &str) {
    assert_eq!(a.count, b.count, "{what}: counts");
    assert_eq!(a.sum_outcome, b.sum_outcome, "{what}: hits");
    for (x, y) in a.sum_score.iter().zip(&b.sum_score) {
        assert!((x - y).abs() <= 1e-6, "{what}: score sum {x} vs {y}");
    }
}

/// Logits on a coarse grid, so rows hold exact ties: the prediction is the first maximum
/// (accuracy equal to the last count), everything else within f32 rounding.
///
/// Ties make scores like `1 / (1 + 2) = 1/3` that sit exactly on an edge of 15 bins in f64
/// and just above it in f32 (so in the next bin up); 13 bins have no edge at `1/m`, m <= 7.
#[test]
fn tied_logits_resolve_to_the_lowest_class() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    let (n, k) = (4_000, 7);
    let mut rng = Rng(11);
    let values: Vec<f32> = (0..n * k).map(|_| (rng.next_u64() % 5) as f32 * 0.5).collect();
    let labels: Vec<i64> = (0..n).map(|_| (rng.next_u64() % k as u64) as i64).collect();
    let g = logits(values.clone(), labels.clone(), k, &gpu);
    let c = logits(values, labels, k, &flex);
    for scores in [ScoreSet::TopLabel, ScoreSet::AllClasses] {
        let config = CalibrationErrorConfig::new()
            .with_binning(Binning::Even { n_bins: 13 })
            .with_scores(scores);
        let a = config.statistics(&g, Precision::Auto, Engine::Kernels).unwrap();
        let b = config.statistics(&c, Precision::Auto, Engine::Fused).unwrap();
        assert_eq!(a.count, b.count, "{scores:?}");
        assert_eq!(a.sum_outcome, b.sum_outcome, "{scores:?}");
        for (x, y) in a.sum_score.iter().zip(&b.sum_score) {
            assert!((x - y).abs() <= 1e-4 * y.max(1.0), "{scores:?}: {x} vs {y}");
        }
    }
    let accuracy = EvaluationConfig::new().with_metrics(vec![Metric::Accuracy]);
    let a = accuracy.clone().with_engine(Engine::Kernels).evaluate(&g).unwrap();
    let b = accuracy.with_engine(Engine::Fused).evaluate(&c).unwrap();
    assert_eq!(a.values[0].value, b.values[0].value);
}

/// Class-wise bins with a threshold and many bins (50 and 256, the register limit), and
/// top-label bins grouped by predicted class.
#[test]
fn thresholds_and_many_bins() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    let dump = common::synthetic(6_000, 37, 5);
    let (g, c) = (dump.on(&gpu), dump.on(&flex));
    for n_bins in [50, 256] {
        for (scores, class_conditional) in
            [(ScoreSet::AllClasses, true), (ScoreSet::TopLabel, true), (ScoreSet::TopLabel, false)]
        {
            let config = CalibrationErrorConfig::new()
                .with_binning(Binning::Even { n_bins })
                .with_scores(scores)
                .with_class_conditional(class_conditional)
                .with_threshold(Some(0.01));
            let a = config.compute_with(&g, Precision::Auto, Engine::Kernels).unwrap().value;
            let b = config.compute_with(&c, Precision::Auto, Engine::Fused).unwrap().value;
            assert!((a - b).abs() <= 1e-5, "{n_bins} {scores:?}: {a} vs {b}");
        }
    }
}

/// The kernel engine refuses what it cannot run instead of falling back silently.
#[test]
fn the_kernel_engine_names_what_it_cannot_take() {
    let Some(gpu) = common::wgpu() else { return };
    let dump = common::synthetic(100, 3, 1);
    let err = EvaluationConfig::new()
        .with_engine(Engine::Kernels)
        .with_precision(Precision::F64)
        .evaluate(&dump.on(&gpu))
        .unwrap_err();
    assert!(err.to_string().contains("f32"), "{err}");
    let many = CalibrationErrorConfig::new()
        .with_binning(Binning::Even { n_bins: 300 })
        .with_scores(ScoreSet::AllClasses);
    let err = many.compute_with(&dump.on(&gpu), Precision::Auto, Engine::Kernels).unwrap_err();
    assert!(err.to_string().contains("256 bins"), "{err}");
}

/// The temperature fit on the device (Newton with kernel passes) lands on the host f64
/// fit's temperature.
#[test]
fn temperature_on_the_device_matches_the_host_fit() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    let dump = common::load_dump("densenet40_cifar10.npz", "val");
    let config = TemperatureScalingConfig::new();
    let device = config.fit(&dump.on(&gpu)).unwrap();
    let host = config.fit(&dump.on(&flex)).unwrap();
    assert!(device.record.converged, "{:?}", device.record.stop_reason);
    assert_eq!(format!("{:?}", device.record.engine), "Kernels");
    let (a, b) = (device.calibrator.temperature().unwrap(), host.calibrator.temperature().unwrap());
    assert!((a / b - 1.0).abs() <= 1e-5, "device T {a} vs host T {b}");
}

/// Logits held as several device tensors fit as one set: the same temperature as the whole.
#[test]
fn temperature_over_parts_matches_the_whole() {
    let Some(gpu) = common::wgpu() else { return };
    let dump = common::load_dump("densenet40_cifar10.npz", "val");
    let k = dump.n_classes;
    let parts: Vec<Predictions> = [0..1_234, 1_234..3_000, 3_000..dump.n_samples()]
        .into_iter()
        .map(|r| {
            let values = dump.logits[r.start * k..r.end * k].to_vec();
            logits(values, dump.labels[r].to_vec(), k, &gpu)
        })
        .collect();
    let config = TemperatureScalingConfig::new();
    let whole = config.fit(&dump.on(&gpu)).unwrap().calibrator.temperature().unwrap();
    let rows = calib::engine::TemperedRows::from_parts(&parts).unwrap();
    assert_eq!(rows.n_samples(), dump.n_samples());
    let fitted = config.fit_on_device(&rows).unwrap();
    assert!(fitted.record.converged);
    let t = fitted.calibrator.temperature().unwrap();
    assert!((t / whole - 1.0).abs() <= 1e-6, "parts {t} vs whole {whole}");
}

/// Every kernel launched with CubeCL's bounds checks (each index clamped, each loop bounded)
/// gives what it gives launched unchecked, the default: the default metric set (row pass,
/// static bins, adaptive ranges), several parts, the temperature solver and vector scaling's
/// fused pass. Bin sums are exact integers; NLL and Brier are f32 sums by burn's reductions,
/// whose order may vary from run to run, hence 1e-6. The launch mode is global, so one test
/// sets it and puts it back.
#[test]
fn checked_and_unchecked_launches_agree() {
    let Some(gpu) = common::wgpu() else { return };
    let dump = common::load_dump("lenet5_cifar100.npz", "test");
    let k = dump.n_classes;
    let whole = dump.on(&gpu);
    let parts: Vec<Predictions> = [0..777, 777..dump.n_samples()]
        .into_iter()
        .map(|r| {
            let values = dump.logits[r.start * k..r.end * k].to_vec();
            logits(values, dump.labels[r].to_vec(), k, &gpu)
        })
        .collect();
    let run = || {
        let config = EvaluationConfig::new().with_engine(Engine::Kernels);
        let whole_report = config.evaluate(&whole).unwrap();
        let parts_report = config.evaluate_parts(&parts).unwrap();
        let t = TemperatureScalingConfig::new().fit(&whole).unwrap().calibrator;
        let vector = VectorScalingConfig::new().fit(&whole).unwrap().record.final_loss;
        (whole_report.named_values(), parts_report.named_values(), t.temperature().unwrap(), vector)
    };
    calib::engine::set_checked_kernels(true);
    let checked = run();
    calib::engine::set_checked_kernels(false);
    let unchecked = run();
    let close = |a: f64, b: f64, what: &str| {
        assert!((a - b).abs() <= 1e-6 * a.abs().max(1.0), "{what}: {a} vs {b}");
    };
    for (a, b) in checked.0.iter().chain(&checked.1).zip(unchecked.0.iter().chain(&unchecked.1)) {
        assert_eq!(a.0, b.0);
        close(a.1, b.1, &a.0);
    }
    close(checked.2, unchecked.2, "temperature");
    close(checked.3, unchecked.3, "vector scaling's loss");
}
