//! Top-label calibration against MAPIE 1.6's `TopLabelCalibrator`, and Platt scaling against
//! scikit-learn's sigmoid calibration.
//!
//! Expected values: `tests/fixtures/top_label.npz`, produced by
//! `python3 tests/fixtures/top_label.py` (mapie 1.6.0, scikit-learn 1.9.1) from the
//! probabilities stored in `tests/fixtures/binary_maps.npz`.

mod common;

use std::path::Path;

use calib::burn::tensor::Device;
use calib::input::{HostValues, InputConfig, Predictions, ScoreKind};
use calib::train::{
    AnyCalibrator, BinaryMap, Calibrator, Fit, IsotonicRegressionConfig, PlattMapConfig,
    PlattScalingConfig, Reduction, SavedCalibrator,
};

fn npz(name: &str) -> npyz::npz::NpzArchive<std::io::BufReader<std::fs::File>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    npyz::npz::NpzArchive::open(&path).expect("fixture")
}

fn read<T: npyz::Deserialize>(
    a: &mut npyz::npz::NpzArchive<std::io::BufReader<std::fs::File>>,
    name: &str,
) -> Vec<T> {
    a.by_name(name).unwrap().expect(name).into_vec().unwrap()
}

fn argmax(row: &[f64]) -> usize {
    (0..row.len()).fold(0, |b, k| if row[k] > row[b] { k } else { b })
}

fn values(p: &Predictions) -> Vec<f64> {
    match p.host_rows().unwrap().0 {
        HostValues::F64(v) => v.into_owned(),
        HostValues::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
    }
}

struct Data {
    cal: Predictions,
    test_probs: Vec<f64>,
    test: Predictions,
}

fn data() -> Data {
    let mut b = npz("binary_maps.npz");
    let (cal_p, cal_y) = (read::<f64>(&mut b, "cal_probs"), read::<i64>(&mut b, "cal_labels"));
    let (test_p, test_y) = (read::<f64>(&mut b, "test_probs"), read::<i64>(&mut b, "test_labels"));
    let probs = |v: Vec<f64>, y: Vec<i64>| {
        let config = InputConfig::new(ScoreKind::Probabilities);
        Predictions::from_host_vec(v, 10, y, config, &Device::flex()).unwrap()
    };
    Data { cal: probs(cal_p, cal_y), test: probs(test_p.clone(), test_y), test_probs: test_p }
}

/// The per-class isotonic maps equal MAPIE's on the calibrated top-label confidences to 1e-9
/// (calib's written rows floor a confidence at 1/K; MAPIE's raw maps are compared here).
#[test]
fn top_label_isotonic_equals_mapie() {
    let d = data();
    let mut f = npz("top_label.npz");
    let want = read::<f64>(&mut f, "mapie_isotonic_confidence");
    let fitted =
        IsotonicRegressionConfig::new().with_reduction(Reduction::TopLabel).fit(&d.cal).unwrap();
    let maps = fitted.calibrator.maps();
    let out = values(&fitted.calibrator.calibrate(&d.test).unwrap());
    for (i, row) in d.test_probs.chunks_exact(10).enumerate() {
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
    let d = data();
    let mut f = npz("top_label.npz");
    let rows = read::<i64>(&mut f, "no3_rows");
    let mapie_column = read::<i64>(&mut f, "no3_mapie_column");
    let mut shifted = 0;
    for (&r, &col) in rows.iter().zip(&mapie_column) {
        let c = argmax(&d.test_probs[r as usize * 10..(r as usize + 1) * 10]) as i64;
        assert_eq!(col, if c > 3 { c - 1 } else { c });
        shifted += usize::from(c > 3);
    }
    assert!(shifted > 100, "{shifted} rows shifted");
}

/// Platt scaling with Platt's targets equals scikit-learn's `_SigmoidCalibration` on the
/// clipped log-odds to 1e-6, on the tensor (binary input) and host (binary map) paths.
#[test]
fn platt_equals_scikit_learn_sigmoid_calibration() {
    let d = data();
    let mut f = npz("top_label.npz");
    let want = read::<f64>(&mut f, "platt_sklearn");
    let top = |p: &Predictions| {
        let v = values(p);
        let labels: Vec<i64> = p.host_rows().unwrap().1.into_owned();
        let (s, o): (Vec<f64>, Vec<i64>) = v
            .chunks_exact(10)
            .zip(&labels)
            .map(|(row, &y)| (row[argmax(row)], i64::from(argmax(row) as i64 == y)))
            .unzip();
        let config = InputConfig::new(ScoreKind::Binary);
        Predictions::from_host_vec(s, 1, o, config, &Device::flex()).unwrap()
    };
    let (cal, test) = (top(&d.cal), top(&d.test));
    let tensor = PlattScalingConfig::new().fit(&cal).unwrap();
    let host = PlattMapConfig::new().fit(&cal).unwrap();
    for (name, out) in [
        ("tensor", values(&tensor.calibrator.calibrate(&test).unwrap())),
        ("host", values(&host.calibrator.calibrate(&test).unwrap())),
    ] {
        let diff = out.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(diff < 1e-6, "{name} Platt vs scikit-learn: {diff:e}");
    }
}

/// Platt one-vs-rest on K-class input saves as `platt` with its form and loads back.
#[test]
fn platt_one_vs_rest_round_trips() {
    let d = data();
    let fitted = PlattMapConfig::new().fit(&d.cal).unwrap();
    let c: AnyCalibrator = fitted.calibrator.into();
    let saved = c.to_saved().unwrap();
    assert_eq!(saved.method.name(), "platt");
    let back = AnyCalibrator::from_saved(
        &SavedCalibrator::from_json(&saved.to_json()).unwrap(),
        &Device::flex(),
    )
    .unwrap();
    assert_eq!(values(&back.calibrate(&d.test).unwrap()), values(&c.calibrate(&d.test).unwrap()));
}
