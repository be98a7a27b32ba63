//! A replicate is the evaluation of its resample, materialised.

use burn::tensor::Device;

use super::*;
use crate::Metric;
use crate::input::{InputConfig, ScoreKind};
use crate::synthetic::overconfident_logits;

/// Synthetic predictions of each kind: logits, their softmax, and binary scores.
fn inputs() -> Vec<(Vec<f64>, usize, Vec<i64>, ScoreKind)> {
    let (n, k) = (700, 6);
    let (z, y) = overconfident_logits(n, k, 0.8, 2.0, 5);
    let z: Vec<f64> = z.iter().map(|&v| f64::from(v)).collect();
    let mut probs = Vec::with_capacity(z.len());
    for row in z.chunks_exact(k) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v - max).exp()).collect();
        let s: f64 = e.iter().sum();
        probs.extend(e.iter().map(|v| v / s));
    }
    let binary: Vec<f64> = probs.chunks_exact(k).map(|r| r[0]).collect();
    let yb: Vec<i64> = y.iter().map(|&v| i64::from(v == 0)).collect();
    vec![
        (z, k, y.clone(), ScoreKind::Logits),
        (probs, k, y, ScoreKind::Probabilities),
        (binary, 1, yb, ScoreKind::Binary),
    ]
}

fn preds(values: &[f64], width: usize, labels: &[i64], kind: ScoreKind) -> Predictions {
    Predictions::from_host(values, width, labels, InputConfig::new(kind), &Device::flex()).unwrap()
}

fn every_metric() -> EvaluationConfig {
    EvaluationConfig::new().with_metrics(Metric::ALL.to_vec()).with_nll_eps(Some(1e-3))
}

fn assert_close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let ok = (x - y).abs() <= 1e-12 * x.abs().max(1.0) || (x.is_infinite() && x == y);
        assert!(ok, "{what} value {i}: {x} vs {y}");
    }
}

#[test]
fn a_replicate_equals_the_evaluation_of_its_materialised_resample() {
    for (values, width, labels, kind) in inputs() {
        let p = preds(&values, width, &labels, kind);
        let config = every_metric();
        let replicates = Replicates::new(&config, &p).unwrap();
        for b in [0usize, 7] {
            let m = multiplicities(labels.len(), 42, b);
            let (mut v, mut l) = (Vec::new(), Vec::new());
            for (i, &w) in m.iter().enumerate() {
                for _ in 0..w {
                    v.extend_from_slice(&values[i * width..(i + 1) * width]);
                    l.push(labels[i]);
                }
            }
            let direct = config.evaluate(&preds(&v, width, &l, kind)).unwrap();
            let direct: Vec<f64> = direct.named_values().into_iter().map(|(_, x)| x).collect();
            assert_close(&replicates.replicate(42, b), &direct, &format!("{kind:?} replicate {b}"));
        }
        // All ones: the plain evaluation.
        let ones = vec![1u32; labels.len()];
        let outcome = replicates.records.outcome(&ones);
        let report = config.assemble(
            &replicates.binned,
            &outcome,
            labels.len(),
            labels.len() as f64,
            p.n_classes(),
            kind,
        );
        let plain = config.evaluate(&p).unwrap();
        // (The pair metrics are filled in by `replicate`, not by `assemble`.)
        let pair = |name: &str| Metric::from_name(name).is_ok_and(|m| m.needs_all_rows());
        for ((name, got), (_, expected)) in
            report.named_values().into_iter().zip(plain.named_values())
        {
            if !pair(&name) {
                assert!((got - expected).abs() <= 1e-12, "{kind:?} {name}: {got} vs {expected}");
            }
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_intervals_on_any_thread_count() {
    let (values, width, labels, kind) = inputs().remove(0);
    let p = preds(&values, width, &labels, kind);
    let config = EvaluationConfig::new();
    let run = |threads| {
        let b = BootstrapConfig::new().with_replicates(50).with_seed(9).with_threads(threads);
        config.bootstrap(&p, &b).unwrap().1
    };
    assert_eq!(run(1), run(3));
    let other = BootstrapConfig::new().with_replicates(50).with_seed(10);
    assert_ne!(run(1), config.bootstrap(&p, &other).unwrap().1);
}

#[test]
fn basic_intervals_reflect_the_percentile_ones_about_the_estimate() {
    let (values, width, labels, kind) = inputs().remove(0);
    let p = preds(&values, width, &labels, kind);
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Nll]);
    let b = BootstrapConfig::new().with_replicates(100);
    let (_, pct) = config.bootstrap(&p, &b).unwrap();
    let (_, basic) = config.bootstrap(&p, &b.clone().with_interval(IntervalKind::Basic)).unwrap();
    for (a, c) in pct.iter().zip(&basic) {
        assert!((c.lower - (2.0 * a.estimate - a.upper)).abs() < 1e-15);
        assert!((c.upper - (2.0 * a.estimate - a.lower)).abs() < 1e-15);
        assert!(a.standard_error > 0.0);
    }
    assert!(config.bootstrap(&p, &BootstrapConfig::new().with_level(1.0)).is_err());
    assert!(config.bootstrap(&p, &BootstrapConfig::new().with_replicates(1)).is_err());
}
