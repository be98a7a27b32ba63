//! Sample weights in every metric: whole-number weights equal repeated rows (every metric of
//! the registry, every kind of input, every device), fractional weights equal independent f64
//! loops, bad weights are errors.

mod common;

use calib::bootstrap::BootstrapConfig;
use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::synthetic::{SplitMix64, overconfident_logits};
use calib::{EvaluationConfig, Metric};

/// Rows of one kind: values (row-major), width, labels.
struct Rows {
    values: Vec<f64>,
    width: usize,
    labels: Vec<i64>,
    kind: ScoreKind,
}

impl Rows {
    fn of(kind: ScoreKind, n: usize, seed: u64) -> Self {
        let k = 4;
        let (z, y) = overconfident_logits(n, k, 0.7, 2.5, seed);
        let z: Vec<f64> = z.iter().map(|&v| f64::from(v)).collect();
        let softmax = |row: &[f64]| {
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = row.iter().map(|v| (v - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(|v| v / s).collect::<Vec<_>>()
        };
        match kind {
            ScoreKind::Logits => Self { values: z, width: k, labels: y, kind },
            ScoreKind::Probabilities => {
                let values = z.chunks(k).flat_map(softmax).collect();
                Self { values, width: k, labels: y, kind }
            }
            _ => {
                let values = z.chunks(k).map(|r| softmax(r)[0]).collect();
                let labels = y.iter().map(|&l| i64::from(l == 0)).collect();
                Self { values, width: 1, labels, kind }
            }
        }
    }

    fn preds(&self, device: &Device) -> Predictions {
        let config = InputConfig::new(self.kind);
        Predictions::from_host(&self.values, self.width, &self.labels, config, device).unwrap()
    }

    /// Row `i` repeated `w[i]` times.
    fn repeated(&self, w: &[f64], device: &Device) -> Predictions {
        let (mut values, mut labels) = (Vec::new(), Vec::new());
        for (i, &wi) in w.iter().enumerate() {
            for _ in 0..wi as usize {
                values.extend_from_slice(&self.values[i * self.width..(i + 1) * self.width]);
                labels.push(self.labels[i]);
            }
        }
        let config = InputConfig::new(self.kind);
        Predictions::from_host(&values, self.width, &labels, config, device).unwrap()
    }
}

fn whole_weights(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| rng.below(4) as f64).collect()
}

fn assert_reports_close(a: &calib::Report, b: &calib::Report, tol: f64, what: &str) {
    for ((name, x), (_, y)) in a.named_values().into_iter().zip(b.named_values()) {
        let close = (x - y).abs() <= tol * (1.0 + y.abs()) || x == y;
        assert!(close, "{what}: {name} {x} vs repeated {y}");
    }
}

/// The property of the conventions: integer weights give the metrics of the repeated rows,
/// for every registered metric, on every kind of input and every device.
#[test]
fn whole_number_weights_equal_repeated_rows_for_every_metric() {
    let config = EvaluationConfig::new().with_metrics(Metric::ALL.to_vec());
    for (name, device) in common::devices() {
        for (kind, seed) in
            [(ScoreKind::Logits, 1), (ScoreKind::Probabilities, 2), (ScoreKind::Binary, 3)]
        {
            let rows = Rows::of(kind, 300, seed);
            let w = whole_weights(300, seed + 10);
            let weighted = config.evaluate(&rows.preds(&device).with_weights(w.clone()).unwrap());
            let repeated = config.evaluate(&rows.repeated(&w, &device)).unwrap();
            let weighted = weighted.unwrap();
            assert_eq!(weighted.n_samples, 300);
            // The refits stop at a gradient tolerance; everything else is a sum in another
            // order. Weighted rows are summed on the host in f64, the repeated ones on wgpu in f32.
            let tol = if name == "wgpu" { 1e-5 } else { 1e-7 };
            assert_reports_close(&weighted, &repeated, tol, &format!("{name} {kind:?}"));
        }
    }
}

/// Fractional weights against plain f64 loops: even-bin ECE, RMSCE on ranges cut through
/// the cumulative weight at `r W / R`, NLL, Brier and accuracy as weighted means.
#[test]
fn fractional_weights_equal_weighted_f64_loops() {
    let rows = Rows::of(ScoreKind::Logits, 500, 7);
    let mut rng = SplitMix64(8);
    let w: Vec<f64> =
        (0..500).map(|i| if i % 17 == 0 { 0.0 } else { 0.05 + 2.0 * rng.uniform() }).collect();
    let total: f64 = w.iter().sum();
    let metrics = vec![Metric::Ece, Metric::Rmsce, Metric::Nll, Metric::Brier, Metric::Accuracy];
    let config = EvaluationConfig::new().with_metrics(metrics).with_n_bins(10).with_n_ranges(7);
    let report =
        config.evaluate(&rows.preds(&Device::flex()).with_weights(w.clone()).unwrap()).unwrap();
    // Row quantities.
    let (mut conf, mut hit, mut nll, mut brier) = (vec![], vec![], 0.0, 0.0);
    for (i, row) in rows.values.chunks(4).enumerate() {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        let p: Vec<f64> = row.iter().map(|v| (v - m).exp() / s).collect();
        let (c, top) = p
            .iter()
            .enumerate()
            .fold((0.0, 0), |(b, j), (k, &v)| if v > b { (v, k) } else { (b, j) });
        let y = rows.labels[i] as usize;
        conf.push(c);
        hit.push(f64::from(u8::from(top == y)));
        nll -= w[i] * p[y].ln();
        brier += w[i]
            * p.iter()
                .enumerate()
                .map(|(k, v)| (v - f64::from(u8::from(k == y))).powi(2))
                .sum::<f64>();
    }
    // Even bins, right-closed: bin b holds (b/10, (b+1)/10].
    let mut bins = [[0.0f64; 3]; 10];
    for i in 0..500 {
        let b = ((conf[i] * 10.0).ceil() as usize).clamp(1, 10) - 1;
        bins[b][0] += w[i];
        bins[b][1] += w[i] * conf[i];
        bins[b][2] += w[i] * hit[i];
    }
    let ece: f64 = bins.iter().map(|b| (b[1] - b[2]).abs()).sum::<f64>() / total;
    // Adaptive ranges by cumulative weight, a row split where a cut falls.
    let mut order: Vec<usize> = (0..500).collect();
    order.sort_by(|&a, &b| conf[a].total_cmp(&conf[b]));
    let mut ranges = [[0.0f64; 3]; 7];
    let mut position = 0.0;
    for &i in &order {
        let (start, end) = (position, position + w[i]);
        for (r, acc) in ranges.iter_mut().enumerate() {
            let (lo, hi) = (r as f64 * total / 7.0, (r + 1) as f64 * total / 7.0);
            let part = (end.min(hi) - start.max(lo)).max(0.0);
            acc[0] += part;
            acc[1] += part * conf[i];
            acc[2] += part * hit[i];
        }
        position = end;
    }
    let rmsce = (ranges.iter().map(|r| (r[1] - r[2]).powi(2) / r[0]).sum::<f64>() / total).sqrt();
    let accuracy = (0..500).map(|i| w[i] * hit[i]).sum::<f64>() / total;
    for (metric, expected) in [
        (Metric::Ece, ece),
        (Metric::Rmsce, rmsce),
        (Metric::Nll, nll / total),
        (Metric::Brier, brier / total),
        (Metric::Accuracy, accuracy),
    ] {
        let got = report.get(metric).unwrap();
        assert!((got - expected).abs() < 1e-10, "{metric:?}: {got} vs {expected}");
    }
}

/// Weights are frequency weights: scaled by a constant they give the same estimates, except
/// where a count stands for the sample size (the tests' standard errors and p-values, the
/// debiasing term of `debiased_l2`, the refit's mixture `1 / (W + 1)`, Silverman's
/// `W^(-1/5)` in `lce_ece`, relplot's density floor `1e-4` against the weighted density in
/// `smece`); those two kernel estimators still give finite values for fractions.
#[test]
fn fractional_weights_are_scale_free_as_estimates() {
    let rows = Rows::of(ScoreKind::Probabilities, 400, 11);
    let mut rng = SplitMix64(12);
    let w: Vec<f64> = (0..400).map(|_| 0.1 + rng.uniform()).collect();
    let sample_size = [
        Metric::Smece,
        Metric::LceEce,
        Metric::DebiasedL2,
        Metric::Ks,
        Metric::KsPvalue,
        Metric::Kuiper,
        Metric::KuiperPvalue,
        Metric::Spiegelhalter,
        Metric::SpiegelhalterPvalue,
        Metric::CalibrationNll,
        Metric::RefinementNll,
        Metric::CalibrationBrier,
        Metric::RefinementBrier,
    ];
    let metrics: Vec<Metric> =
        Metric::ALL.iter().copied().filter(|m| !sample_size.contains(m)).collect();
    let config = EvaluationConfig::new().with_metrics(metrics);
    let preds = rows.preds(&Device::flex());
    let a = config.evaluate(&preds.clone().with_weights(w.clone()).unwrap()).unwrap();
    let b =
        config.evaluate(&preds.with_weights(w.iter().map(|v| v * 3.7).collect()).unwrap()).unwrap();
    assert_reports_close(&a, &b, 1e-7, "scaled weights");
    let kernel = EvaluationConfig::new().with_metrics(vec![Metric::Smece, Metric::LceEce]);
    let report = kernel.evaluate(&rows.preds(&Device::flex()).with_weights(w).unwrap()).unwrap();
    for m in [Metric::Smece, Metric::LceEce] {
        assert!(report.get(m).is_some_and(|v| v.is_finite() && v > 0.0), "{m:?}");
    }
}

/// Unit weights are the plain evaluation; a zero weight removes its row.
#[test]
fn unit_weights_are_plain_and_zero_weights_drop_rows() {
    let rows = Rows::of(ScoreKind::Logits, 300, 21);
    let config = EvaluationConfig::new().with_metrics(Metric::ALL.to_vec());
    let preds = rows.preds(&Device::flex());
    let plain = config.evaluate(&preds).unwrap();
    let ones = config.evaluate(&preds.clone().with_weights(vec![1.0; 300]).unwrap()).unwrap();
    assert_reports_close(&ones, &plain, 1e-9, "unit weights");
    let w: Vec<f64> = (0..300).map(|i| f64::from(u8::from(i % 3 != 0))).collect();
    let kept = rows.repeated(&w, &Device::flex());
    let dropped = config.evaluate(&preds.with_weights(w).unwrap()).unwrap();
    assert_reports_close(&dropped, &config.evaluate(&kept).unwrap(), 1e-7, "zero weights");
}

/// Unit weights draw the same bootstrap rows as no weights (the same intervals); weighted
/// replicates draw rows in proportion to weight, never a zero-weight row.
#[test]
fn weighted_bootstrap_draws_in_proportion_to_weight() {
    let rows = Rows::of(ScoreKind::Logits, 400, 31);
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Nll, Metric::Ace]);
    let boot = BootstrapConfig::new().with_replicates(50).with_seed(3);
    let preds = rows.preds(&Device::flex());
    let (_, plain) = config.bootstrap(&preds, &boot).unwrap();
    let (_, ones) =
        config.bootstrap(&preds.clone().with_weights(vec![1.0; 400]).unwrap(), &boot).unwrap();
    for (a, b) in plain.iter().zip(&ones) {
        assert!((a.lower - b.lower).abs() < 1e-9 && (a.upper - b.upper).abs() < 1e-9, "{}", a.name);
    }
    // Weight on the misclassified rows only: every replicate's accuracy is 0.
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Accuracy]);
    let report = config.evaluate(&preds).unwrap();
    assert!(report.get(Metric::Accuracy).unwrap() > 0.3);
    let (_, hit) = calib::pairs::ScorePairs::of(&preds, calib::pairs::PairSet::TopLabel)
        .map(|p| ((), p.outcomes))
        .unwrap();
    let wrong: Vec<f64> = hit.iter().map(|&h| 1.0 - h).collect();
    let (_, intervals) = config.bootstrap(&preds.with_weights(wrong).unwrap(), &boot).unwrap();
    assert_eq!((intervals[0].estimate, intervals[0].lower, intervals[0].upper), (0.0, 0.0, 0.0));
}

