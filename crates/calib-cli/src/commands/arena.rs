//! `calib arena`: every method on every experiment, the methods' win rates and improvements.

use std::path::{Path, PathBuf};

use calib_core::{EvaluationConfig, Metric};
use calib_train::{Method, Reduction};
use serde_json::{Map, Value, json};

use super::compare::{load_splits, parse_methods};
use super::context::{Context, print};
use calib_kernels::in_order;

use crate::arena::{Arena, Experiment, Standing};
use crate::cli::{ArenaArgs, DataArgs, Format, ReductionArg};
use crate::comparison::{NLL_FLOOR, all_methods};
use crate::error::{CliError, Result, plain};
use crate::plot::render_win_rates;
use crate::table::{Table, number};

/// File extensions read as experiments from a folder.
const DUMPS: [&str; 6] = ["npz", "safetensors", "parquet", "arrow", "feather", "ipc"];

pub(super) fn run(args: &ArenaArgs, ctx: &Context) -> Result<()> {
    let files = experiment_files(&args.paths)?;
    let metrics: Vec<Metric> = args
        .metrics
        .iter()
        .filter(|m| !m.trim().is_empty())
        .map(|m| Metric::from_name(m).map_err(|e| CliError::Usage(plain(e))))
        .collect::<Result<_>>()?;
    if metrics.is_empty() {
        return Err(CliError::Usage("--metrics: name at least one metric".into()));
    }
    if !(args.level > 0.0 && args.level < 1.0) {
        return Err(CliError::Usage(format!("--level {} outside (0, 1)", args.level)));
    }
    // Parsed once up front so a misspelt method is a usage error, not a row per experiment.
    parse_methods(args.methods.as_deref(), Vec::new(), false)?;
    let eval = EvaluationConfig::new()
        .with_metrics(metrics.clone())
        .with_n_bins(args.bins)
        .with_n_ranges(args.bins)
        .with_nll_eps(Some(NLL_FLOOR));
    let reduction = match args.reduction {
        ReductionArg::OneVsRest => Reduction::OneVsRest,
        ReductionArg::TopLabel => Reduction::TopLabel,
    };
    ctx.note(&format!("arena: {} experiments ...", files.len()));
    let experiments = in_order(&files, |path| {
        let name = path.display().to_string();
        experiment(path, args, &eval, reduction, ctx)
            .unwrap_or_else(|e| Experiment::failed(&name, e.to_string()))
    });
    let arena = Arena { metrics, experiments };
    let mut standings = arena.standings(args.bootstrap, args.level, args.seed);
    standings.sort_by(|a, b| b.win_rate.total_cmp(&a.win_rate));
    if let Some(path) = &args.plot {
        render_win_rates(&standings, arena.metrics[0].name(), path)?;
        ctx.note(&format!("win rates -> {}", path.display()));
    }
    print(&match args.format {
        Format::Table => as_table(&arena, &standings, args),
        Format::Json => format!("{}\n", as_json(&arena, &standings, args)),
        Format::Csv => as_csv(&arena, &standings),
    })
}

/// The experiment files: each path, or the dumps in a folder (sorted).
fn experiment_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| CliError::input(path.display(), e.to_string()))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| {
                    let ext = p.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
                    p.is_file() && ext.is_some_and(|e| DUMPS.contains(&e.as_str()))
                })
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(CliError::input(path.display(), "no val/test dumps in this folder"));
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

/// One experiment: its splits read, its methods fitted and measured.
fn experiment(
    path: &Path,
    args: &ArenaArgs,
    eval: &EvaluationConfig,
    reduction: Reduction,
    ctx: &Context,
) -> Result<Experiment> {
    let data = DataArgs {
        data: path.to_path_buf(),
        split: None,
        logits_key: None,
        labels_key: None,
        labels: None,
        input: args.input,
        weights: args.weights.clone(),
        weights_key: args.weights_key.clone(),
    };
    let (mut fit_data, mut test_data) = load_splits(&data, &args.fit_split, ctx)?;
    let binary = test_data.n_columns == 1;
    let methods: Vec<Method> = parse_methods(args.methods.as_deref(), all_methods(binary), binary)?
        .into_iter()
        .filter(|m| all_methods(binary).contains(m))
        .collect();
    let fit = fit_data.take_predictions(&ctx.device)?;
    let test = test_data.take_predictions(&ctx.device)?;
    Ok(Experiment::run(&path.display().to_string(), &fit, &test, &methods, eval, reduction))
}

