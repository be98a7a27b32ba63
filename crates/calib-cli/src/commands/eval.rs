//! `calib eval`: metrics of one split, optionally after a fitted calibrator.

use calib_core::bootstrap::{BootstrapConfig, IntervalKind};
use calib_core::{EvaluationConfig, EvaluationState};
use calib_train::AnyCalibrator;
use serde_json::json;

mod calibrated;
mod chunked;
mod resume;

use self::calibrated::{check_streamable, load_calibrated};
use super::context::{Context, load_calibrator, print};
use crate::cli::{BootstrapInterval, EvalArgs, Format};
use crate::error::plain;
use crate::error::{CliError, Result};
use crate::evaluation::evaluation_config;
use crate::io::write_state;
use crate::table::{metric_table, number};
use crate::top_label;

pub(super) fn run(args: &EvalArgs, ctx: &Context) -> Result<()> {
    if args.resume.is_some() {
        return resume::run(args, ctx);
    }
    let (metrics, edges) = (args.metrics.as_deref(), args.edges.clone());
    let config = evaluation_config(metrics, args.bins, edges, args.nll_eps, args.split_fits)?;
    let calibrator =
        args.calibrator.as_deref().map(|p| load_calibrator(p, &ctx.device)).transpose()?;
    let bootstrap = bootstrap_config(args)?;
    if args.save_state.is_some() {
        check_save_state(&config, ctx)?;
    }
    let top_label = calibrator.as_ref().is_some_and(AnyCalibrator::is_top_label);
    if args.chunk_rows.is_some() || args.save_state.is_some() {
        check_streamable(calibrator.as_ref())?;
    }
    let mut intervals = Vec::new();
    let chunked = !top_label && bootstrap.is_none() && chunked::wanted(args, &config)?;
    let (report, origin, split) = if chunked {
        let (report, origin, state) = chunked::run(args, &config, calibrator.as_ref(), ctx)?;
        if let Some(path) = &args.save_state {
            save_state(path, &state)?;
        }
        (report, origin, None)
    } else {
        calib_kernels::trace::begin("read");
        let (data, preds, top) = load_calibrated(args, calibrator.as_ref(), ctx)?;
        calib_kernels::trace::begin("evaluate");
        let (device, origin) = (&ctx.device, data.origin.as_str());
        let report = match &bootstrap {
            Some(b) => {
                let (report, found) =
                    top_label::bootstrap(&config, &preds, top.as_ref(), b, device, origin)?;
                intervals = found;
                report
            }
            None => top_label::evaluate(&config, &preds, top.as_ref(), device, origin)?,
        };
        calib_kernels::trace::end();
        if let Some(path) = &args.save_state {
            let streamed = config.metrics.iter().filter(|m| !m.needs_all_rows()).copied();
            let mut stream = config
                .clone()
                .with_metrics(streamed.collect())
                .streaming()
                .map_err(|e| CliError::Usage(plain(e)))?;
            stream.update(&preds).map_err(|e| CliError::core(&data.origin, e))?;
            save_state(path, stream.state())?;
        }
        (report, data.origin, data.split)
    };
    let text = match args.format {
        Format::Table => {
            let mut head = format!(
                "{}: N = {}, K = {}, backend {}",
                origin, report.n_samples, report.n_classes, ctx.backend
            );
            if let Some(path) = &args.calibrator {
                head.push_str(&format!(", calibrator {}", path.display()));
            }
            if let Some(b) = &bootstrap {
                let kind = match b.interval {
                    IntervalKind::Percentile => "percentile",
                    IntervalKind::Basic => "basic",
                };
                head.push_str(&format!(
                    "\nbootstrap: {} replicates, {}% {kind} intervals, seed {}",
                    b.replicates,
                    b.level * 100.0,
                    b.seed
                ));
            }
            format!("{head}\n{}", metric_table(&report, &intervals, number).render())
        }
        Format::Csv => metric_table(&report, &intervals, |v| v.to_string()).to_csv(),
        Format::Json => {
            let metrics: serde_json::Map<String, serde_json::Value> =
                report.named_values().into_iter().map(|(k, v)| (k, json!(v))).collect();
            let object = json!({
                "file": args.data.data.display().to_string(),
                "split": split,
                "n": report.n_samples,
                "k": report.n_classes,
                "backend": ctx.backend,
                "calibrator": args.calibrator.as_ref().map(|p| p.display().to_string()),
                "bins": args.bins,
                "edges": args.edges,
                "metrics": metrics,
            });
            let mut object = object;
            if let Some(b) = &bootstrap {
                let ends: serde_json::Map<String, serde_json::Value> =
                    intervals.iter().map(|i| (i.name.clone(), json!([i.lower, i.upper]))).collect();
                let errors: serde_json::Map<String, serde_json::Value> =
                    intervals.iter().map(|i| (i.name.clone(), json!(i.standard_error))).collect();
                object["intervals"] = json!(ends);
                object["standard_errors"] = json!(errors);
                object["bootstrap"] = json!({
                    "replicates": b.replicates,
                    "level": b.level,
                    "seed": b.seed,
                    "interval": b.interval,
                });
            }
            format!("{object}\n")
        }
    };
    print(&text)
}

/// Checks that `--save-state` has a metric to save, and warns about those it leaves out.
fn check_save_state(config: &EvaluationConfig, ctx: &Context) -> Result<()> {
    let dropped: Vec<&str> =
        config.metrics.iter().filter(|m| m.needs_all_rows()).map(|m| m.name()).collect();
    if dropped.len() == config.metrics.len() {
        return Err(CliError::Usage(format!(
            "--save-state: none of the metrics merges across shards ({} need every row at once); add \
             binned metrics, NLL, Brier or accuracy",
            dropped.join(", ")
        )));
    }
    if !dropped.is_empty() {
        ctx.warn(&format!(
            "--save-state: {} left out of the state (they sort or smooth every row of all \
             shards together; docs/scale.md)",
            dropped.join(", ")
        ));
    }
    Ok(())
}

/// Writes `state` (a first pass's) to `path`.
fn save_state(path: &std::path::Path, state: &EvaluationState) -> Result<()> {
    if state.n_samples() == 0 {
        return Err(CliError::Usage("--save-state: no rows were evaluated".into()));
    }
    write_state(path, state)
}

/// The bootstrap `args` ask for, checked; `None` without `--bootstrap`.
fn bootstrap_config(args: &EvalArgs) -> Result<Option<BootstrapConfig>> {
    let Some(replicates) = args.bootstrap else { return Ok(None) };
    if args.chunk_rows.is_some() {
        return Err(CliError::Usage(
            "--bootstrap needs all rows at once; it cannot be combined with --chunk-rows".into(),
        ));
    }
    if replicates < 2 {
        return Err(CliError::Usage("--bootstrap needs at least 2 replicates".into()));
    }
    let valid = args.level > 0.0 && args.level < 1.0;
    if !valid {
        return Err(CliError::Usage(format!("--level {} is outside (0, 1)", args.level)));
    }
    let interval = match args.interval {
        BootstrapInterval::Percentile => IntervalKind::Percentile,
        BootstrapInterval::Basic => IntervalKind::Basic,
    };
    Ok(Some(
        BootstrapConfig::new()
            .with_replicates(replicates)
            .with_level(args.level)
            .with_seed(args.seed)
            .with_interval(interval),
    ))
}
