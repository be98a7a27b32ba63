//! Property tests: invariants that hold for every input.

mod common;

use calib::binning::Binning;
use calib::burn::tensor::{Int, Tensor, TensorData};
use calib::input::Predictions;
use calib::metrics::{CalibrationErrorConfig, ScoreSet};
use calib::{Engine, EvaluationConfig, Metric, Precision};
use proptest::prelude::*;

fn preds(logits: &[f32], k: usize, labels: &[i64]) -> Predictions {
    let device = calib::backend::open_device("flex").unwrap();
    let n = labels.len();
    let v = Tensor::<2>::from_data(TensorData::new(logits.to_vec(), [n, k]), &device);
    let l = Tensor::<1, Int>::from_data(TensorData::new(labels.to_vec(), [n]), &device);
    Predictions::logits(v, l).unwrap()
}

/// Random `(logits, K, labels)` with coarse logits so that ties occur.
fn input() -> impl Strategy<Value = (Vec<f32>, usize, Vec<i64>)> {
    (2usize..6, 1usize..60).prop_flat_map(|(k, n)| {
        (
            proptest::collection::vec((-8i32..8).prop_map(|v| v as f32 * 0.5), n * k),
            Just(k),
            proptest::collection::vec(0..k as i64, n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Permuting rows changes no metric (ties may move across adaptive ranges only together
    /// with their outcomes' order, so adaptive metrics are checked on tie-free scores).
    #[test]
    fn row_permutation_changes_no_static_metric((logits, k, labels) in input(), seed in 0u64..1000) {
        let n = labels.len();
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = common::Rng(seed);
        for i in (1..n).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let pl: Vec<f32> = order.iter().flat_map(|&i| logits[i * k..(i + 1) * k].to_vec()).collect();
        let py: Vec<i64> = order.iter().map(|&i| labels[i]).collect();
        let metrics = vec![Metric::Ece, Metric::Mce, Metric::Sce, Metric::ToplabelEce, Metric::Nll, Metric::Brier, Metric::Accuracy, Metric::BrierDecomposition];
        let cfg = EvaluationConfig::new().with_metrics(metrics);
        let a = cfg.evaluate(&preds(&logits, k, &labels)).unwrap();
        let b = cfg.evaluate(&preds(&pl, k, &py)).unwrap();
        for (x, y) in a.named_values().iter().zip(b.named_values()) {
            prop_assert!((x.1 - y.1).abs() < 1e-12, "{}: {} vs {}", x.0, x.1, y.1);
        }
    }

    /// Adaptive metrics are permutation-invariant when scores have no ties.
    #[test]
    fn row_permutation_changes_no_adaptive_metric(n in 1usize..80, seed in 0u64..1000) {
        let dump = common::synthetic(n, 3, seed);
        let mut order: Vec<usize> = (0..n).collect();
        order.reverse();
        let pl: Vec<f32> = order.iter().flat_map(|&i| dump.logits[i * 3..(i + 1) * 3].to_vec()).collect();
        let py: Vec<i64> = order.iter().map(|&i| dump.labels[i]).collect();
        let cfg = EvaluationConfig::new().with_metrics(vec![Metric::Ace, Metric::Tace, Metric::Rmsce, Metric::DebiasedL2]);
        let a = cfg.evaluate(&preds(&dump.logits, 3, &dump.labels)).unwrap();
        let b = cfg.evaluate(&preds(&pl, 3, &py)).unwrap();
        for (x, y) in a.named_values().iter().zip(b.named_values()) {
            prop_assert!((x.1 - y.1).abs() < 1e-12, "{}: {} vs {}", x.0, x.1, y.1);
        }
    }

    /// Statistics of two halves merged equal the statistics of the whole.
    #[test]
    fn merged_chunk_statistics_equal_the_whole((logits, k, labels) in input(), cut in 0.0f64..1.0) {
        let n = labels.len();
        let m = ((n as f64 * cut) as usize).clamp(1, n);
        prop_assume!(m < n);
        for scores in [ScoreSet::TopLabel, ScoreSet::AllClasses] {
            let cfg = CalibrationErrorConfig::new().with_scores(scores).with_class_conditional(true);
            let stats = |l: &[f32], y: &[i64]| cfg.statistics(&preds(l, k, y), Precision::Auto, Engine::Auto).unwrap();
            let whole = stats(&logits, &labels);
            let merged = stats(&logits[..m * k], &labels[..m]).merge(&stats(&logits[m * k..], &labels[m..])).unwrap();
            prop_assert_eq!(&whole.count, &merged.count);
            prop_assert_eq!(&whole.sum_outcome, &merged.sum_outcome);
            for (a, b) in whole.sum_score.iter().zip(&merged.sum_score) {
                prop_assert!((a - b).abs() < 1e-9);
            }
        }
    }

    /// Every calibration error lies in [0, 1]; MCE bounds ECE.
    #[test]
    fn bounds((logits, k, labels) in input()) {
        let report = EvaluationConfig::new().with_metrics(Metric::ALL.to_vec()).evaluate(&preds(&logits, k, &labels)).unwrap();
        for m in [Metric::Ece, Metric::Mce, Metric::Rmsce, Metric::Sce, Metric::Ace, Metric::Tace, Metric::ToplabelEce, Metric::DebiasedL2, Metric::PluginL2, Metric::Accuracy] {
            let v = report.get(m).unwrap();
            prop_assert!((0.0..=1.0 + 1e-12).contains(&v), "{m} = {v}");
        }
        prop_assert!(report.get(Metric::Ece).unwrap() <= report.get(Metric::Mce).unwrap() + 1e-12);
        prop_assert!(report.get(Metric::Brier).unwrap() >= 0.0 && report.get(Metric::Brier).unwrap() <= 2.0);
    }
}

/// A perfectly calibrated construction: scores p uniform, outcome ~ Bernoulli(p). ECE shrinks
/// towards 0 as N grows (roughly like 1/sqrt(N)), and the debiased L2 error is near 0.
#[test]
fn perfectly_calibrated_scores_approach_zero() {
    let device = calib::backend::open_device("flex").unwrap();
    let mut previous = f64::INFINITY;
    for n in [1_000usize, 10_000, 200_000] {
        let mut rng = common::Rng(42);
        let s: Vec<f64> = (0..n).map(|_| rng.uniform()).collect();
        let y: Vec<i64> = s.iter().map(|&p| (rng.uniform() < p) as i64).collect();
        let preds = Predictions::from_host(
            &s,
            1,
            &y,
            calib::input::InputConfig::new(calib::input::ScoreKind::Binary),
            &device,
        )
        .unwrap();
        let ece = CalibrationErrorConfig::new().compute(&preds).unwrap().value;
        let bound = 3.0 * (15.0 / n as f64).sqrt();
        assert!(ece < bound, "N = {n}: ECE {ece} >= {bound}");
        assert!(ece < previous * 1.5);
        previous = ece;
    }
    assert!(previous < 0.01);
    let _ = Binning::Even { n_bins: 15 };
}
