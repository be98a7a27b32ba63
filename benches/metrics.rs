//! The full metric set (ECE, MCE, SCE, ACE, TACE, NLL, Brier) on synthetic logits of
//! 10,000 x 10, 10,000 x 100 and 50,000 x 1,000, per backend and engine.
//!
//! `cargo bench --bench metrics --features ndarray,wgpu` (add `-- 50000x1000` to filter).
//! The fused engine runs twice: fresh memory per call (`.../fused`) and buffers kept in a
//! [`Workspace`] (`.../fused-workspace`).
//!
//! Inputs are host rows ([`Predictions::from_host`]), as a file reader produces them; the
//! tensor engine uploads them in row chunks. The tensor engine at 50,000 x 1,000 on ndarray and
//! wgpu (on a software Vulkan driver it measures the driver) runs only with `CALIB_BENCH_ALL=1`.
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions};
use calib::{Engine, EvaluationConfig, Metric, Workspace};
use criterion::{Criterion, criterion_group, criterion_main};

const SIZES: [(usize, usize); 3] = [(10_000, 10), (10_000, 100), (50_000, 1_000)];

fn metric_set() -> Vec<Metric> {
    vec![
        Metric::Ece,
        Metric::Mce,
        Metric::Sce,
        Metric::Ace,
        Metric::Tace,
        Metric::Nll,
        Metric::Brier,
    ]
}

fn devices() -> Vec<(&'static str, Device)> {
    ["flex", "ndarray", "wgpu", "cuda"]
        .into_iter()
        .filter_map(|name| calib::backend::open_device(name).ok().map(|d| (name, d)))
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("metric_set");
    group.sample_size(10);
    let all = std::env::var("CALIB_BENCH_ALL").is_ok_and(|v| v == "1");
    for (n, k) in SIZES {
        let (logits, labels) = calib::synthetic::overconfident_logits(n, k, 0.9, 2.0, 1);
        for (name, device) in devices() {
            let preds =
                Predictions::from_host(&logits, k, &labels, InputConfig::default(), &device)
                    .unwrap();
            let engines: &[Engine] = if calib::BackendKind::of(&device).is_cpu() {
                &[Engine::Fused, Engine::Tensor]
            } else {
                &[Engine::Tensor]
            };
            for &engine in engines {
                if n * k > 10_000_000 && name != "flex" && engine == Engine::Tensor && !all {
                    continue;
                }
                let cfg = EvaluationConfig::new().with_metrics(metric_set()).with_engine(engine);
                let id = format!("{n}x{k}/{name}/{engine:?}").to_lowercase();
                group.bench_function(&id, |b| b.iter(|| cfg.evaluate(&preds).unwrap()));
                if engine == Engine::Fused {
                    // Buffers kept between calls, as a training loop would (calib::Workspace).
                    let mut workspace = Workspace::new();
                    group.bench_function(format!("{id}-workspace"), |b| {
                        b.iter(|| cfg.evaluate_in(&preds, &mut workspace).unwrap())
                    });
                }
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
