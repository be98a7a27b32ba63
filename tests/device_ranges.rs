//! Adaptive ranges cut on the device (radix selection, ties in row order) against the fused
//! engine's on the same f32 scores: probabilities stored in f32, so both engines order the
//! same values and every pair lands in the same range. Counts and hits are equal; score
//! sums agree to the kernels' fixed point (2^-31 per score). Runs on wgpu (Mesa's software
//! Vulkan in CI, `CALIB_REQUIRE_WGPU=1`; a real GPU where there is one).
#![cfg(feature = "wgpu")]

mod common;

use calib::binning::Binning;
use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::input::Predictions;
use calib::metrics::{CalibrationErrorConfig, ScoreSet};
use calib::stats::BinStats;
use calib::{Engine, Precision};
use common::Rng;

fn wgpu() -> Option<Device> {
    common::devices().into_iter().find(|(name, _)| *name == "wgpu").map(|(_, d)| d)
}

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
    let Some(gpu) = wgpu() else { return };
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
    let Some(gpu) = wgpu() else { return };
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
    let Some(gpu) = wgpu() else { return };
    let flex = Device::flex();
    let dump = common::synthetic(3_000, 5, 2);
    let config = CalibrationErrorConfig::new()
        .with_binning(Binning::Adaptive { n_ranges: 300 })
        .with_scores(ScoreSet::AllClasses);
    let k = config.statistics(&dump.on(&gpu), Precision::Auto, Engine::Kernels).unwrap();
    let f = config.statistics(&dump.on(&flex), Precision::Auto, Engine::Fused).unwrap();
    assert_eq!(k.count, f.count);
}
