//! Calibrator fits on synthetic over-confident logits, per backend: temperature and vector
//! scaling at 10,000 x 10, 10,000 x 100 and 50,000 x 1,000; matrix scaling and Dirichlet
//! calibration (fixed ODIR strength, and with the default 5-fold search) at 10,000 x 100;
//! there also vector and matrix scaling in f32 through the device passes and through autodiff.
//!
//! `cargo bench --bench train --features ndarray,wgpu` (add a filter such as `-- temperature`).
//!
//! Fits that take more than a few seconds each (vector scaling at 50,000 x 1,000, anything on
//! wgpu beyond 10,000 x 100, where a software Vulkan driver measures the driver, and the
//! cross-validated Dirichlet fit off the host engine) run only with `CALIB_BENCH_ALL=1`.
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions};
use calib::train::{
    DirichletCalibrationConfig, Fit, FitConfig, MatrixScalingConfig, Regularisation,
    TemperatureScalingConfig, VectorScalingConfig,
};
use calib::{Engine, Precision};
use criterion::{Criterion, criterion_group, criterion_main};

const SIZES: [(usize, usize); 3] = [(10_000, 10), (10_000, 100), (50_000, 1_000)];

fn devices() -> Vec<(&'static str, Device)> {
    ["flex", "ndarray", "wgpu", "cuda"]
        .into_iter()
        .filter_map(|name| calib::backend::open_device(name).ok().map(|d| (name, d)))
        .collect()
}

fn inputs(n: usize, k: usize, device: &Device) -> Predictions {
    let (logits, labels) = calib::synthetic::overconfident_logits(n, k, 0.9, 2.0, 1);
    Predictions::from_host(&logits, k, &labels, InputConfig::default(), device).unwrap()
}

fn bench(c: &mut Criterion) {
    let all = std::env::var("CALIB_BENCH_ALL").is_ok_and(|v| v == "1");
    let mut group = c.benchmark_group("fit");
    group.sample_size(10);
    for (name, device) in devices() {
        let cpu = calib::BackendKind::of(&device).is_cpu();
        for (n, k) in SIZES {
            if !cpu && n * k > 1_000_000 && !all {
                continue;
            }
            let preds = inputs(n, k, &device);
            let temperature = TemperatureScalingConfig::new();
            group.bench_function(format!("temperature/{n}x{k}/{name}"), |b| {
                b.iter(|| temperature.fit(&preds).unwrap())
            });
            if n * k <= 1_000_000 || all {
                let vector = VectorScalingConfig::new();
                group.bench_function(format!("vector/{n}x{k}/{name}"), |b| {
                    b.iter(|| vector.fit(&preds).unwrap())
                });
            }
            if k == 100 {
                f32_engines(&mut group, &preds, name, all);
                let matrix = MatrixScalingConfig::new();
                group.bench_function(format!("matrix/{n}x{k}/{name}"), |b| {
                    b.iter(|| matrix.fit(&preds).unwrap())
                });
                let fixed = DirichletCalibrationConfig::new()
                    .with_regularisation(Regularisation::Odir { lambda: 1e-2, mu: 1e-2 });
                group.bench_function(format!("dirichlet_fixed/{n}x{k}/{name}"), |b| {
                    b.iter(|| fixed.fit(&preds).unwrap())
                });
                if cpu || all {
                    let searched = DirichletCalibrationConfig::new();
                    group.bench_function(format!("dirichlet_cv/{n}x{k}/{name}"), |b| {
                        b.iter(|| searched.fit(&preds).unwrap())
                    });
                }
            }
        }
    }
    group.finish();
}

/// Vector scaling and ODIR matrix scaling in f32 through the device passes (`Engine::Auto`:
/// tensor ops for objective, gradient and Hessian diagonal, the host L-BFGS) and through burn
/// autodiff with burn's L-BFGS (`Engine::Tensor`; matrix only with `CALIB_BENCH_ALL=1`).
fn f32_engines(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    preds: &Predictions,
    name: &str,
    all: bool,
) {
    let odir = Regularisation::Odir { lambda: 1e-2, mu: 1e-2 };
    for (label, engine) in [("device", Engine::Auto), ("autodiff", Engine::Tensor)] {
        let fit = FitConfig::new().with_precision(Precision::F32).with_engine(engine);
        let vector = VectorScalingConfig::new().with_fit(fit.clone());
        group.bench_function(format!("vector_f32_{label}/10000x100/{name}"), |b| {
            b.iter(|| vector.fit(preds).unwrap())
        });
        if engine == Engine::Auto || all {
            let matrix = MatrixScalingConfig::new().with_regularisation(odir).with_fit(fit);
            group.bench_function(format!("matrix_f32_{label}/10000x100/{name}"), |b| {
                b.iter(|| matrix.fit(preds).unwrap())
            });
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
