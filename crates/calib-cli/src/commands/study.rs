//! `calib study`: Nixon et al.'s metric study on one file (fit on val, rank on test).

use calib_core::metrics::GceVariant;
use serde_json::{Map, Value, json};

use super::compare::{load_splits, parse_methods};
use super::context::{Context, print};
use crate::cli::{Format, StudyArgs};
use crate::comparison::all_methods;
use crate::error::Result;
use crate::plot::render_heatmap;
use crate::study::Study;
use crate::table::{Table, number};

pub(super) fn run(args: &StudyArgs, ctx: &Context) -> Result<()> {
    let (mut fit_data, mut test_data) = load_splits(&args.data, &args.fit_split, ctx)?;
    let binary = test_data.n_columns == 1;
    let methods = parse_methods(args.methods.as_deref(), all_methods(binary), binary)?;
    let fit = fit_data.take_predictions(&ctx.device)?;
    let test = test_data.take_predictions(&ctx.device)?;
    let study = Study::run(&fit, &test, &methods, &args.bins, &mut |m| {
        ctx.note(&format!("fitting {m} on {} ...", fit_data.origin))
    })?;
    for (method, error) in &study.failed {
        ctx.warn(&format!("{method} left out of the study: {error}"));
    }
    if let Some(path) = &args.plot {
        render_heatmap(&study, path)?;
        ctx.note(&format!("heatmap -> {}", path.display()));
    }
    let head = format!(
        "fitted on {}, measured on {} (N = {}, K = {}), backend {}",
        fit_data.origin,
        test_data.origin,
        test.n_samples(),
        test.n_classes(),
        ctx.backend
    );
    print(&match args.format {
        Format::Table => as_table(&study, &head),
        Format::Csv => as_csv(&study),
        Format::Json => format!("{}\n", as_json(&study)),
    })
}

/// Per bin count, the ranking under each variant (Table 5), then the agreement per property.
fn as_table(study: &Study, head: &str) -> String {
    let mut text = format!("{head}\n");
    for (b, bins) in study.bins.iter().enumerate() {
        text.push_str(&format!("\n{:<48}ranking (best first)\n", format!("bins = {bins}")));
        for v in GceVariant::all() {
            let ranking: Vec<&str> =
                study.ranking(b, v).iter().map(|&m| study.methods[m].as_str()).collect();
            let preset = v.preset().map(|m| format!(" ({m})")).unwrap_or_default();
            let name = format!("{:>2} {}{preset}", v.number(), v.name());
            text.push_str(&format!("{name:<48}{}\n", ranking.join(" < ")));
        }
    }
    let mut header = vec!["mean Spearman rho when one property changes".to_string()];
    header.extend(study.bins.iter().map(|b| format!("bins {b}")));
    header.push("mean".into());
    let mut table = Table::new(header);
    for a in study.agreement() {
        let mut row = vec![a.property.clone()];
        for bins in &study.bins {
            let at = a.per_bins.iter().find(|(b, _)| b == bins);
            row.push(at.map_or("-".into(), |&(_, r)| format!("{r:.3}")));
        }
        row.push(format!("{:.3}", a.mean));
        table.push(row);
    }
    text.push_str(&format!("\n{}", table.render()));
    text.push_str("(bin_count: each bin count's ranking against the first bin count's)\n");
    text
}

/// One row per method, bin count and variant.
fn as_csv(study: &Study) -> String {
    let mut table = Table::new(["method", "bins", "variant", "name", "value"]);
    for (m, method) in study.methods.iter().enumerate() {
        for (b, bins) in study.bins.iter().enumerate() {
            for v in GceVariant::all() {
                let value = number(study.values[m][b][v.number()]);
                table.push([
                    method.clone(),
                    bins.to_string(),
                    v.number().to_string(),
                    v.name(),
                    value,
                ]);
            }
        }
    }
    table.to_csv()
}

/// `variants`, `methods`, `bins`, `values`, `rankings`, `rank_correlation`, `failed`.
fn as_json(study: &Study) -> Value {
    let names: Vec<String> = GceVariant::all().map(|v| v.name()).collect();
    let presets: Map<String, Value> = GceVariant::all()
        .filter_map(|v| Some((v.number().to_string(), json!(v.preset()?.name()))))
        .collect();
    let mut values = Map::new();
    for (m, method) in study.methods.iter().enumerate() {
        let per_bins: Map<String, Value> = study
            .bins
            .iter()
            .zip(&study.values[m])
            .map(|(b, v)| (b.to_string(), json!(v)))
            .collect();
        values.insert(method.clone(), Value::Object(per_bins));
    }
    let mut rankings = Map::new();
    for (b, bins) in study.bins.iter().enumerate() {
        let per_variant: Map<String, Value> = GceVariant::all()
            .map(|v| {
                let ranked: Vec<&str> =
                    study.ranking(b, v).iter().map(|&m| study.methods[m].as_str()).collect();
                (v.name(), json!(ranked))
            })
            .collect();
        rankings.insert(bins.to_string(), Value::Object(per_variant));
    }
    let correlation: Map<String, Value> = study
        .agreement()
        .into_iter()
        .map(|a| {
            let per: Map<String, Value> =
                a.per_bins.iter().map(|(b, r)| (b.to_string(), json!(r))).collect();
            (a.property, json!({ "mean": a.mean, "per_bins": per }))
        })
        .collect();
    let failed: Map<String, Value> =
        study.failed.iter().map(|(m, e)| (m.clone(), json!(e))).collect();
    json!({
        "variants": names,
        "presets": presets,
        "methods": study.methods,
        "bins": study.bins,
        "values": values,
        "rankings": rankings,
        "rank_correlation": correlation,
        "failed": failed,
    })
}
