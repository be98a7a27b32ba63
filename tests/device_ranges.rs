//! Adaptive ranges cut on the device (radix selection, ties in row order) against the fused
//! engine's on the same f32 scores: probabilities stored in f32, so both engines order the
//! same values and every pair lands in the same range. Counts and hits are equal; score
//! sums agree to the kernels' fixed point (2^-31 per score). Runs on wgpu (Mesa's software
//! Vulkan in CI, `CALIB_REQUIRE_WGPU=1`; a real GPU where there is one). Rows in several
//! parts evaluate as their concatenation.
#![cfg(feature = "wgpu")]

mod common;

use calib::binning::Binning;
use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::metrics::{CalibrationErrorConfig, ScoreSet};
use calib::stats::BinStats;
use calib::{Engine, EvaluationConfig, Metric, Precision};
use common::Rng;

fn probabilities(values: &[f32], labels: &[i64], k: usize, device: &Device) -> Predictions {
    let n = labels.len();
    let v = Tensor::<2>::from_data(TensorData::new(values.to_vec(), [n, k]), device);
    let l = Tensor::<1, Int>::from_data(TensorData::new(labels.to_vec(), [n]), device);
    Predictions::probabilities(v, l).unwrap()
}

/// Softmax of a dump's logits in f64, stored in f32.
fn softmax_f32(dump: &common::Dump) -> Vec<f32> {
    let k = dump.n_classes;
    dump.logits
        .chunks(k)
        .flat_map(|row| {
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
            let e: Vec<f64> = row.iter().map(|&z| (z as f64 - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| (v / s) as f32)
        })
        .collect()
}

fn same_ranges(a: &BinStats, b: &BinStats, what: &str) {
    assert_eq!(a.count, b.count, "{what}: counts");
    assert_eq!(a.sum_outcome, b.sum_outcome, "{what}: hits");
    for (x, y) in a.sum_score.iter().zip(&b.sum_score) {
        assert!((x - y).abs() <= 1e-6, "{what}: score sum {x} vs {y}");
    }
}

/// The adaptive requests the metrics make (ACE, TACE, RMSCE and the L2 errors), top-label
/// ranges grouped by predicted class, and range counts from 1 to the register limit.
fn configs() -> Vec<(String, CalibrationErrorConfig)> {
    let mut out = Vec::new();
    for n_ranges in [1, 2, 15, 100, 256] {
        for (scores, grouped, threshold) in [
            (ScoreSet::AllClasses, true, None),
            (ScoreSet::AllClasses, true, Some(0.01)),
            (ScoreSet::TopLabel, false, None),
            (ScoreSet::TopLabel, true, Some(0.2)),
        ] {
            let config = CalibrationErrorConfig::new()
                .with_binning(Binning::Adaptive { n_ranges })
                .with_scores(scores)
                .with_class_conditional(grouped)
                .with_threshold(threshold);
            out.push((
                format!("{n_ranges} ranges {scores:?} grouped {grouped} {threshold:?}"),
                config,
            ));
        }
    }
    out
}

fn ranges_match(gpu: &Predictions, cpu: &Predictions, what: &str) {
    for (name, config) in configs() {
        let k = config.statistics(gpu, Precision::Auto, Engine::Kernels).unwrap();
        let f = config.statistics(cpu, Precision::Auto, Engine::Fused).unwrap();
        same_ranges(&k, &f, &format!("{what}, {name}"));
    }
}

#[test]
fn device_ranges_equal_the_fused_engine_on_real_scores() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    for name in ["densenet40_cifar10.npz", "lenet5_cifar100.npz"] {
        let dump = common::load_dump(name, "test");
        let p = softmax_f32(&dump);
        let k = dump.n_classes;
        ranges_match(
            &probabilities(&p, &dump.labels, k, &gpu),
            &probabilities(&p, &dump.labels, k, &flex),
            name,
        );
    }
}

/// Scores from a handful of values, so cuts fall inside long runs of equal scores, over more
/// rows than one tie pass's blocks (two tie passes), with p = 0 and 1 among them.
#[test]
fn cuts_inside_runs_of_equal_scores_split_them_in_row_order() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    let rows: [[f32; 3]; 5] =
        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.0, 0.75, 0.25], [0.5, 0.25, 0.25]];
    let mut rng = Rng(17);
    let (mut values, mut labels) = (Vec::new(), Vec::new());
    for _ in 0..9_000 {
        values.extend_from_slice(&rows[(rng.next_u64() % 5) as usize]);
        labels.push((rng.next_u64() % 3) as i64);
    }
    let (g, c) =
        (probabilities(&values, &labels, 3, &gpu), probabilities(&values, &labels, 3, &flex));
    ranges_match(&g, &c, "ties");
}

