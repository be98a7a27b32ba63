//! The continuous reliability curve (1,000 grid points) and `lce_ece` on 10,000 and 1,000,000
//! binary scores (uniform, Bernoulli(s^1.3) outcomes), Gaussian and triweight kernels,
//! Silverman's bandwidth; pairs sorted inside each call.
//!
//! `cargo bench --bench curve` (add `-- 1000000` to filter).
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use calib::curve::{Kernel, ReliabilityCurveConfig};
use calib::pairs::ScorePairs;
use calib::synthetic::SplitMix64;
use criterion::{Criterion, criterion_group, criterion_main};

fn pairs(n: usize) -> ScorePairs {
    let mut rng = SplitMix64(1);
    let scores: Vec<f64> = (0..n).map(|_| rng.uniform()).collect();
    let outcomes =
        scores.iter().map(|&s| f64::from(u8::from(rng.uniform() < s.powf(1.3)))).collect();
    ScorePairs { scores, outcomes }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("reliability_curve");
    group.sample_size(10);
    for n in [10_000, 1_000_000] {
        let pairs = pairs(n);
        for kernel in [Kernel::Gaussian, Kernel::Triweight] {
            let config = ReliabilityCurveConfig::new().with_kernel(kernel);
            group.bench_function(format!("{n}/{kernel:?}/curve").to_lowercase(), |b| {
                b.iter(|| config.curve(&pairs).unwrap())
            });
        }
        let config = ReliabilityCurveConfig::new();
        group.bench_function(format!("{n}/gaussian/lce_ece"), |b| {
            b.iter(|| config.lce_ece(&pairs).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
