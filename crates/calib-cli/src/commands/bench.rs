//! `calib bench`: the metric set (ECE, MCE, SCE, ACE, TACE, NLL, Brier) and the temperature fit
//! timed per backend on synthetic over-confident logits; medians of `--repeats` runs, with
//! ratios to the first backend (these machines are noisy: compare within one run).

use std::time::Instant;

use burn::tensor::Device;
use calib_core::backend::{compiled_backends, open_device};
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::{EvaluationConfig, Metric};
use calib_train::{Fit, TemperatureScalingConfig};
use serde_json::json;

use super::context::print;
use crate::cli::{BenchArgs, Format};
use crate::error::plain;
use crate::error::{CliError, Result};
use crate::table::Table;

/// The metric set the benchmarks time.
const METRICS: [Metric; 7] =
    [Metric::Ece, Metric::Mce, Metric::Sce, Metric::Ace, Metric::Tace, Metric::Nll, Metric::Brier];

/// One timed cell.
struct Cell {
    backend: String,
    n: usize,
    k: usize,
    metrics_s: f64,
    temperature_s: f64,
}

pub(super) fn run(args: &BenchArgs, quiet: bool) -> Result<()> {
    if args.repeats == 0 {
        return Err(CliError::Usage("--repeats must be at least 1".into()));
    }
    let sizes = args.sizes.iter().map(|s| parse_size(s)).collect::<Result<Vec<_>>>()?;
    let devices: Vec<(String, Device)> = match &args.backends {
        Some(names) => names
            .iter()
            .map(|n| open_device(n.trim()).map(|d| (n.trim().to_string(), d)))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| CliError::Usage(plain(e)))?,
        None => compiled_backends()
            .into_iter()
            .filter_map(|n| open_device(n).ok().map(|d| (n.to_string(), d)))
            .collect(),
    };
    let mut cells = Vec::new();
    for &(n, k) in &sizes {
        let (logits, labels) = calib_core::synthetic::overconfident_logits(n, k, 0.9, 2.0, 7);
        for (name, device) in &devices {
            if !quiet {
                eprintln!("timing {name} at {n} x {k} ...");
            }
            let preds = Predictions::from_host(
                &logits,
                k,
                &labels,
                InputConfig::new(ScoreKind::Logits),
                device,
            )
            .map_err(|e| CliError::core("bench", e))?;
            let eval = EvaluationConfig::new().with_metrics(METRICS.to_vec());
            let metrics_s = median_time(args.repeats, || {
                eval.evaluate(&preds).map(|_| ()).map_err(|e| CliError::core(name, e))
            })?;
            let fit = TemperatureScalingConfig::new();
            let temperature_s = median_time(args.repeats, || {
                fit.fit(&preds).map(|_| ()).map_err(|e| CliError::train(name, e))
            })?;
            cells.push(Cell { backend: name.clone(), n, k, metrics_s, temperature_s });
        }
    }
    let text = match args.format {
        Format::Json => {
            let rows: Vec<_> = cells
                .iter()
                .map(|c| {
                    json!({"backend": c.backend, "n": c.n, "k": c.k,
                    "metrics_s": c.metrics_s, "temperature_fit_s": c.temperature_s})
                })
                .collect();
            format!("{}\n", json!({ "repeats": args.repeats, "results": rows }))
        }
        Format::Csv => table(&cells).to_csv(),
        Format::Table => format!(
            "median of {} runs; metric set = ECE, MCE, SCE, ACE, TACE, NLL, Brier; ratios against \
             the first backend\n{}",
            args.repeats,
            table(&cells).render()
        ),
    };
    print(&text)
}

fn table(cells: &[Cell]) -> Table {
    let mut t = Table::new(["size", "backend", "metrics_ms", "x", "temperature_fit_ms", "x"]);
    for c in cells {
        let first = cells.iter().find(|f| f.n == c.n && f.k == c.k).unwrap_or(c);
        t.push([
            format!("{}x{}", c.n, c.k),
            c.backend.clone(),
            format!("{:.1}", c.metrics_s * 1e3),
            format!("{:.2}", c.metrics_s / first.metrics_s),
            format!("{:.1}", c.temperature_s * 1e3),
            format!("{:.2}", c.temperature_s / first.temperature_s),
        ]);
    }
    t
}

/// Median wall time of `repeats` runs after one warm-up run.
fn median_time(repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// `NxK` -> `(N, K)`.
fn parse_size(s: &str) -> Result<(usize, usize)> {
    let bad =
        || CliError::Usage(format!("size `{s}` is not NxK with N >= 1 and K >= 2 (e.g. 10000x10)"));
    let (n, k) = s
        .trim()
        .to_ascii_lowercase()
        .split_once('x')
        .map(|(a, b)| (a.trim().replace('_', ""), b.trim().to_string()))
        .ok_or_else(bad)?;
    let (n, k): (usize, usize) = (n.parse().map_err(|_| bad())?, k.parse().map_err(|_| bad())?);
    if n == 0 || k < 2 {
        return Err(bad());
    }
    Ok((n, k))
}
