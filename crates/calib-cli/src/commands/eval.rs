//! `calib eval`: metrics of one split, optionally after a fitted calibrator.

use calib_core::{EvaluationConfig, Report};
use serde_json::json;

use super::{Context, eval_chunked, load_calibrator, parse_metrics, plain, print};
use crate::cli::{EvalArgs, Format};
use crate::error::{CliError, Result};
use crate::io::Dataset;
use crate::table::{Table, number};

pub(super) fn run(args: &EvalArgs, ctx: &Context) -> Result<()> {
    let metrics = parse_metrics(args.metrics.as_deref())?;
    if let Some(edges) = &args.edges {
        calib_core::binning::Binning::Custom { edges: edges.clone() }
            .validate()
            .map_err(|e| CliError::Usage(plain(e)))?;
    }
    let config = EvaluationConfig::new()
        .with_metrics(metrics)
        .with_n_bins(args.bins)
        .with_n_ranges(args.bins)
        .with_edges(args.edges.clone())
        .with_nll_eps(args.nll_eps);
    let calibrator =
        args.calibrator.as_deref().map(|p| load_calibrator(p, &ctx.device)).transpose()?;
    let (report, origin, split) = if eval_chunked::wanted(args, &config)? {
        let (report, origin) = eval_chunked::run(args, &config, calibrator.as_ref(), ctx)?;
        (report, origin, None)
    } else {
        let mut data = Dataset::load(&args.data.spec(), "test")?;
        if calibrator.as_ref().is_some_and(|c| !c.method().is_binary_map()) {
            data = data.into_logits()?;
        }
        data.warnings.iter().for_each(|w| ctx.warn(w));
        let mut preds = data.take_predictions(&ctx.device)?;
        if let (Some(c), Some(path)) = (&calibrator, &args.calibrator) {
            preds = c.calibrate(&preds).map_err(|e| CliError::train(path.display(), e))?;
        }
        let report = config.evaluate(&preds).map_err(|e| CliError::core(&data.origin, e))?;
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
            format!("{head}\n{}", metric_table(&report, number).render())
        }
        Format::Csv => metric_table(&report, |v| v.to_string()).to_csv(),
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
            format!("{object}\n")
        }
    };
    print(&text)
}

/// `metric, value` rows of a report, values written by `show`.
fn metric_table(report: &Report, show: fn(f64) -> String) -> Table {
    let mut table = Table::new(["metric", "value"]);
    for (name, value) in report.named_values() {
        table.push([name, show(value)]);
    }
    table
}
