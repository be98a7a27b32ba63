//! Kernel calibration against probmetrics' `KernelCalibrator` (`tests/fixtures/kernel.py`):
//! the Dirichlet kernel on K classes, the Beta kernel on two, the leave-one-out bandwidth;
//! save and load.
//!
//! probmetrics computes in float64 from float64 input, so the two agree to rounding: 1e-10.

mod common;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{
    AnyCalibrator, Calibrator, Fit, KernelBandwidth, KernelCalibrationConfig, SavedCalibrator,
};
use common::fixtures::{Fixture, logit_rows, max_diff, values};

fn logits_of(logits: Vec<f64>, k: usize, labels: Vec<i64>) -> Predictions {
    let config = InputConfig::new(ScoreKind::Logits);
    Predictions::from_host_vec(logits, k, labels, config, &Device::flex()).unwrap()
}

/// Calibrated log-probabilities back to probabilities.
fn probabilities(calibrated: &Predictions) -> Vec<f64> {
    values(calibrated).iter().map(|v| v.exp()).collect()
}

#[test]
fn kernel_calibration_equals_probmetrics() {
    let mut fx = Fixture::open("kernel.npz");
    let (val, test) = (
        logit_rows("densenet40_cifar10.npz", "val", 2000),
        logit_rows("densenet40_cifar10.npz", "test", 1000),
    );
    let fitted = KernelCalibrationConfig::new().fit(&val).unwrap();
    assert!((fitted.calibrator.bandwidth - fx.f64s("c10_bandwidth")[0]).abs() < 1e-14);
    let calibrated = fitted.calibrator.calibrate(&test).unwrap();
    let d = max_diff(&probabilities(&calibrated), &fx.f64s("c10_probs"));
    assert!(d < 1e-10, "Dirichlet kernel vs probmetrics: {d:e}");
    // Saved and loaded, the same predictions bit for bit.
    let json = fitted.to_saved().unwrap().to_json();
    let saved = SavedCalibrator::from_json(&json).unwrap();
    let loaded = AnyCalibrator::from_saved(&saved, &Device::flex()).unwrap();
    let (a, b) = (values(&calibrated), values(&loaded.calibrate(&test).unwrap()));
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
}

/// Two columns `ln [1 - s, s]`: the Beta kernel on the class-1 score.
#[test]
fn two_classes_take_the_beta_kernel() {
    let mut fx = Fixture::open("kernel.npz");
    let mut bx = Fixture::open("binary_maps.npz");
    let as_two = |p: Vec<f64>, y: Vec<i64>| {
        let mut logits = Vec::new();
        let mut outcome = Vec::new();
        for (row, &y) in p.chunks_exact(10).zip(&y) {
            let c = (0..10).fold(0, |b, k| if row[k] > row[b] { k } else { b });
            logits.extend([(1.0 - row[c]).max(1e-300).ln(), row[c].max(1e-300).ln()]);
            outcome.push(i64::from(c as i64 == y));
        }
        logits_of(logits, 2, outcome)
    };
    let cal = as_two(bx.f64s("cal_probs"), bx.i64s("cal_labels"));
    let test = as_two(bx.f64s("test_probs"), bx.i64s("test_labels"));
    let fitted = KernelCalibrationConfig::new().fit(&cal).unwrap();
    let got: Vec<f64> = probabilities(&fitted.calibrator.calibrate(&test).unwrap())
        .chunks(2)
        .map(|r| r[1])
        .collect();
    let d = max_diff(&got, &fx.f64s("binary_probs"));
    assert!(d < 1e-10, "Beta kernel vs probmetrics: {d:e}");
}

#[test]
fn leave_one_out_bandwidth_equals_probmetrics() {
    let mut fx = Fixture::open("kernel.npz");
    let val = logit_rows("densenet40_cifar10.npz", "val", 500);
    let fitted = KernelCalibrationConfig::new()
        .with_bandwidth(KernelBandwidth::LeaveOneOut)
        .fit(&val)
        .unwrap();
    let want = fx.f64s("loo_bandwidth")[0];
    // probmetrics' grid is float32 (torch.logspace): the same point to float32 rounding.
    assert!(
        (fitted.calibrator.bandwidth - want).abs() < 1e-7 * want,
        "{} vs {want}",
        fitted.calibrator.bandwidth
    );
}

/// On every device the fitted calibrator gives the host's probabilities: the CPU devices read
/// the rows back (f64, exact), wgpu computes them as f32 tensor ops on the device (to 1e-4).
#[test]
fn every_device_applies_the_kernel_alike() {
    let val = common::synthetic(600, 5, 21);
    let test = common::synthetic(400, 5, 22);
    let fitted = KernelCalibrationConfig::new().fit(&val.host_on(&Device::flex())).unwrap();
    let want = probabilities(&fitted.calibrator.calibrate(&test.host_on(&Device::flex())).unwrap());
    for (name, device) in common::devices() {
        let fitted = KernelCalibrationConfig::new().fit(&val.on(&device)).unwrap();
        let got = probabilities(&fitted.calibrator.calibrate(&test.on(&device)).unwrap());
        let tol = if name == "wgpu" { 1e-4 } else { 1e-12 };
        let d = max_diff(&got, &want);
        assert!(d < tol, "{name}: {d:e}");
    }
}