/// The first metric per method and experiment, then the standings, then the failures.
fn as_table(arena: &Arena, standings: &[Standing], args: &ArenaArgs) -> String {
    let first = arena.metrics[0].name();
    let mut header = vec![format!("{first} on test")];
    header.extend(arena.experiments.iter().map(|e| short_name(&e.name)));
    let mut table = Table::new(header);
    for method in arena.methods() {
        let mut row = vec![method.clone()];
        for e in &arena.experiments {
            row.push(match e.entry(&method) {
                Some(x) => x.values.as_ref().map_or("failed".into(), |v| number(v[0])),
                None => "-".into(),
            });
        }
        table.push(row);
    }
    let mut text = format!(
        "{} experiments; methods ranked by {first} (win rate: the share of other methods strictly \
         worse, mean over experiments; {:.0}% bootstrap interval over experiments, {} resamples)\n{}",
        arena.experiments.len(),
        100.0 * args.level,
        args.bootstrap,
        table.render()
    );
    let mut header: Vec<String> =
        ["method", "win_rate", "lo", "hi"].iter().map(|s| s.to_string()).collect();
    header.extend(arena.metrics.iter().map(|m| format!("gain_{}", m.name())));
    header.push("failed".into());
    let mut summary = Table::new(header);
    for s in standings {
        let mut row =
            vec![s.method.clone(), number(s.win_rate), number(s.interval.0), number(s.interval.1)];
        row.extend(s.improvement.iter().map(|&v| number(v)));
        row.push(format!("{}/{}", s.failures, s.runs));
        summary.push(row);
    }
    text.push_str(&format!("\n{}", summary.render()));
    text.push_str("(gain: the mean improvement over the uncalibrated model; accuracy: higher)\n");
    for e in &arena.experiments {
        if let Some(error) = &e.error {
            text.push_str(&format!("{}: not run: {error}\n", e.name));
        }
        for x in e.entries.iter().filter(|x| x.error.is_some()) {
            text.push_str(&format!(
                "{}: {}: {}\n",
                e.name,
                x.method,
                x.error.as_deref().unwrap_or("")
            ));
        }
    }
    text
}

/// The file name without its folder.
fn short_name(name: &str) -> String {
    Path::new(name).file_name().map_or(name.into(), |f| f.to_string_lossy().into_owned())
}

/// `{"experiments": [...], "methods": {name: {win_rate, win_rate_interval, mean_improvement}}}`.
fn as_json(arena: &Arena, standings: &[Standing], args: &ArenaArgs) -> Value {
    let names: Vec<&str> = arena.metrics.iter().map(|m| m.name()).collect();
    let values = |v: &[f64]| -> Map<String, Value> {
        names.iter().zip(v).map(|(n, &v)| ((*n).to_string(), finite(v))).collect()
    };
    let experiments: Vec<Value> = arena
        .experiments
        .iter()
        .map(|e| {
            let methods: Map<String, Value> = e
                .entries
                .iter()
                .map(|x| {
                    let entry = json!({
                        "metrics": x.values.as_ref().map(|v| Value::Object(values(v))),
                        "error": x.error,
                        "fit_seconds": x.fit_seconds,
                    });
                    (x.method.clone(), entry)
                })
                .collect();
            json!({
                "name": e.name,
                "n_samples": e.shape.map(|s| s.0),
                "n_classes": e.shape.map(|s| s.1),
                "error": e.error,
                "methods": methods,
            })
        })
        .collect();
    let methods: Map<String, Value> = standings
        .iter()
        .map(|s| {
            let entry = json!({
                "win_rate": finite(s.win_rate),
                "win_rate_interval": [finite(s.interval.0), finite(s.interval.1)],
                "mean_improvement": values(&s.improvement),
                "experiments": s.runs,
                "failures": s.failures,
            });
            (s.method.clone(), entry)
        })
        .collect();
    json!({
        "metric": names[0],
        "metrics": names,
        "bootstrap": args.bootstrap,
        "level": args.level,
        "experiments": experiments,
        "methods": methods,
    })
}

/// A JSON number, or null where it is not finite.
fn finite(v: f64) -> Value {
    if v.is_finite() { json!(v) } else { Value::Null }
}

/// Long form: `experiment,method,metric,value,error`, then the standings with experiment `all`.
fn as_csv(arena: &Arena, standings: &[Standing]) -> String {
    let mut table = Table::new(["experiment", "method", "metric", "value", "error"]);
    for e in &arena.experiments {
        if let Some(error) = &e.error {
            table.push([
                e.name.clone(),
                String::new(),
                String::new(),
                String::new(),
                error.clone(),
            ]);
        }
        for x in &e.entries {
            for (j, m) in arena.metrics.iter().enumerate() {
                let value = x.values.as_ref().map_or(String::new(), |v| format!("{}", v[j]));
                let error = x.error.clone().unwrap_or_default();
                table.push([e.name.clone(), x.method.clone(), m.name().to_string(), value, error]);
            }
        }
    }
    for s in standings {
        let mut rows = vec![
            ("win_rate".to_string(), s.win_rate),
            ("win_rate_lo".to_string(), s.interval.0),
            ("win_rate_hi".to_string(), s.interval.1),
        ];
        rows.extend(
            arena
                .metrics
                .iter()
                .zip(&s.improvement)
                .map(|(m, &v)| (format!("gain_{}", m.name()), v)),
        );
        for (name, v) in rows {
            table.push(["all".into(), s.method.clone(), name, format!("{v}"), String::new()]);
        }
    }
    table.to_csv()
}
