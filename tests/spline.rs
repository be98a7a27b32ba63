//! Spline calibration against `ml_insights.SplineCalib` (1.1.0) on a real binary problem.
//!
//! Expected values: `tests/fixtures/spline.npz`, produced by `python3 tests/fixtures/spline.py`
//! (ml_insights 1.1.0, scipy 1.17.1) from the probabilities stored in
//! `tests/fixtures/binary_maps.npz`: top-label confidence and hit, 2000 calibration rows, 1000
//! test rows.

mod common;

use calib::train::{Calibrator, Fit, SplineCalibrationConfig};
use common::fixtures::{Fixture, max_diff, top_label_problem, values};

fn nll_brier(p: &[f64], y: &[f64]) -> (f64, f64) {
    let n = p.len() as f64;
    let nll = p
        .iter()
        .zip(y)
        .map(|(&p, &y)| {
            let p = p.clamp(1e-15, 1.0 - 1e-15);
            -(y * p.ln() + (1.0 - y) * (1.0 - p).ln())
        })
        .sum::<f64>()
        / n;
    let brier = p.iter().zip(y).map(|(p, y)| (p - y).powi(2)).sum::<f64>() / n;
    (nll, brier)
}

/// With its defaults, calib's test NLL and Brier are within 0.5 % of ml_insights' or better.
#[test]
fn default_fit_is_as_good_as_ml_insights() {
    let (cal, test) = top_label_problem();
    let y: Vec<f64> = test.host_rows().unwrap().1.iter().map(|&v| v as f64).collect();
    let fitted = SplineCalibrationConfig::new().fit(&cal).unwrap();
    assert!(fitted.record.converged, "{:?}", fitted.record);
    let ours = nll_brier(&values(&fitted.calibrator.calibrate(&test).unwrap()), &y);
    let theirs = nll_brier(&Fixture::open("spline.npz").f64s("default"), &y);
    assert!(ours.0 <= theirs.0 * 1.005, "test NLL {} vs ml_insights {}", ours.0, theirs.0);
    assert!(ours.1 <= theirs.1 * 1.005, "test Brier {} vs ml_insights {}", ours.1, theirs.1);
}

/// The same knots, prior, clip and penalty give the same fit (ml_insights' model solved on all
/// rows to a tight tolerance) to 1e-6.
#[test]
fn deterministic_settings_give_the_same_fit() {
    let (cal, test) = top_label_problem();
    let mut f = Fixture::open("spline.npz");
    let fitted = SplineCalibrationConfig::new().with_penalty(Some(1.0)).fit(&cal).unwrap();
    let (knots, _, eps) = fitted.calibrator.maps()[0].parts();
    assert_eq!(eps, f.f64s("fixed_eps")[0]);
    assert!(max_diff(knots, &f.f64s("fixed_knots_tr")) < 1e-12, "knots differ");
    let out = values(&fitted.calibrator.calibrate(&test).unwrap());
    let diff = max_diff(&out, &f.f64s("fixed"));
    assert!(diff < 1e-6, "spline vs ml_insights' model at lambda = 1: {diff:e}");
}
