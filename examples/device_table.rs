//! The GPU table of `docs/benchmarks.md`: calib's kernels on a wgpu device (data already
//! there, as in a training loop) against the fused CPU engine on all cores, for the metric set
//! and for temperature, vector and matrix fits. Median of repeated runs, in milliseconds.
//!
//! ```sh
//! cargo run --release --features wgpu --example device_table -- 50000x1000 1000000x1000
//! ```
//! `--metrics-only` leaves out the fits, `--fits-only` the metric sets; `--diagonal-fits`
//! keeps the vector and SVS fits alone. Each metric row says its passes over the scores and
//! host synchronisations (`DeviceCost`). `--floor` first times burn's own sum over the
//! logits (one read of them, the bandwidth floor of a pass through wgpu), and
//! `--checked-too` adds a column of the kernels launched with CubeCL's bounds checks
//! (`calib::engine::set_checked_kernels`), timed alternately with the default launches.
//! `--binary-maps` adds the maps fitted on pairs sorted on the device (isotonic regression,
//! histogram binning by equal width and equal mass, one-vs-rest) with their costs.
//! Without a GPU it runs on Mesa's software Vulkan, which measures the driver, not calib.

use std::error::Error;
use std::time::Instant;

use calib::burn::tensor::{Device, Distribution, Int, Tensor};
use calib::engine::{DeviceCost, TemperedRows};
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{
    BinStrategy, Fit, FitRecord, HistogramBinningConfig, IsotonicRegressionConfig,
    MatrixScalingConfig, Regularisation, StructuredMatrixScalingConfig,
    StructuredVectorScalingConfig, TemperatureScalingConfig, VectorScalingConfig,
};
use calib::{Engine, EvaluationConfig, Metric};

/// The metric set without adaptive ranges (ECE, MCE, SCE, top-label ECE, NLL, Brier,
/// accuracy): what the kernels compute alone, and what can stream over parts.
fn static_set() -> Vec<Metric> {
    use Metric::*;
    vec![Ece, Mce, Sce, ToplabelEce, Nll, Brier, Accuracy]
}

/// Median wall time of `repeats` calls after one warm-up, in ms.
fn median_ms<T>(repeats: usize, mut f: impl FnMut() -> T) -> f64 {
    drop(f());
    median_warm_ms(repeats, f)
}

