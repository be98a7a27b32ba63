//! Custom bin edges end to end in the library: the even-bin metrics re-binned on given edges
//! (Rosenberg's slides re-bin exactly like this), checked against a plain f64 loop.

mod common;

use calib::binning::even_edges;
use calib::burn::tensor::Device;
use calib::pairs::{PairSet, ScorePairs};
use calib::{EvaluationConfig, Metric};
use common::load_dump;

const ROSENBERG: [f64; 8] = [0.0, 0.01, 0.05, 0.1, 0.3, 0.5, 0.75, 1.0];

/// ECE on right-closed bins `edges` (bin 0 also holds 0), straight from the definition.
fn ece_loop(scores: &[f64], hits: &[f64], edges: &[f64]) -> f64 {
    let b = edges.len() - 1;
    let (mut n, mut conf, mut acc) = (vec![0.0; b], vec![0.0; b], vec![0.0; b]);
    for (&s, &y) in scores.iter().zip(hits) {
        let bin = (0..b).find(|&i| s <= edges[i + 1]).unwrap_or(b - 1);
        n[bin] += 1.0;
        conf[bin] += s;
        acc[bin] += y;
    }
    let total = scores.len() as f64;
    (0..b).filter(|&i| n[i] > 0.0).map(|i| (acc[i] - conf[i]).abs() / total).sum()
}

#[test]
fn custom_edges_rebin_the_even_bin_metrics() {
    let preds = load_dump("lenet5_cifar100.npz", "test").host_on(&Device::flex());
    let pairs = ScorePairs::of(&preds, PairSet::TopLabel).unwrap();
    let config = EvaluationConfig::new()
        .with_metrics(vec![Metric::Ece, Metric::Mce, Metric::Rmsce])
        .with_edges(Some(ROSENBERG.to_vec()));
    let report = config.evaluate(&preds).unwrap();
    let expected = ece_loop(&pairs.scores, &pairs.outcomes, &ROSENBERG);
    let got = report.get(Metric::Ece).unwrap();
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    let bins = report.reliability(Metric::Ece, 0).unwrap();
    assert_eq!(bins.len(), 7);
    // Adaptive metrics keep their ranges.
    let plain = EvaluationConfig::new().with_metrics(vec![Metric::Rmsce]).evaluate(&preds).unwrap();
    assert_eq!(report.get(Metric::Rmsce), plain.get(Metric::Rmsce));
}

/// Even edges given explicitly reproduce the default even bins for every metric.
#[test]
fn even_edges_given_as_custom_edges_change_nothing() {
    let preds = load_dump("densenet40_cifar10.npz", "test").host_on(&Device::flex());
    let all = EvaluationConfig::new().with_metrics(Metric::ALL[..13].to_vec());
    let default = all.clone().evaluate(&preds).unwrap();
    let custom = all.with_edges(Some(even_edges(15))).evaluate(&preds).unwrap();
    for ((name, a), (_, b)) in default.named_values().iter().zip(custom.named_values()) {
        assert!((a - b).abs() < 1e-15, "{name}: {a} vs {b}");
    }
}

#[test]
fn bad_edges_are_refused_with_the_reason() {
    let preds = load_dump("densenet40_cifar10.npz", "test").host_on(&Device::flex());
    for (edges, why) in [
        (vec![0.0, 0.5, 0.4, 1.0], "strictly increasing"),
        (vec![0.1, 0.5, 1.0], "start at 0"),
        (vec![0.0, 0.5], "end at 1"),
        (vec![0.0], "at least two"),
    ] {
        let err = EvaluationConfig::new().with_edges(Some(edges)).evaluate(&preds).unwrap_err();
        assert!(err.to_string().contains(why), "{err}");
    }
}
