//! All 32 GCE variants of Nixon et al.'s appendix (`GceVariant`) against an independent f64
//! implementation of the general calibration error, written from docs/conventions.md, on a
//! real dump at several bin counts.

mod common;

use calib::burn::tensor::Device;
use calib::metrics::{CalibrationErrorConfig, GceProperty, GceVariant};
use common::load_dump;

/// f64 softmax rows of the dump's logits.
fn probabilities(logits: &[f32], k: usize) -> Vec<Vec<f64>> {
    logits
        .chunks(k)
        .map(|row| {
            let top = row.iter().fold(f64::MIN, |m, &v| m.max(f64::from(v)));
            let e: Vec<f64> = row.iter().map(|&v| (f64::from(v) - top).exp()).collect();
            let sum: f64 = e.iter().sum();
            e.iter().map(|v| v / sum).collect()
        })
        .collect()
}

/// The pairs `(score, outcome)` of each group of `variant`.
fn groups(p: &[Vec<f64>], y: &[i64], v: GceVariant) -> Vec<Vec<(f64, f64)>> {
    let k = p[0].len();
    let conditional = !v.has(GceProperty::ClassConditional);
    let mut groups = vec![Vec::new(); if conditional { k } else { 1 }];
    for (row, &label) in p.iter().zip(y) {
        let argmax = (0..k).fold(0, |best, j| if row[j] > row[best] { j } else { best });
        let pairs: Vec<(usize, f64, bool)> = if v.has(GceProperty::Scores) {
            (0..k).map(|j| (j, row[j], label == j as i64)).collect()
        } else {
            vec![(argmax, row[argmax], label == argmax as i64)]
        };
        for (key, s, hit) in pairs {
            if !v.has(GceProperty::Threshold) || s > 0.01 {
                groups[if conditional { key } else { 0 }].push((s, f64::from(u8::from(hit))));
            }
        }
    }
    groups
}

/// `(n_b, sum of scores, sum of outcomes)` per bin of one group.
fn bins(pairs: &[(f64, f64)], n_bins: usize, adaptive: bool) -> Vec<(f64, f64, f64)> {
    let mut out = vec![(0.0, 0.0, 0.0); n_bins];
    let mut add = |b: usize, (s, o): (f64, f64)| {
        out[b].0 += 1.0;
        out[b].1 += s;
        out[b].2 += o;
    };
    if adaptive {
        let mut sorted = pairs.to_vec();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0)); // stable: ties in sample order
        let n = sorted.len();
        for r in 0..n_bins {
            (r * n / n_bins..(r + 1) * n / n_bins).for_each(|i| add(r, sorted[i]));
        }
    } else {
        for &pair in pairs {
            add(((pair.0 * n_bins as f64).ceil() as usize).clamp(1, n_bins) - 1, pair);
        }
    }
    out
}

fn reference(p: &[Vec<f64>], y: &[i64], v: GceVariant, n_bins: usize) -> f64 {
    let groups = groups(p, y, v);
    let (adaptive, l2) = (v.has(GceProperty::Binning), v.has(GceProperty::Norm));
    let uniform = adaptive && v.has(GceProperty::Scores) && !v.has(GceProperty::ClassConditional);
    let total: f64 = groups.iter().map(Vec::len).sum::<usize>() as f64;
    let mut sum = 0.0;
    for g in &groups {
        let n_g = g.len() as f64;
        let e: f64 = bins(g, n_bins, adaptive)
            .iter()
            .filter(|b| b.0 > 0.0)
            .map(|&(n, s, o)| {
                let w = if uniform { 1.0 / n_bins as f64 } else { n / n_g };
                let d = (s - o) / n;
                w * if l2 { d * d } else { d.abs() }
            })
            .sum();
        let omega = match (groups.len(), v.has(GceProperty::Scores)) {
            (1, _) => 1.0,
            (_, true) => 1.0 / groups.len() as f64,
            (_, false) => n_g / total,
        };
        sum += omega * e;
    }
    if l2 { sum.sqrt() } else { sum }
}

#[test]
fn every_variant_equals_the_f64_reference() {
    let dump = load_dump("densenet40_cifar10.npz", "test");
    let p = probabilities(&dump.logits, dump.n_classes);
    let preds = load_dump("densenet40_cifar10.npz", "test").host_on(&Device::flex());
    for n_bins in [10, 30, 50] {
        let configs: Vec<_> = GceVariant::all().map(|v| v.config(n_bins)).collect();
        let values = CalibrationErrorConfig::compute_many(&configs, &preds).unwrap();
        for (v, got) in GceVariant::all().zip(values) {
            let want = reference(&p, &dump.labels, v, n_bins);
            assert!((got.value - want).abs() <= 1e-6, "{v} at {n_bins}: {} vs {want}", got.value);
        }
    }
}
