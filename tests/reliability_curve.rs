//! The continuous reliability curve and `lce_ece` against an independent f64 implementation of
//! the same formula (a plain loop over every score and both reflections) on real dumps.

mod common;

use calib::burn::tensor::Device;
use calib::curve::{Kernel, ReliabilityCurveConfig, silverman_bandwidth};
use calib::pairs::{PairSet, ScorePairs};
use calib::{EvaluationConfig, Metric};
use common::load_dump;

fn pairs(dump: &str, set: PairSet) -> ScorePairs {
    let preds = load_dump(dump, "test").host_on(&Device::flex());
    ScorePairs::of(&preds, set).unwrap()
}

/// `RC(s)` summed over every score and its reflections at 0 and 1.
fn direct(pairs: &ScorePairs, h: f64, kernel: Kernel, s: f64) -> f64 {
    // Gaussian weights relative to the largest (log-sum-exp), so that none underflows.
    let images = |si: f64| [si, -si, 2.0 - si].map(|image| (s - image) / h);
    let top = pairs.scores.iter().flat_map(|&si| images(si)).map(|u| -0.5 * u * u);
    let shift = if kernel == Kernel::Gaussian { top.fold(f64::MIN, f64::max) } else { 0.0 };
    let (mut num, mut den) = (0.0, 0.0);
    for (&si, &yi) in pairs.scores.iter().zip(&pairs.outcomes) {
        for u in images(si) {
            let w = match kernel {
                Kernel::Gaussian => (-0.5 * u * u - shift).exp(),
                _ => kernel.weight(u),
            };
            num += w * yi;
            den += w;
        }
    }
    if den > 0.0 { num / den } else { s }
}

fn check_grid(pairs: &ScorePairs, config: &ReliabilityCurveConfig, every: usize) {
    let curve = config.curve(pairs).unwrap();
    for (g, (&s, &rc)) in curve.grid.iter().zip(&curve.reliability).enumerate().step_by(every) {
        let want = direct(pairs, curve.bandwidth, config.kernel, s);
        assert!((rc - want).abs() <= 1e-9, "grid {g} (s = {s}): {rc} vs {want}");
    }
}

/// LeNet-5 CIFAR-100 top-label confidences and one class's column (mostly near 0), Gaussian
/// and triweight, Silverman's and a wide bandwidth.
#[test]
fn equals_the_direct_formula_on_the_grid() {
    for set in [PairSet::TopLabel, PairSet::Class(3)] {
        let pairs = pairs("lenet5_cifar100.npz", set);
        for kernel in [Kernel::Gaussian, Kernel::Triweight] {
            for h in [None, Some(0.1)] {
                let config = ReliabilityCurveConfig::new().with_kernel(kernel).with_bandwidth(h);
                check_grid(&pairs, &config, 7);
            }
        }
    }
}

/// DenseNet-40's confidences crowd at 1 (Silverman's bandwidth is then tiny): the curve is
/// still the formula, finite and within [0, 1] everywhere on the grid.
#[test]
fn crowded_scores_give_a_finite_curve() {
    let pairs = pairs("densenet40_cifar10.npz", PairSet::TopLabel);
    let config = ReliabilityCurveConfig::new();
    let curve = config.curve(&pairs).unwrap();
    assert!(curve.reliability.iter().all(|v| (0.0..=1.0).contains(v)));
    check_grid(&pairs, &config, 1);
    check_grid(&pairs, &config.with_bandwidth(Some(0.05)), 3);
}

#[test]
fn lce_ece_metric_is_the_mean_absolute_lce_at_the_scores() {
    let preds = load_dump("lenet5_cifar100.npz", "test").host_on(&Device::flex());
    let pairs = ScorePairs::of(&preds, PairSet::TopLabel).unwrap();
    let h = silverman_bandwidth(&pairs.scores);
    let want = pairs
        .scores
        .iter()
        .map(|&s| (direct(&pairs, h, Kernel::Gaussian, s) - s).abs())
        .sum::<f64>()
        / pairs.len() as f64;
    let report =
        EvaluationConfig::new().with_metrics(vec![Metric::LceEce]).evaluate(&preds).unwrap();
    let got = report.get(Metric::LceEce).unwrap();
    assert!((got - want).abs() <= 1e-12, "{got} vs {want}");
}

/// Binary input gives the curve of its (score, label) pairs: the same as one class's column
/// of K-class input carried over as binary scores.
#[test]
fn binary_input_is_its_own_pairs() {
    use calib::input::{InputConfig, Predictions, ScoreKind};
    let column = pairs("lenet5_cifar100.npz", PairSet::Class(3));
    let labels: Vec<i64> = column.outcomes.iter().map(|&o| o as i64).collect();
    let config = InputConfig::new(ScoreKind::Binary);
    let binary = Predictions::from_host(&column.scores, 1, &labels, config, &Device::flex());
    let from_binary = ScorePairs::of(&binary.unwrap(), PairSet::TopLabel).unwrap();
    assert_eq!(from_binary, column);
    let curve = ReliabilityCurveConfig::new();
    assert_eq!(curve.curve(&from_binary).unwrap(), curve.curve(&column).unwrap());
}
