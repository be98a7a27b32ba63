//! `calib merge`: the metrics of several shards' rows from their saved evaluation states.
//! With adaptive ranges, a merge of every shard's state also ends their pass: it reports what
//! is known and saves the state the next pass over the shards resumes from.

use calib_core::{EvaluationState, Report, StreamingEvaluation};
use serde_json::json;

use super::context::{Context, print};
use crate::cli::{Format, MergeArgs};
use crate::error::plain;
use crate::error::{CliError, Result};
use crate::io::{read_state, write_state};
use crate::table::metric_table;
use crate::table::number;

pub(super) fn run(args: &MergeArgs, ctx: &Context) -> Result<()> {
    let origin = format!("{} states", args.states.len());
    let merged = merge_all(args)?;
    if args.partial {
        return partial(args, &merged, &origin);
    }
    let merged = end_pass(merged, &origin)?;
    if let Some(out) = &args.save_state {
        write_state(out, &merged)?;
    }
    let pending = pending(&merged);
    let report = match pending.is_empty() {
        true => merged.report(),
        false => {
            next_pass_warning(args, &merged, &pending, ctx);
            merged.one_pass().ok_or(calib_core::CalibError::Empty).and_then(|s| s.report())
        }
    };
    let report = report.map_err(|e| CliError::core(&origin, e))?;
    print(&render(args, &merged, &report, &pending, &origin, ctx))
}

/// Every state of `args`, merged in order.
fn merge_all(args: &MergeArgs) -> Result<EvaluationState> {
    let mut merged: Option<EvaluationState> = None;
    for path in &args.states {
        let state = read_state(path)?;
        merged = Some(match merged {
            None => state,
            Some(m) => m.merge(&state).map_err(|e| CliError::input(path.display(), plain(e)))?,
        });
    }
    merged.ok_or_else(|| CliError::Usage("no state to merge".into()))
}

/// `--partial`: writes the merged state, pass unended, and says what it holds.
fn partial(args: &MergeArgs, merged: &EvaluationState, origin: &str) -> Result<()> {
    let Some(out) = &args.save_state else {
        return Err(CliError::Usage("--partial needs --save-state".into()));
    };
    write_state(out, merged)?;
    print(&format!(
        "{origin} of pass {} merged into {} ({} rows of the pass)\n",
        merged.pass(),
        out.display(),
        merged.rows_in_pass()
    ))
}

/// Ends the pass of the adaptive ranges, when they have one running: the merged state must
/// then hold every shard (and, after the first pass, the state the shards resumed from).
fn end_pass(merged: EvaluationState, origin: &str) -> Result<EvaluationState> {
    if !merged.needs_pass() {
        return Ok(merged);
    }
    if merged.n_samples() == 0 {
        return Err(CliError::input(
            origin,
            format!(
                "shards' states of pass {} without the merged state they resumed from; add it \
                 (`calib merge M OUT1 OUT2 ...`)",
                merged.pass()
            ),
        ));
    }
    let mut stream =
        StreamingEvaluation::from_state(merged).map_err(|e| CliError::input(origin, plain(e)))?;
    stream.end_pass().map_err(|e| CliError::input(origin, plain(e)))?;
    Ok(stream.state().clone())
}

/// The metrics of `state` that still need passes (adaptive ranges).
fn pending(state: &EvaluationState) -> Vec<&'static str> {
    if !state.needs_pass() {
        return vec![];
    }
    let config = state.config();
    config.metrics.iter().filter(|m| !config.is_one_pass(**m)).map(|m| m.name()).collect()
}

/// Says which pass comes next over every shard, and how to run it.
fn next_pass_warning(args: &MergeArgs, merged: &EvaluationState, pending: &[&str], ctx: &Context) {
    let n = merged.shards().len().max(1);
    let pass = merged.pass();
    let head = format!(
        "{} need pass {pass} over every shard; the metrics printed leave them out",
        pending.join(", ")
    );
    let Some(out) = &args.save_state else {
        ctx.warn(&format!(
            "{head}. Give --save-state FILE to save the state that pass resumes from"
        ));
        return;
    };
    let order = match pass {
        2 => {
            let names: Vec<String> = args.states.iter().map(|p| p.display().to_string()).collect();
            format!(" (shard I is the I-th state merged here: {})", names.join(", "))
        }
        _ => String::new(),
    };
    let out = out.display();
    if n == 1 {
        ctx.warn(&format!(
            "{head}. Run `calib eval DATA --resume {out} --save-state OUT`, then `calib merge \
             {out} OUT`"
        ));
        return;
    }
    ctx.warn(&format!(
        "{head}. For each shard I = 1..{n}{order}, run `calib eval SHARD_I --resume {out} \
         --shard I --save-state OUT_I`, then `calib merge {out} OUT_1 ... OUT_{n}`"
    ));
}

/// The merged metrics as `--format` says (JSON: `calib eval`'s shape, plus the metrics still
/// pending and the next pass when adaptive ranges need one).
fn render(
    args: &MergeArgs,
    merged: &EvaluationState,
    report: &Report,
    pending: &[&str],
    origin: &str,
    ctx: &Context,
) -> String {
    match args.format {
        Format::Table => format!(
            "{origin}: N = {}, K = {}, backend {}\n{}",
            report.n_samples,
            report.n_classes,
            ctx.backend,
            metric_table(report, &[], number).render()
        ),
        Format::Csv => metric_table(report, &[], |v| v.to_string()).to_csv(),
        Format::Json => {
            let metrics: serde_json::Map<String, serde_json::Value> =
                report.named_values().into_iter().map(|(k, v)| (k, json!(v))).collect();
            let files: Vec<String> = args.states.iter().map(|p| p.display().to_string()).collect();
            let config = merged.config();
            let mut object = json!({
                "states": files,
                "n": report.n_samples,
                "k": report.n_classes,
                "bins": config.n_bins,
                "edges": config.edges,
                "metrics": metrics,
            });
            if !pending.is_empty() {
                object["pending"] = json!(pending);
                object["next_pass"] = json!(merged.pass());
            }
            format!("{object}\n")
        }
    }
}
