//! Ensemble temperature scaling against an f64 run of its two steps and against probmetrics
//! (`tests/fixtures/ets.py`), its weights on the simplex, save and load.
//!
//! Tolerances: calib solves the temperature's stationarity to 1e-13 and the weights exactly
//! (face by face), where the reference's bounded Brent stops at `xatol` on a flat minimum
//! (the temperature to 1e-6 relative) and SLSQP at `ftol` (weights to 1e-5); calib's weight
//! loss is never above either's (to 1e-9: it depends on t). probmetrics' SLSQP from `(1, 0, 0)` stops early on the
//! CIFAR-100 MSE (weights 0.997, 0, 0.003 where the optimum is 0.87, 0.11, 0.01).

mod common;

use calib::burn::tensor::Device;
use calib::train::{
    AnyCalibrator, Calibrator, EnsembleTemperatureScalingConfig, EtsLoss, Fit, SavedCalibrator,
};
use common::fixtures::{Fixture, logit_rows, max_diff, softmax_rows, values};

#[test]
fn ets_equals_the_reference_and_beats_probmetrics() {
    let mut fx = Fixture::open("ets.npz");
    let sets =
        [("c10", "densenet40_cifar10.npz", 2000, 1000), ("c100", "lenet5_cifar100.npz", 1000, 200)];
    for (set, file, n, n_test) in sets {
        let (val, test) = (logit_rows(file, "val", n), logit_rows(file, "test", n_test));
        for (name, loss) in [("mse", EtsLoss::Mse), ("nll", EtsLoss::Nll)] {
            let fitted = EnsembleTemperatureScalingConfig::new().with_loss(loss).fit(&val).unwrap();
            let (t, w) = (fitted.calibrator.temperature, fitted.calibrator.weights);
            let key = |who: &str, what: &str| format!("{set}_{who}_{name}_{what}");
            let want_t = fx.f64s(&key("reference", "t"))[0];
            assert!((t - want_t).abs() < 1e-6 * want_t, "{set} {name}: t {t} vs {want_t}");
            let want_w = fx.f64s(&key("reference", "w"));
            assert!(max_diff(&w, &want_w) < 1e-5, "{set} {name}: {w:?} vs {want_w:?}");
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12 && w.iter().all(|&v| v >= 0.0));
            let value = fitted.record.final_loss;
            let reference = fx.f64s(&key("reference", "value"))[0];
            let theirs = fx.f64s(&key("probmetrics", "value"))[0];
            // The weights' loss depends on t, which both fits find to ~1e-8: equal to 1e-9.
            assert!(value <= reference + 1e-9, "{set} {name}: {value} vs {reference}");
            assert!(value <= theirs + 1e-9, "{set} {name}: {value} vs probmetrics' {theirs}");
            if (set, name) != ("c100", "mse") {
                let got = softmax_rows(&fitted.calibrator.calibrate(&test).unwrap());
                let d = max_diff(&got, &fx.f64s(&key("probmetrics", "probs")));
                assert!(d < 1e-4, "{set} {name}: {d:e} from probmetrics");
            }
            // Saved and loaded, the same predictions bit for bit.
            let json = fitted.to_saved().unwrap().to_json();
            let loaded = AnyCalibrator::from_saved(
                &SavedCalibrator::from_json(&json).unwrap(),
                &Device::flex(),
            )
            .unwrap();
            let (a, b) = (
                values(&fitted.calibrator.calibrate(&test).unwrap()),
                values(&loaded.calibrate(&test).unwrap()),
            );
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }
}
