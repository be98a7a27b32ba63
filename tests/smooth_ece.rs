//! Smooth ECE against relplot 1.0.3 on real dumps.
//!
//! Expected values: `tests/fixtures/smooth_ece.npz`, produced by
//! `python3 tests/fixtures/smooth_ece.py` (relplot 1.0.3) from the test splits of
//! `data/lenet5_cifar100.npz` and `data/densenet40_cifar10.npz`.

mod common;

use calib::burn::tensor::Device;
use calib::metrics::SmoothEce;
use calib::pairs::{PairSet, ScorePairs};
use calib::{EvaluationConfig, Metric};
use common::fixtures::Fixture;
use common::load_dump;

fn top_label(dump: &str) -> ScorePairs {
    let preds = load_dump(dump, "test").host_on(&Device::flex());
    ScorePairs::of(&preds, PairSet::TopLabel).unwrap()
}

/// LeNet-5's confidences lie in [0.03, 0.78], away from 0 and 1: relplot's grid is accurate
/// there, and calib equals it to the grid's accuracy, at a fixed bandwidth and after the
/// same bandwidth search (which lands on the same sigma).
#[test]
fn equals_relplot_where_no_score_is_near_0_or_1() {
    let mut fx = Fixture::open("smooth_ece.npz");
    let pairs = top_label("lenet5_cifar100.npz");
    let at = SmoothEce::at(&pairs, 0.05);
    let expected = fx.f64s("lenet_at_005")[0];
    assert!((at - expected).abs() < 1e-5, "{at} vs relplot {expected}");
    let relplot = fx.f64s("lenet_smece");
    let ours = SmoothEce::of(&pairs);
    assert_eq!(ours.sigma, relplot[1], "bandwidth");
    assert!((ours.value - relplot[0]).abs() < 1e-5, "{ours:?} vs relplot {relplot:?}");
    let report = EvaluationConfig::new()
        .with_metrics(vec![Metric::Smece])
        .evaluate(&load_dump("lenet5_cifar100.npz", "test").host_on(&Device::flex()))
        .unwrap();
    assert_eq!(report.get(Metric::Smece), Some(ours.value));
}

/// DenseNet-40's top-label confidences crowd at 1 (821 of 10,000 equal it): relplot mirrors
/// only its grid's inner nodes, so those scores count once instead of twice, and it reports
/// 0.0818 where the exact kernel gives 0.054.
#[test]
fn relplot_overstates_it_when_scores_sit_at_1() {
    let mut fx = Fixture::open("smooth_ece.npz");
    let relplot = fx.f64s("densenet_smece")[0];
    let ours = SmoothEce::of(&top_label("densenet40_cifar10.npz"));
    assert!((relplot - 0.0818).abs() < 1e-3, "{relplot}");
    assert!((ours.value - 0.054).abs() < 1e-3, "{ours:?}");
}
