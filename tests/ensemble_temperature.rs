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

/// On logits that live on a GPU (wgpu; lavapipe in CI) both steps run there in f32: the
/// record says so, the temperature is the host's f64 fit's to 1e-5 (the device solves to
/// 1e-6 on f32 sums); the weights move by up to 1e-3 along the MSE's flat valley (on
/// CIFAR-100 the tempered and raw softmax are nearly collinear) but their objective, evaluated
/// in f64, is the host optimum's to 1e-7; the recorded loss agrees to 1e-5 relative (the MSE's
/// quadratic form subtracts from `1/K` a loss about ten times smaller, so f32 rounding of the
/// per-row sums, 1e-7, shows at 1e-6); each
/// temperature iteration synchronises once and reads back four words per 1,024 rows, the
/// mixture step once more with two words per row: never the `N x K` logits.
#[cfg(feature = "wgpu")]
#[test]
fn ets_runs_on_the_device_close_to_the_host_fit() {
    use calib::engine::DeviceCost;
    use calib::train::FitEngine;
    let Some(gpu) = common::wgpu() else { return };
    for file in ["densenet40_cifar10.npz", "lenet5_cifar100.npz"] {
        let dump = common::load_dump(file, "val");
        let (on_gpu, on_host) = (dump.on(&gpu), dump.on(&Device::flex()));
        for loss in [EtsLoss::Mse, EtsLoss::Nll] {
            let config = EnsembleTemperatureScalingConfig::new().with_loss(loss);
            let want = config.fit(&on_host).unwrap();
            let (got, cost) = DeviceCost::measure(|| config.fit(&on_gpu));
            let got = got.unwrap();
            assert_eq!(got.record.engine, FitEngine::Kernels, "{file} {loss:?}");
            let (t, want_t) = (got.calibrator.temperature, want.calibrator.temperature);
            assert!((t - want_t).abs() <= 1e-5 * want_t, "{file} {loss:?}: t {t} vs {want_t}");
            let (w, want_w) = (got.calibrator.weights, want.calibrator.weights);
            assert!(max_diff(&w, &want_w) <= 1e-3, "{file} {loss:?}: {w:?} vs {want_w:?}");
            // Evaluated in f64, the device's (t, w) is as good as the host's optimum.
            let objective = |t: f64, w: [f64; 3]| ets_objective(&dump, t, w, loss);
            let (a, b) = (objective(t, w), objective(want_t, want_w));
            assert!(a <= b * (1.0 + 1e-7), "{file} {loss:?}: objective {a} vs {b}");
            let (a, b) = (got.record.final_loss, want.record.final_loss);
            assert!((a - b).abs() <= 1e-5 * b, "{file} {loss:?}: loss {a} vs {b}");
            let (n, k) = (dump.n_samples(), dump.n_classes);
            let iterations = got.record.iterations;
            assert_eq!(cost.syncs, iterations as u64 + 1, "{file} {loss:?}: {cost:?}");
            let per_pass = 4 * 2 * n.div_ceil(1024) as u64;
            let mixture = 4 * (5 * n.div_ceil(1024) + 2 * n) as u64;
            let budget = iterations as u64 * per_pass + mixture;
            assert!(cost.read_back_bytes <= budget, "{file} {loss:?}: {cost:?}");
            assert!(cost.read_back_bytes < (n * k * 4) as u64 / 2, "{file} {loss:?}: {cost:?}");
        }
    }
}

/// ETS's objective at `(t, w)` on `dump`'s rows, in f64: the mean squared error over the
/// `N x K` entries or the mean NLL (probabilities floored at 1e-20).
#[cfg(feature = "wgpu")]
fn ets_objective(dump: &common::Dump, t: f64, w: [f64; 3], loss: EtsLoss) -> f64 {
    let k = dump.n_classes;
    let softmax = |row: &[f32], scale: f64| {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &z| a.max(f64::from(z)));
        let e: Vec<f64> = row.iter().map(|&z| ((f64::from(z) - m) * scale).exp()).collect();
        let s: f64 = e.iter().sum();
        e.into_iter().map(move |v| v / s)
    };
    let mut total = 0.0;
    for (row, &y) in dump.logits.chunks_exact(k).zip(&dump.labels) {
        let mut p = softmax(row, 1.0 / t)
            .zip(softmax(row, 1.0))
            .map(|(a, b)| w[0] * a + w[1] * b + w[2] / k as f64);
        total += match loss {
            EtsLoss::Mse => {
                (p.enumerate())
                    .map(|(j, p)| (p - f64::from(u8::from(j as i64 == y))).powi(2))
                    .sum::<f64>()
                    / k as f64
            }
            _ => -p.nth(y as usize).unwrap().max(1e-20).ln(),
        };
    }
    total / dump.labels.len() as f64
}
