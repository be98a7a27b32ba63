//! `calib compare`: every method fitted on val, every metric on test, uncalibrated first.

use calib_core::EvaluationConfig;
use calib_train::{Method, Reduction};
use serde_json::json;

use super::context::{Context, print};
use crate::cli::{CompareArgs, DataArgs, Format, ReductionArg};
use crate::comparison::{Comparison, all_methods, default_methods};
use crate::error::{CliError, Result};
use crate::evaluation::parse_metrics;
use crate::fitting::parse_method;
use crate::io::{DataSpec, Dataset};

pub(super) fn run(args: &CompareArgs, ctx: &Context) -> Result<()> {
    let (mut fit_data, mut test_data) = load_splits(&args.data, &args.fit_split, ctx)?;
    let binary = test_data.n_columns == 1;
    let methods = parse_methods(args.methods.as_deref(), default_methods(binary), binary)?;
    let fit = fit_data.take_predictions(&ctx.device)?;
    let test = test_data.take_predictions(&ctx.device)?;
    let eval = EvaluationConfig::new()
        .with_metrics(parse_metrics(None)?)
        .with_n_bins(args.bins)
        .with_n_ranges(args.bins);
    let reduction = match args.reduction {
        ReductionArg::OneVsRest => Reduction::OneVsRest,
        ReductionArg::TopLabel => Reduction::TopLabel,
    };
    let comparison = Comparison::run(&fit, &test, &methods, &eval, reduction, &mut |m| {
        ctx.note(&format!("fitting {m} on {} ...", fit_data.origin))
    })
    .map_err(|e| match e {
        CliError::Core { source, .. } => CliError::core(&test_data.origin, source),
        other => other,
    })?;
    let shape = (test.n_samples(), test.n_classes());
    let text = match args.format {
        Format::Table => as_table(&comparison, &fit_data, &test_data, shape, ctx),
        Format::Csv => comparison.table().to_csv(),
        Format::Json => as_json(&comparison, args, &fit_data, &test_data, shape, ctx),
    };
    print(&text)
}

/// The fitting split and the measured split, with their warnings said.
pub(super) fn load_splits(
    data: &DataArgs,
    fit_split: &str,
    ctx: &Context,
) -> Result<(Dataset, Dataset)> {
    let spec = data.spec();
    let fit_spec = DataSpec { split: Some(fit_split.to_string()), ..spec.clone() };
    let fit_data = Dataset::load(&fit_spec, fit_split)?.into_logits()?;
    let test_data = Dataset::load(&spec, "test")?.into_logits()?;
    if fit_data.origin == test_data.origin {
        ctx.warn(&format!(
            "fitting and measuring on the same data ({}): the numbers are optimistic",
            test_data.origin
        ));
    }
    fit_data.warnings.iter().chain(&test_data.warnings).for_each(|w| ctx.warn(w));
    Ok((fit_data, test_data))
}

/// The comparison as a table under a line saying what was fitted and measured, then a line
/// per method that failed or did not converge.
fn as_table(
    comparison: &Comparison,
    fit_data: &Dataset,
    test_data: &Dataset,
    (n, k): (usize, usize),
    ctx: &Context,
) -> String {
    let mut text = format!(
        "fitted on {}, measured on {} (N = {n}, K = {k}), backend {}\n{}",
        fit_data.origin,
        test_data.origin,
        ctx.backend,
        comparison.table().render()
    );
    for note in comparison.notes() {
        text.push_str(&format!("{note}\n"));
    }
    for c in &comparison.columns {
        if let Some(e) = &c.error {
            text.push_str(&format!("{}: not fitted: {e}\n", c.name));
        }
        if let Some(r) = c.record.as_ref().filter(|r| !r.converged) {
            text.push_str(&format!(
                "{}: warning: the fit did not converge ({})\n",
                c.name, r.stop_reason
            ));
        }
    }
    text
}

/// The comparison as one JSON object: the data, then a column per method with its metrics,
/// fit record, error and fit time.
fn as_json(
    comparison: &Comparison,
    args: &CompareArgs,
    fit_data: &Dataset,
    test_data: &Dataset,
    (n, k): (usize, usize),
    ctx: &Context,
) -> String {
    let columns: Vec<serde_json::Value> = comparison
        .columns
        .iter()
        .map(|c| {
            let metrics: Option<serde_json::Map<String, serde_json::Value>> = c
                .report
                .as_ref()
                .map(|r| r.named_values().into_iter().map(|(k, v)| (k, json!(v))).collect());
            json!({
                "method": c.name,
                "metrics": metrics,
                "fit": c.record,
                "error": c.error,
                "fit_seconds": c.fit_seconds,
                "nll_clipped": c.nll_clipped,
                "changed_predictions": c.changed_predictions,
                "noise_ece": c.noise_ece,
                "fit_ece": c.fit_ece,
            })
        })
        .collect();
    let object = json!({
        "file": args.data.data.display().to_string(),
        "fit_split": fit_data.split,
        "split": test_data.split,
        "n": n,
        "k": k,
        "backend": ctx.backend,
        "nll_floor": crate::comparison::NLL_FLOOR,
        "columns": columns,
        "notes": comparison.notes(),
    });
    format!("{object}\n")
}

/// Parses `--methods` (`all`: every method that applies; `None`: `default`).
pub(super) fn parse_methods(
    list: Option<&[String]>,
    default: Vec<Method>,
    binary: bool,
) -> Result<Vec<Method>> {
    match list {
        Some(list) if list.iter().any(|m| m.trim() == "all") => Ok(all_methods(binary)),
        Some(list) => {
            list.iter().filter(|m| !m.trim().is_empty()).map(|m| parse_method(m)).collect()
        }
        None => Ok(default),
    }
}
