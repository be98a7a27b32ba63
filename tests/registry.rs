//! The registries. Calibration methods (`calib_train::api::registry`): every registered
//! calibrator fits with its default settings, saves, loads back as the same method and
//! applies identically, and `calib compare --methods all` offers it. Metrics
//! (`calib_core::metrics::registry`): every registered metric evaluates to a finite value on a
//! real dump, alone and with all the others, and its name parses back.

mod common;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{AnyCalibrator, FORMAT, Method, SavedCalibrator};
use calib::{EvaluationConfig, Metric};
use common::fixtures::values;
use common::{load_dump, synthetic};

/// Binary scores: class 1's softmax probability of synthetic two-class logits.
fn binary(device: &Device) -> Predictions {
    let dump = synthetic(400, 2, 7);
    let p1: Vec<f64> =
        dump.logits.chunks(2).map(|z| 1.0 / (1.0 + f64::from(z[0] - z[1]).exp())).collect();
    let labels = dump.labels.clone();
    Predictions::from_host(&p1, 1, &labels, InputConfig::new(ScoreKind::Binary), device).unwrap()
}

#[test]
fn every_registered_calibrator_fits_saves_loads_and_applies() {
    let device = Device::flex();
    let multiclass = synthetic(600, 4, 3).host_on(&device);
    let binary = binary(&device);
    let mut walked = 0;
    for method in Method::ALL {
        let Some(config) = method.default_config() else { continue };
        // Platt scaling proper takes binary scores; every other method K-class logits.
        let data = if method == Method::Platt { &binary } else { &multiclass };
        let fitted = config.fit_any(data, &mut |_| {}).unwrap_or_else(|e| panic!("{method}: {e}"));
        assert_eq!(fitted.calibrator.method(), method);
        let json = fitted.to_saved().unwrap().to_json();
        let saved = SavedCalibrator::from_json(&json).unwrap();
        assert_eq!(saved.method, method, "{method}");
        assert_eq!(saved.format, FORMAT);
        let strengths = ["lambda", "mu", "intercept", "diagonal", "off_diagonal"];
        assert!(saved.hyperparameters.keys().all(|k| strengths.contains(&k.as_str())), "{method}");
        let loaded = AnyCalibrator::from_saved(&saved, &device).unwrap();
        assert_eq!(loaded.method(), method);
        let (a, b) = (fitted.calibrator.calibrate(data).unwrap(), loaded.calibrate(data).unwrap());
        let (a, b) = (values(&a), values(&b));
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "{method}");
        walked += 1;
    }
    assert_eq!(walked, 21, "the registry's calibrators");
}

#[test]
fn compare_offers_every_method_and_names_parse_back() {
    let k_class = calib_cli::comparison::all_methods(false);
    let binary = calib_cli::comparison::all_methods(true);
    for method in Method::ALL {
        assert_eq!(Method::from_name(method.name()).unwrap(), method);
        assert!(k_class.contains(&method), "{method} missing from compare on K-class input");
        if method.is_binary_map() && method != Method::TopLabel {
            assert!(binary.contains(&method), "{method} missing from compare on binary input");
        }
    }
}

#[test]
fn every_registered_metric_evaluates_and_its_name_parses_back() {
    let device = Device::flex();
    let preds = load_dump("densenet40_cifar10.npz", "test").host_on(&device);
    let all = EvaluationConfig::new().with_metrics(Metric::ALL.to_vec()).evaluate(&preds).unwrap();
    assert_eq!(all.values.len(), Metric::ALL.len());
    for metric in Metric::ALL {
        assert_eq!(Metric::from_name(metric.name()).unwrap(), metric);
        assert_eq!(metric.to_string().parse::<Metric>().unwrap(), metric);
        let alone = EvaluationConfig::new().with_metrics(vec![metric]).evaluate(&preds).unwrap();
        let (a, b) = (alone.get(metric).unwrap(), all.get(metric).unwrap());
        assert!(a.is_finite(), "{metric}: {a}");
        assert_eq!(a.to_bits(), b.to_bits(), "{metric}: alone {a}, with the others {b}");
    }
    assert!(Metric::defaults().iter().all(|m| !m.uses_pairs()), "the default set streams");
}