/// More ranges than the class-wise kernel keeps in registers go to the fused engine.
#[test]
fn many_ranges_fall_back_to_the_fused_engine() {
    let Some(gpu) = common::wgpu() else { return };
    let flex = Device::flex();
    let dump = common::synthetic(3_000, 5, 2);
    let config = CalibrationErrorConfig::new()
        .with_binning(Binning::Adaptive { n_ranges: 300 })
        .with_scores(ScoreSet::AllClasses);
    let k = config.statistics(&dump.on(&gpu), Precision::Auto, Engine::Kernels).unwrap();
    let f = config.statistics(&dump.on(&flex), Precision::Auto, Engine::Fused).unwrap();
    assert_eq!(k.count, f.count);
}

/// `values` (`k` columns) and `labels` as probabilities split at the rows `cuts`.
fn split(
    values: &[f32],
    labels: &[i64],
    k: usize,
    cuts: &[usize],
    device: &Device,
) -> Vec<Predictions> {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(labels.len());
    bounds
        .windows(2)
        .map(|w| probabilities(&values[w[0] * k..w[1] * k], &labels[w[0]..w[1]], k, device))
        .collect()
}

/// The default set over parts against the whole, on the kernels: bins and ranges exactly
/// (counts, hits and fixed-point sums are integers), the row sums to f32 rounding.
fn parts_match(parts: &[Predictions], whole: &Predictions, what: &str) {
    let config = EvaluationConfig::new().with_engine(Engine::Kernels);
    let (a, b) = (config.evaluate_parts(parts).unwrap(), config.evaluate(whole).unwrap());
    for (x, y) in a.named_values().iter().zip(b.named_values()) {
        assert_eq!(x.0, y.0);
        let exact = !matches!(x.0.as_str(), "nll" | "brier");
        let tol = if exact { 0.0 } else { 1e-6 * y.1.abs().max(1.0) };
        let same = x.1 == y.1 || (x.1 - y.1).abs() <= tol;
        assert!(same, "{what} {}: parts {} vs whole {}", x.0, x.1, y.1);
    }
}

/// Rows held as several parts evaluate as one input (`evaluate_parts`): real scores over
/// three device parts, runs of tied scores that cross the parts' bounds (cut in row order
/// across them), and host-stored parts (uploaded again at every visit).
#[test]
fn parts_evaluate_as_their_concatenation() {
    let Some(gpu) = common::wgpu() else { return };
    let dump = common::load_dump("densenet40_cifar10.npz", "test");
    let (p, k) = (softmax_f32(&dump), dump.n_classes);
    let whole = probabilities(&p, &dump.labels, k, &gpu);
    parts_match(&split(&p, &dump.labels, k, &[1_234, 3_000], &gpu), &whole, "real scores");

    let rows: [[f32; 3]; 4] =
        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.0, 0.75, 0.25]];
    let mut rng = Rng(23);
    let (mut values, mut labels) = (Vec::new(), Vec::new());
    for _ in 0..9_000 {
        values.extend_from_slice(&rows[(rng.next_u64() % 4) as usize]);
        labels.push((rng.next_u64() % 3) as i64);
    }
    let whole = probabilities(&values, &labels, 3, &gpu);
    parts_match(&split(&values, &labels, 3, &[1, 4_321, 4_322], &gpu), &whole, "ties");

    let config = InputConfig::new(ScoreKind::Probabilities);
    let host: Vec<Predictions> = [0..2_500, 2_500..9_000]
        .into_iter()
        .map(|r| {
            let v = &values[r.start * 3..r.end * 3];
            Predictions::from_host(v, 3, &labels[r], config, &gpu).unwrap()
        })
        .collect();
    parts_match(&host, &whole, "host-stored parts");
}

/// Off the kernels, parts stream through the host engine: the same report as the whole. No
/// parts, parts of other K and the metrics that need every row at once are errors.
#[test]
fn parts_on_the_host_stream_and_bad_parts_are_refused() {
    let flex = Device::flex();
    let dump = common::synthetic(2_000, 4, 5);
    let k = dump.n_classes;
    let parts: Vec<Predictions> = [0..700, 700..2_000]
        .into_iter()
        .map(|r| {
            let logits = &dump.logits[r.start * k..r.end * k];
            let config = InputConfig::new(ScoreKind::Logits);
            Predictions::from_host(logits, k, &dump.labels[r], config, &flex).unwrap()
        })
        .collect();
    let config = EvaluationConfig::new();
    let (a, b) =
        (config.evaluate_parts(&parts).unwrap(), config.evaluate(&dump.on(&flex)).unwrap());
    for (x, y) in a.named_values().iter().zip(b.named_values()) {
        assert!((x.1 - y.1).abs() <= 1e-12, "{}: parts {} vs whole {}", x.0, x.1, y.1);
    }
    assert!(matches!(config.evaluate_parts(&[]), Err(calib::CalibError::Empty)));
    let other = common::synthetic(10, 3, 1).on(&flex);
    let err = config.evaluate_parts(&[parts[0].clone(), other]).unwrap_err().to_string();
    assert!(err.contains("4 and 3 classes"), "{err}");
    let ks = EvaluationConfig::new().with_metrics(vec![Metric::Ks]);
    let err = ks.evaluate_parts(&parts).unwrap_err().to_string();
    assert!(err.contains("ks"), "{err}");
}
