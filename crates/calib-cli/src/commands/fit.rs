//! `calib fit`: fit a calibrator on one split (default val) and save it as JSON.

use calib_train::{FitRecord, StopReason};
use indicatif::{ProgressBar, ProgressStyle};

use super::context::{Context, print};
use crate::cli::{FitArgs, FitParts, Format};
use crate::error::{CliError, Result};
use crate::fitting::fit_method;
use crate::io::{Dataset, write_file};
use crate::table::Table;

pub(super) fn run(args: &FitArgs, ctx: &Context) -> Result<()> {
    let FitParts { method, data, output, format, options } = args.method.parts()?;
    let mut data = Dataset::load(&data.spec(), "val")?;
    // The binary maps read probabilities as given; the scaling family needs log-probabilities.
    if !method.is_binary_map() {
        data = data.into_logits()?;
    }
    data.warnings.iter().for_each(|w| ctx.warn(w));
    let preds = data.take_predictions(&ctx.device)?;
    let bar = if ctx.quiet { ProgressBar::hidden() } else { ProgressBar::new_spinner() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{elapsed_precise}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(format!("fitting {method} on {}", data.origin));
    let saved = fit_method(options, &preds, &data.origin, &mut |p| {
        bar.set_message(format!(
            "iteration {}  loss {:.6}  |grad| {:.2e}",
            p.iteration, p.loss, p.grad_norm
        ));
        bar.tick();
    });
    bar.finish_and_clear();
    let saved = saved?;
    write_file(output, saved.to_json().as_bytes())?;
    let record =
        saved.fit.as_ref().ok_or_else(|| CliError::Usage("the fit left no record".into()))?;
    for w in &record.warnings {
        ctx.warn(w);
    }
    // Separable and unbounded fits explain themselves in their own warning; more iterations
    // would only walk further out.
    let explained = matches!(record.stop_reason, StopReason::Separable | StopReason::Unbounded);
    if !record.converged && !explained {
        ctx.warn(&format!(
            "the fit did not converge (stopped by {} after {} iterations, gradient {:.2e}); \
             the parameters were saved but may be far from the optimum: raise --max-iter",
            record.stop_reason, record.iterations, record.grad_norm
        ));
    }
    let text = match format {
        Format::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(record).map_err(|e| CliError::output("stdout", e))?
        ),
        Format::Csv => record_table(record).to_csv(),
        Format::Table => format!(
            "{method} fitted on {} -> {}\n{}",
            data.origin,
            output.display(),
            record_table(record).render()
        ),
    };
    print(&text)
}

/// The fit record as `field, value` rows.
fn record_table(r: &FitRecord) -> Table {
    let mut t = Table::new(["field", "value"]);
    t.push(["converged".into(), r.converged.to_string()]);
    t.push(["stop_reason".into(), r.stop_reason.to_string()]);
    t.push(["optimizer".into(), r.optimizer.to_string()]);
    t.push(["iterations".into(), r.iterations.to_string()]);
    t.push(["evaluations".into(), r.evaluations.to_string()]);
    if r.hessian_products > 0 {
        t.push(["hessian_products".into(), r.hessian_products.to_string()]);
    }
    t.push(["final_loss".into(), format!("{:.8}", r.final_loss)]);
    t.push(["final_nll".into(), format!("{:.8}", r.final_nll)]);
    t.push(["grad_norm".into(), format!("{:.3e}", r.grad_norm)]);
    t.push(["wall_time_s".into(), format!("{:.3}", r.wall_time_s)]);
    t.push(["n_samples".into(), r.n_samples.to_string()]);
    t.push(["n_classes".into(), r.n_classes.to_string()]);
    t.push(["backend".into(), format!("{} ({}, {})", r.backend, r.dtype, r.engine)]);
    if let Some(search) = &r.search {
        t.push([format!("{} at T*", search.metric), format!("{:.8}", search.value)]);
        t.push(["T*".into(), format!("{:.6}", search.temperature)]);
        t.push([format!("{} at NLL-optimal T", search.metric), format!("{:.8}", search.nll_value)]);
        t.push(["NLL-optimal T".into(), format!("{:.6}", search.nll_temperature)]);
    }
    for cv in &r.cross_validation {
        t.push([
            format!("cv lambda={:e} mu={:e}", cv.lambda, cv.mu),
            format!("{:.8}", cv.held_out_nll),
        ]);
    }
    t
}