#[test]
fn format_1_files_read_as_typed_settings_and_save_as_format_2() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/saved_v1");
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let saved = SavedCalibrator::load(&path).unwrap();
        let name = path.display();
        assert_eq!(saved.format, FORMAT, "{name}");
        assert!(saved.hyperparameters.keys().all(|k| k == "lambda" || k == "mu"), "{name}");
        // Platt's file is Platt scaling proper (on_logit) or its one-vs-rest maps (form).
        let settings = &saved.settings;
        if saved.method == Method::Platt {
            assert!(settings.form.is_some() != settings.on_logit.is_some(), "{name}");
        } else {
            let is_map = saved.method.is_binary_map() || saved.method == Method::TopLabel;
            assert_eq!(settings.form.is_some(), is_map, "{name}");
        }
        assert_eq!(SavedCalibrator::from_json(&saved.to_json()).unwrap(), saved, "{name}");
        read += 1;
    }
    assert_eq!(read, 24);
}

/// Degenerate calibration sets: a class absent from the labels, every row the same scores,
/// two rows. Every registered calibrator either says why it cannot fit (an error with a
/// message) or fits a calibrator whose outputs are finite; none panics.
#[test]
fn every_registered_calibrator_handles_degenerate_sets() {
    let device = Device::flex();
    let logits = |rows: Vec<[f64; 4]>, labels: Vec<i64>| {
        let v: Vec<f64> = rows.into_iter().flatten().collect();
        Predictions::from_host_vec(v, 4, labels, InputConfig::new(ScoreKind::Logits), &device)
            .unwrap()
    };
    let scores = |s: Vec<f64>, labels: Vec<i64>| {
        Predictions::from_host_vec(s, 1, labels, InputConfig::new(ScoreKind::Binary), &device)
            .unwrap()
    };
    let dump = synthetic(300, 4, 11);
    let rows: Vec<[f64; 4]> =
        dump.logits.chunks(4).map(|r| std::array::from_fn(|j| f64::from(r[j]))).collect();
    // Class 3 never a label.
    let absent: Vec<i64> = dump.labels.iter().map(|&y| y % 3).collect();
    let cases = [
        ("class 3 absent", logits(rows.clone(), absent)),
        (
            "constant scores",
            logits(vec![[1.0, 0.5, 0.0, -0.5]; 40], (0..40).map(|i| i % 4).collect()),
        ),
        ("two rows", logits(rows[..2].to_vec(), vec![0, 1])),
    ];
    let binary_cases = [
        ("constant binary scores", scores(vec![0.7; 40], (0..40).map(|i| i % 2).collect())),
        ("one outcome only", scores((0..40).map(|i| f64::from(i) / 40.0).collect(), vec![1; 40])),
    ];
    for method in Method::ALL {
        let Some(config) = method.default_config() else { continue };
        let sets: Vec<&(&str, Predictions)> = if method == Method::Platt {
            binary_cases.iter().collect()
        } else if method.is_binary_map() {
            cases.iter().chain(&binary_cases).collect()
        } else {
            cases.iter().collect()
        };
        for (case, data) in sets {
            match config.fit_any(data, &mut |_| {}) {
                Ok(fitted) => {
                    let out = fitted.calibrator.calibrate(data);
                    let out = out.unwrap_or_else(|e| panic!("{method} on {case}: applies: {e}"));
                    let v = values(&out);
                    assert!(v.iter().all(|x| x.is_finite()), "{method} on {case}: {v:?}");
                }
                Err(e) => assert!(!e.to_string().is_empty(), "{method} on {case}"),
            }
        }
    }
}
