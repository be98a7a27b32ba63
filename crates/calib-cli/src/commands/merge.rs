//! `calib merge`: the metrics of several shards' rows from their saved evaluation states.

use serde_json::json;

use super::{Context, eval::metric_table, print};
use crate::cli::{Format, MergeArgs};
use crate::error::{CliError, Result};
use crate::io::{read_state, write_state};
use crate::table::number;

pub(super) fn run(args: &MergeArgs, ctx: &Context) -> Result<()> {
    let mut merged = None;
    for path in &args.states {
        let state = read_state(path)?;
        merged = Some(match merged {
            None => state,
            Some(m) => calib_core::EvaluationState::merge(&m, &state)
                .map_err(|e| CliError::input(path.display(), super::plain(e)))?,
        });
    }
    let merged = merged.ok_or_else(|| CliError::Usage("no state to merge".into()))?;
    if let Some(out) = &args.save_state {
        write_state(out, &merged)?;
    }
    let origin = format!("{} states", args.states.len());
    let report = merged.report().map_err(|e| CliError::core(&origin, e))?;
    let config = merged.config();
    let text = match args.format {
        Format::Table => format!(
            "{origin}: N = {}, K = {}, backend {}\n{}",
            report.n_samples,
            report.n_classes,
            ctx.backend,
            metric_table(&report, &[], number).render()
        ),
        Format::Csv => metric_table(&report, &[], |v| v.to_string()).to_csv(),
        Format::Json => {
            let metrics: serde_json::Map<String, serde_json::Value> =
                report.named_values().into_iter().map(|(k, v)| (k, json!(v))).collect();
            let files: Vec<String> = args.states.iter().map(|p| p.display().to_string()).collect();
            let object = json!({
                "states": files,
                "n": report.n_samples,
                "k": report.n_classes,
                "bins": config.n_bins,
                "edges": config.edges,
                "metrics": metrics,
            });
            format!("{object}\n")
        }
    };
    print(&text)
}
