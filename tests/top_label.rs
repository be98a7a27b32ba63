//! Top-label calibration against MAPIE 1.6's `TopLabelCalibrator`, and Platt scaling against
//! scikit-learn's sigmoid calibration.
//!
//! Expected values: `tests/fixtures/top_label.npz`, produced by
//! `python3 tests/fixtures/top_label.py` (mapie 1.6.0, scikit-learn 1.9.1) from the
//! probabilities stored in `tests/fixtures/binary_maps.npz`.

mod common;

use calib::Engine;
use calib::burn::tensor::Device;
use calib::train::{
    AnyCalibrator, BinaryMap, Calibrator, Fit, FitConfig, IsotonicRegressionConfig, PlattMapConfig,
    PlattScalingConfig, Reduction, SavedCalibrator,
};
use common::fixtures::{Fixture, argmax, max_diff, multiclass, top_label_problem, values};

/// The per-class isotonic maps equal MAPIE's on the calibrated top-label confidences to 1e-9
/// (calib's written rows floor a confidence at 1/K; MAPIE's raw maps are compared here).
#[test]
fn top_label_isotonic_equals_mapie() {
    let (cal, test) = multiclass();
    let want = Fixture::open("top_label.npz").f64s("mapie_isotonic_confidence");
    let fitted =
        IsotonicRegressionConfig::new().with_reduction(Reduction::TopLabel).fit(&cal).unwrap();
    let maps = fitted.calibrator.maps();
    let out = values(&fitted.calibrator.calibrate(&test).unwrap());
    for (i, row) in values(&test).chunks_exact(10).enumerate() {
        let c = argmax(row);
        let raw = maps[c].predict(row[c]);
        assert!((raw - want[i]).abs() < 1e-9, "row {i}: {raw} vs MAPIE {}", want[i]);
        assert_eq!(out[i * 10 + c], raw.max(0.1), "row {i}: the written confidence");
    }
}

/// MAPIE writes each confidence into the column of its class's position among the classes
/// predicted in the batch, so a batch without class 3 shifts classes 4..9 one column left.
/// calib keeps the predicted class's column.
#[test]
fn mapie_shifts_columns_when_a_class_is_never_predicted() {
    let test = values(&multiclass().1);
    let mut f = Fixture::open("top_label.npz");
    let (rows, mapie_column) = (f.i64s("no3_rows"), f.i64s("no3_mapie_column"));
    let mut shifted = 0;
    for (&r, &col) in rows.iter().zip(&mapie_column) {
        let c = argmax(&test[r as usize * 10..(r as usize + 1) * 10]) as i64;
        assert_eq!(col, if c > 3 { c - 1 } else { c });
        shifted += usize::from(c > 3);
    }
    assert!(shifted > 100, "{shifted} rows shifted");
}

/// Platt scaling with Platt's targets equals scikit-learn's `_SigmoidCalibration` on the
/// clipped log-odds to 1e-6: the tensor fit, the host Newton fit CPUs take by default, and the
/// binary map.
#[test]
fn platt_equals_scikit_learn_sigmoid_calibration() {
    let (cal, test) = top_label_problem();
    let want = Fixture::open("top_label.npz").f64s("platt_sklearn");
    let tensor = FitConfig::new().with_engine(Engine::Tensor);
    let fits = [
        ("tensor", PlattScalingConfig::new().with_fit(tensor).fit(&cal).unwrap().calibrator),
        ("host", PlattScalingConfig::new().fit(&cal).unwrap().calibrator),
    ];
    for (name, c) in &fits {
        let diff = max_diff(&values(&c.calibrate(&test).unwrap()), &want);
        assert!(diff < 1e-6, "{name} Platt vs scikit-learn: {diff:e}");
    }
    let map = PlattMapConfig::new().fit(&cal).unwrap().calibrator;
    let diff = max_diff(&values(&map.calibrate(&test).unwrap()), &want);
    assert!(diff < 1e-6, "Platt map vs scikit-learn: {diff:e}");
}

/// Platt one-vs-rest on K-class input saves as `platt` with its form and loads back.
#[test]
fn platt_one_vs_rest_round_trips() {
    let (cal, test) = multiclass();
    let c: AnyCalibrator = PlattMapConfig::new().fit(&cal).unwrap().calibrator.into();
    let saved = c.to_saved().unwrap();
    assert_eq!(saved.method.name(), "platt");
    let json = SavedCalibrator::from_json(&saved.to_json()).unwrap();
    let back = AnyCalibrator::from_saved(&json, &Device::flex()).unwrap();
    assert_eq!(values(&back.calibrate(&test).unwrap()), values(&c.calibrate(&test).unwrap()));
}
