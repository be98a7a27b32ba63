//! The calibration and refinement parts of the NLL and the Brier score against probmetrics'
//! `MetricsWithCalibration` with its "ts-mix" refit (CalArena's decomposition), in-sample and
//! cross-fitted; and calib's binary Kuiper statistic against CalArena's
//! (`tests/fixtures/refinement.py`).
//!
//! probmetrics bisects the temperature in 30 steps (to ~3e-8 in log T): the parts agree to
//! 1e-6.

mod common;

use calib::{EvaluationConfig, Metric};
use common::fixtures::{Fixture, logit_rows, top_label_problem};

#[test]
fn parts_equal_calarena_in_sample_and_cross_fitted() {
    let mut fx = Fixture::open("refinement.npz");
    let preds = logit_rows("densenet40_cifar10.npz", "test", 2000);
    let metrics = vec![
        Metric::CalibrationNll,
        Metric::RefinementNll,
        Metric::CalibrationBrier,
        Metric::RefinementBrier,
        Metric::Nll,
        Metric::Brier,
    ];
    for (suffix, folds) in [("all", None), ("mod5", Some(5))] {
        let report = EvaluationConfig::new()
            .with_metrics(metrics.clone())
            .with_split_fits(folds)
            .evaluate(&preds)
            .unwrap();
        let get = |m| report.get(m).unwrap();
        for (metric, key) in [
            (Metric::CalibrationNll, "calib-err_logloss"),
            (Metric::RefinementNll, "refinement_logloss"),
            (Metric::CalibrationBrier, "calib-err_brier"),
            (Metric::RefinementBrier, "refinement_brier"),
        ] {
            let want = fx.f64s(&format!("{key}_{suffix}"))[0];
            assert!(
                (get(metric) - want).abs() < 1e-6,
                "{metric} {suffix}: {} vs {want}",
                get(metric)
            );
        }
        // The parts add up to the loss.
        let nll = get(Metric::CalibrationNll) + get(Metric::RefinementNll);
        assert!((nll - get(Metric::Nll)).abs() < 1e-12);
        let brier = get(Metric::CalibrationBrier) + get(Metric::RefinementBrier);
        assert!((brier - get(Metric::Brier)).abs() < 1e-12);
    }
}

/// CalArena's binary `kuiper` is the unstandardised range with the origin, calib's
/// `kuiper_range`; calib's `kuiper` divides it by sigma (Tygert's standardisation): 37.1 here.
#[test]
fn kuiper_range_is_calarenas_kuiper() {
    let mut fx = Fixture::open("refinement.npz");
    let (cal, _) = top_label_problem();
    let report = EvaluationConfig::new()
        .with_metrics(vec![Metric::KuiperRange, Metric::Kuiper])
        .evaluate(&cal)
        .unwrap();
    let want = fx.f64s("kuiper_binary")[0];
    let got = report.get(Metric::KuiperRange).unwrap();
    // CalArena sums in float32 (torch's default): 1e-6.
    assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    assert!(report.get(Metric::Kuiper).unwrap() > 100.0 * got);
}

#[test]
fn bad_folds_are_refused() {
    let preds = logit_rows("densenet40_cifar10.npz", "test", 10);
    let config = EvaluationConfig::new().with_metrics(vec![Metric::CalibrationNll]);
    for folds in [1, 11] {
        let err = config.clone().with_split_fits(Some(folds)).evaluate(&preds).unwrap_err();
        assert!(err.to_string().contains("fold") || err.to_string().contains("split"), "{err}");
    }
}