/// Negative, NaN, infinite and all-zero weights, and a wrong count, are errors that say so;
/// a stream refuses unweighted chunks after weighted ones.
#[test]
fn bad_weights_are_clear_errors() {
    let preds = Rows::of(ScoreKind::Binary, 3, 41).preds(&Device::flex());
    for (w, says) in [
        (vec![1.0, -1.0, 1.0], "non-negative"),
        (vec![1.0, f64::NAN, 1.0], "finite"),
        (vec![1.0, f64::INFINITY, 1.0], "finite"),
        (vec![0.0, 0.0, 0.0], "at least one must be positive"),
        (vec![1.0, 1.0], "2 weights for 3 rows"),
    ] {
        let e = preds.clone().with_weights(w).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    // A stream takes weighted chunks, and chunks of zero weight; not a mix with unweighted.
    let weighted = preds.clone().with_weights(vec![0.5, 1.0, 2.0]).unwrap();
    let mut stream = EvaluationConfig::new().with_metrics(vec![Metric::Ece]).streaming().unwrap();
    stream.update(&weighted).unwrap();
    stream.update(&preds.clone().with_chunk_weights(vec![0.0; 3]).unwrap()).unwrap();
    let e = stream.update(&preds).unwrap_err().to_string();
    assert!(e.contains("sample weights, or none"), "{e}");
}
