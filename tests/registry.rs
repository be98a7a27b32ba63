//! The registry of calibration methods (`calib_train::api::registry`): every registered
//! calibrator fits with its default settings, saves, loads back as the same method and
//! applies identically, and `calib compare --methods all` offers it.

mod common;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{AnyCalibrator, Method, SavedCalibrator};
use common::fixtures::values;
use common::synthetic;

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
        let loaded = AnyCalibrator::from_saved(&saved, &device).unwrap();
        assert_eq!(loaded.method(), method);
        let (a, b) = (fitted.calibrator.calibrate(data).unwrap(), loaded.calibrate(data).unwrap());
        let (a, b) = (values(&a), values(&b));
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "{method}");
        walked += 1;
    }
    assert_eq!(walked, 12, "the registry's calibrators");
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