/// Median wall time of `repeats` calls, already warmed up, in ms.
fn median_warm_ms<T>(repeats: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            drop(f());
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn parse(size: &str) -> Result<(usize, usize), Box<dyn Error>> {
    let (n, k) = size.split_once('x').ok_or("sizes look like 50000x1000")?;
    Ok((n.parse()?, k.parse()?))
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let metrics_only = args.iter().any(|a| a == "--metrics-only");
    let trace = args.iter().any(|a| a == "--trace");
    let fits_only = args.iter().any(|a| a == "--fits-only");
    let diagonal_only = args.iter().any(|a| a == "--diagonal-fits");
    let floor = args.iter().any(|a| a == "--floor");
    let checked_too = args.iter().any(|a| a == "--checked-too");
    let binary_maps = args.iter().any(|a| a == "--binary-maps");
    let mut sizes: Vec<(usize, usize)> =
        args.iter().filter(|a| !a.starts_with("--")).map(|s| parse(s)).collect::<Result<_, _>>()?;
    if sizes.is_empty() {
        sizes = vec![(10_000, 100)];
    }
    let gpu = calib::backend::open_device("wgpu")?;
    let flex = Device::flex();
    println!("| size | set | wgpu kernels | CPU fused | ratio |");
    println!("|---|---|---|---|---|");
    for (n, k) in sizes {
        // wgpu refuses buffers of a few GiB: hold the logits as parts of at most 2^28 values.
        let per_part = ((1usize << 28) / k).min(n);
        let (mut parts, mut host_values, mut host_labels) = (Vec::new(), Vec::new(), Vec::new());
        let mut tensors = Vec::new();
        for start in (0..n).step_by(per_part) {
            let rows = per_part.min(n - start);
            let labels =
                Tensor::<1, Int>::random([rows], Distribution::Uniform(0.0, k as f64), &gpu);
            // The label's logit raised by 4, so the temperature has an optimum to find.
            let values = Tensor::<2>::random([rows, k], Distribution::Normal(0.0, 3.0), &gpu)
                + labels.clone().one_hot::<2>(k).float().mul_scalar(4.0);
            host_values.extend(values.clone().into_data().convert::<f32>().try_to_vec::<f32>()?);
            host_labels.extend(labels.clone().into_data().convert::<i64>().try_to_vec::<i64>()?);
            tensors.push(values.clone());
            parts.push(Predictions::logits(values, labels)?);
        }
        if floor {
            let read_all = || -> f32 {
                let sums: Vec<Tensor<1>> = tensors.iter().map(|t| t.clone().sum()).collect();
                let total = Tensor::cat(sums, 0).sum().into_data().convert::<f32>();
                total.try_to_vec::<f32>().expect("one f32")[0]
            };
            let ms = median_ms(5, read_all);
            let gbps = (n * k * 4) as f64 / ms / 1e6;
            println!(
                "| {n} x {k} | burn sum of the logits (one read) | {ms:.2} ms | {gbps:.0} GB/s | |"
            );
        }
        drop(tensors);
        let config = InputConfig::new(ScoreKind::Logits);
        let on_cpu = Predictions::from_host_vec(host_values, k, host_labels, config, &flex)?;
        let sets = if fits_only {
            vec![]
        } else {
            vec![
                ("static metrics", static_set()),
                ("default metrics", Metric::defaults()),
                ("ACE alone", vec![Metric::Ace]),
                ("RMSCE alone", vec![Metric::Rmsce]),
                ("accuracy alone", vec![Metric::Accuracy]),
                ("ECE alone", vec![Metric::Ece]),
                ("SCE alone", vec![Metric::Sce]),
            ]
        };
        for (name, metrics) in sets {
            let eval = EvaluationConfig::new().with_metrics(metrics);
            let kernels = eval.clone().with_engine(Engine::Kernels);
            let fused = eval.with_engine(Engine::Fused);
            let g = median_ms(5, || kernels.evaluate_parts(&parts).expect("kernels"));
            if checked_too {
                let (mut on, mut off) = (Vec::new(), Vec::new());
                for _ in 0..3 {
                    calib::engine::set_checked_kernels(true);
                    on.push(median_ms(1, || kernels.evaluate_parts(&parts).expect("checked")));
                    calib::engine::set_checked_kernels(false);
                    off.push(median_ms(1, || kernels.evaluate_parts(&parts).expect("kernels")));
                }
                on.sort_by(f64::total_cmp);
                off.sort_by(f64::total_cmp);
                println!(
                    "| {n} x {k} | {name}: checked launches {:.2} ms, unchecked {:.2} ms (alternating, median of 3) | | | |",
                    on[1], off[1]
                );
            }
            let (_, cost) = DeviceCost::measure(|| kernels.evaluate_parts(&parts));
            let passes = cost.passes((n * k * 4) as u64);
            if trace {
                print_trace(name, || kernels.evaluate_parts(&parts));
            }
            let c = median_ms(3, || fused.evaluate(&on_cpu).expect("fused"));
            println!(
                "| {n} x {k} | {name} ({} parts; {passes} passes over the scores, {} syncs, {} KB back) | {g:.2} ms | {c:.2} ms | {:.1}x |",
                parts.len(),
                cost.syncs,
                cost.read_back_bytes / 1024,
                c / g
            );
        }
        if metrics_only {
            continue;
        }
        let fit = TemperatureScalingConfig::new();
        let rows = TemperedRows::from_parts(&parts)?;
        let g = median_ms(5, || fit.fit_on_device(&rows).expect("device fit"));
        let c = median_ms(3, || fit.fit(&on_cpu).expect("host fit"));
        let device = fit.fit_on_device(&rows)?;
        let (tg, tc) =
            (device.calibrator.temperature()?, fit.fit(&on_cpu)?.calibrator.temperature()?);
        println!(
            "| {n} x {k} | temperature fit, {} passes (T {tg:.7} vs {tc:.7}) | {g:.2} ms | {c:.2} ms | {:.1}x |",
            device.record.evaluations,
            c / g
        );
        if parts.len() == 1 {
            affine_rows(&parts[0], &on_cpu, n, k, diagonal_only)?;
            if binary_maps {
                binary_map_rows(&parts[0], &on_cpu, n, k)?;
            }
        }
    }
    Ok(())
}

/// Runs `f` traced (`calib_kernels::trace`) and prints where its wall time went: each round
/// of the device ranges and the last visit, as the host's waits for the device.
fn print_trace<T>(name: &str, f: impl FnOnce() -> T) {
    calib_kernels::trace::set_tracing(true);
    calib_kernels::trace::begin(name);
    drop(f());
    calib_kernels::trace::end();
    calib_kernels::trace::set_tracing(false);
    for stretch in calib_kernels::trace::take() {
        let steps: Vec<String> = (stretch.steps.iter())
            .map(|(step, d)| format!("{step} {:.2} ms", d.as_secs_f64() * 1e3))
            .collect();
        let wall = stretch.wall.as_secs_f64() * 1e3;
        eprintln!("  trace {name}: wall {wall:.2} ms; {}", steps.join("; "));
    }
}

/// A fit, returning its record.
type FitFn = dyn Fn(&Predictions) -> FitRecord;

/// Vector scaling, structured vector and matrix scaling (SVS, SMS) and, up to 100 classes,
/// ODIR matrix scaling fitted by the device passes on the GPU against the host engine on the
/// CPU; each row says the final losses. A fit is run once to warm up (its record is the one
/// printed), then timed twice.
fn affine_rows(
    gpu: &Predictions,
    cpu: &Predictions,
    n: usize,
    k: usize,
    diagonal_only: bool,
) -> Result<(), Box<dyn Error>> {
    let odir = Regularisation::Odir { lambda: 1e-2, mu: 1e-2 };
    let vector = VectorScalingConfig::new();
    let matrix = MatrixScalingConfig::new().with_regularisation(odir);
    let svs = StructuredVectorScalingConfig::new();
    let sms = StructuredMatrixScalingConfig::new();
    let mut fits: Vec<(&str, Box<FitFn>)> = vec![
        ("vector fit", Box::new(move |p| vector.fit(p).expect("vector fit").record)),
        ("SVS fit", Box::new(move |p| svs.fit(p).expect("SVS fit").record)),
        ("SMS fit", Box::new(move |p| sms.fit(p).expect("SMS fit").record)),
    ];
    if diagonal_only {
        fits.truncate(2);
    } else if k <= 100 {
        fits.push(("matrix fit (ODIR)", Box::new(move |p| matrix.fit(p).expect("matrix").record)));
    }
    for (name, fit) in fits {
        let (rg, rc) = (fit(gpu), fit(cpu));
        let g = median_warm_ms(2, || fit(gpu));
        let c = median_warm_ms(2, || fit(cpu));
        println!(
            "| {n} x {k} | {name}, {} iterations (loss {:.7} vs {:.7}) | {g:.2} ms | {c:.2} ms | {:.1}x |",
            rg.iterations,
            rg.final_loss,
            rc.final_loss,
            c / g
        );
    }
    Ok(())
}

/// The binary maps sorted and fitted on the device (one-vs-rest) against the host fits on all
/// cores: each row says the device's cost and both training NLLs.
fn binary_map_rows(
    gpu: &Predictions,
    cpu: &Predictions,
    n: usize,
    k: usize,
) -> Result<(), Box<dyn Error>> {
    let isotonic = IsotonicRegressionConfig::new();
    let width = HistogramBinningConfig::new();
    let mass = HistogramBinningConfig::new().with_strategy(BinStrategy::Mass);
    let fits: Vec<(&str, Box<FitFn>)> = vec![
        ("isotonic one-vs-rest", Box::new(move |p| isotonic.fit(p).expect("isotonic").record)),
        ("histogram (width)", Box::new(move |p| width.fit(p).expect("histogram").record)),
        ("histogram (mass)", Box::new(move |p| mass.fit(p).expect("histogram").record)),
    ];
    for (name, fit) in fits {
        let ((rg, cost), rc) = (DeviceCost::measure(|| fit(gpu)), fit(cpu));
        let g = median_warm_ms(2, || fit(gpu));
        let c = median_warm_ms(2, || fit(cpu));
        println!(
            "| {n} x {k} | {name} ({:?}; {} passes, {} syncs, {} KB back; NLL {:.6} vs {:.6}) | {g:.2} ms | {c:.2} ms | {:.1}x |",
            rg.engine,
            cost.passes((n * k * 4) as u64),
            cost.syncs,
            cost.read_back_bytes / 1024,
            rg.final_nll,
            rc.final_nll,
            c / g
        );
    }
    Ok(())
}
