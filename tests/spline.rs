//! Spline calibration against `ml_insights.SplineCalib` (1.1.0) on a real binary problem.
//!
//! Expected values: `tests/fixtures/spline.npz`, produced by `python3 tests/fixtures/spline.py`
//! (ml_insights 1.1.0, scipy 1.17.1) from the probabilities stored in
//! `tests/fixtures/binary_maps.npz`: top-label confidence and hit, 2000 calibration rows, 1000
//! test rows.

use std::path::Path;

use calib::burn::tensor::Device;
use calib::input::{HostValues, InputConfig, Predictions, ScoreKind};
use calib::train::{Calibrator, Fit, SplineCalibrationConfig};

type Npz = npyz::npz::NpzArchive<std::io::BufReader<std::fs::File>>;

fn npz(name: &str) -> Npz {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    npyz::npz::NpzArchive::open(&path).expect("fixture")
}

fn read<T: npyz::Deserialize>(a: &mut Npz, name: &str) -> Vec<T> {
    a.by_name(name).unwrap().expect(name).into_vec().unwrap()
}

fn argmax(row: &[f64]) -> usize {
    (0..row.len()).fold(0, |b, k| if row[k] > row[b] { k } else { b })
}

/// `(confidence, hit)` of a split of the fixture, as binary predictions.
fn problem(b: &mut Npz, split: &str) -> (Predictions, Vec<f64>) {
    let p = read::<f64>(b, &format!("{split}_probs"));
    let y = read::<i64>(b, &format!("{split}_labels"));
    let (s, o): (Vec<f64>, Vec<i64>) = p
        .chunks_exact(10)
        .zip(&y)
        .map(|(r, &y)| (r[argmax(r)], i64::from(argmax(r) as i64 == y)))
        .unzip();
    let outcomes = o.iter().map(|&v| v as f64).collect();
    let config = InputConfig::new(ScoreKind::Binary);
    (Predictions::from_host_vec(s, 1, o, config, &Device::flex()).unwrap(), outcomes)
}

fn values(p: &Predictions) -> Vec<f64> {
    match p.host_rows().unwrap().0 {
        HostValues::F64(v) => v.into_owned(),
        HostValues::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
    }
}

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
    let mut b = npz("binary_maps.npz");
    let (cal, _) = problem(&mut b, "cal");
    let (test, y) = problem(&mut b, "test");
    let fitted = SplineCalibrationConfig::new().fit(&cal).unwrap();
    assert!(fitted.record.converged, "{:?}", fitted.record);
    let ours = nll_brier(&values(&fitted.calibrator.calibrate(&test).unwrap()), &y);
    let theirs = nll_brier(&read::<f64>(&mut npz("spline.npz"), "default"), &y);
    assert!(ours.0 <= theirs.0 * 1.005, "test NLL {} vs ml_insights {}", ours.0, theirs.0);
    assert!(ours.1 <= theirs.1 * 1.005, "test Brier {} vs ml_insights {}", ours.1, theirs.1);
}

/// The same knots, prior, clip and penalty give the same fit (ml_insights' model solved on all
/// rows to a tight tolerance) to 1e-6.
#[test]
fn deterministic_settings_give_the_same_fit() {
    let mut b = npz("binary_maps.npz");
    let (cal, _) = problem(&mut b, "cal");
    let (test, _) = problem(&mut b, "test");
    let mut f = npz("spline.npz");
    let fitted = SplineCalibrationConfig::new().with_penalty(Some(1.0)).fit(&cal).unwrap();
    let (knots, _, eps) = fitted.calibrator.maps()[0].parts();
    assert_eq!(eps, read::<f64>(&mut f, "fixed_eps")[0]);
    let want_knots = read::<f64>(&mut f, "fixed_knots_tr");
    assert_eq!(knots.len(), want_knots.len());
    for (a, w) in knots.iter().zip(&want_knots) {
        assert!((a - w).abs() < 1e-12, "knot {a} vs {w}");
    }
    let out = values(&fitted.calibrator.calibrate(&test).unwrap());
    let want = read::<f64>(&mut f, "fixed");
    let diff = out.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(diff < 1e-6, "spline vs ml_insights' model at lambda = 1: {diff:e}");
}
