//! Structured matrix and vector scaling (SMS, SVS) against an independent f64 solution of
//! their objective and against probmetrics (`tests/fixtures/structured.py`).
//!
//! Tolerances: the f64 reference and calib solve one strictly convex problem to gradients of
//! ~1e-10, so their objectives agree to 1e-9 and their test probabilities to 1e-6 (the
//! distance of two near-optimal points is the gradient over the curvature, about 1e-7 here).
//! probmetrics takes float32 logarithms and stops its float32 BFGS early: its objective is
//! never below calib's, and its probabilities are within 2e-3 (SMS on CIFAR-10, the largest).

mod common;

use calib::input::Predictions;
use calib::train::{
    Calibrator, Fit, RidgeStrengths, StructuredMatrixScalingConfig, StructuredVectorScalingConfig,
    TemperatureMixture, TemperatureScalingConfig,
};
use common::fixtures::{Fixture, logit_rows, max_diff, softmax_rows, values};

/// The three fixture sets: name, dump, calibration rows, test rows.
const SETS: [(&str, &str, usize, usize); 3] = [
    ("c10", "densenet40_cifar10.npz", 2000, 1000),
    ("c100", "lenet5_cifar100.npz", 1000, 200),
    ("few", "lenet5_cifar100.npz", 60, 200),
];

/// `(T, objective, converged, calibrated test logits)` of `method` fitted on `val`.
fn fit(method: &str, val: &Predictions, test: &Predictions) -> (f64, f64, bool, Predictions) {
    if method == "sms" {
        let f = StructuredMatrixScalingConfig::new().fit(val).unwrap();
        let out = f.calibrator.calibrate(test).unwrap();
        (f.calibrator.mixture.temperature, f.record.final_loss, f.record.converged, out)
    } else {
        let f = StructuredVectorScalingConfig::new().fit(val).unwrap();
        let out = f.calibrator.calibrate(test).unwrap();
        (f.calibrator.mixture.temperature, f.record.final_loss, f.record.converged, out)
    }
}

#[test]
fn structured_scaling_equals_the_reference_optimum() {
    let mut fx = Fixture::open("structured.npz");
    for (set, file, n, n_test) in SETS {
        let (val, test) = (logit_rows(file, "val", n), logit_rows(file, "test", n_test));
        let want_t = fx.f64s(&format!("{set}_reference_temperature"))[0];
        for method in ["sms", "svs"] {
            let (temperature, loss, converged, calibrated) = fit(method, &val, &test);
            assert!((temperature - want_t).abs() < 1e-9 * want_t, "{set} {method}");
            let got = softmax_rows(&calibrated);
            assert!(converged, "{set} {method}");
            let key = |what: &str| format!("{set}_{what}_{method}_");
            let reference = fx.f64s(&format!("{}objective", key("reference")))[0];
            let theirs = fx.f64s(&format!("{}objective", key("probmetrics")))[0];
            assert!((loss - reference).abs() < 1e-9, "{set} {method}: {loss} vs {reference}");
            assert!(loss <= theirs + 1e-9, "{set} {method}: {loss} vs probmetrics' {theirs}");
            let diff = max_diff(&got, &fx.f64s(&format!("{}probs", key("reference"))));
            assert!(diff < 1e-6, "{set} {method}: {diff} from the reference");
            let diff = max_diff(&got, &fx.f64s(&format!("{}probs", key("probmetrics"))));
            assert!(diff < 2e-3, "{set} {method}: {diff} from probmetrics");
        }
    }
}

/// With every strength huge the maps stay at their start, the temperature-and-mixture fit:
/// `(1 - e) softmax(z / T) + e / K`, `e = 1 / (N + 1)`.
#[test]
fn strong_ridges_leave_the_temperature_mixture_fit() {
    let file = "densenet40_cifar10.npz";
    let (val, test) = (logit_rows(file, "val", 500), logit_rows(file, "test", 300));
    let t = TemperatureScalingConfig::new().fit(&val).unwrap().calibrator.temperature().unwrap();
    let e = 1.0 / 501.0;
    let want: Vec<f64> = values(&test)
        .chunks_exact(10)
        .flat_map(|row| {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let x: Vec<f64> = row.iter().map(|z| ((z - m) / t).exp()).collect();
            let s: f64 = x.iter().sum();
            x.into_iter().map(move |v| (1.0 - e) * v / s + e / 10.0)
        })
        .collect();
    let huge =
        RidgeStrengths::new().with_intercept(1e12).with_diagonal(1e12).with_off_diagonal(1e12);
    let sms = StructuredMatrixScalingConfig::new().with_strengths(huge.clone()).fit(&val).unwrap();
    let svs = StructuredVectorScalingConfig::new().with_strengths(huge).fit(&val).unwrap();
    assert_eq!(sms.calibrator.mixture, TemperatureMixture { temperature: t, mixture: e });
    for calibrated in
        [sms.calibrator.calibrate(&test).unwrap(), svs.calibrator.calibrate(&test).unwrap()]
    {
        let diff = max_diff(&softmax_rows(&calibrated), &want);
        assert!(diff < 1e-9, "{diff}");
    }
}
