//! [`Comparison`]: fit calibrators on one split, measure every metric on another, next to the
//! uncalibrated scores: the answer to "which calibrator should I use".

use calib_core::input::Predictions;
use calib_core::{EvaluationConfig, Metric, Report};
use calib_train::{
    AnyCalibrator, FitRecord, Method, Reduction, SavedCalibrator, TopLabelPrediction,
};

use crate::cli::{FitInput, default_options};
use crate::diagnosis;
use crate::error::{CliError, Result};
use crate::table::{Table, number};
use crate::top_label;

/// The floor of `p[i, y]` in the clipped NLL row: probmetrics' and CalArena's 1e-30
/// (scikit-learn's `log_loss` clips at machine epsilon instead).
pub const NLL_FLOOR: f64 = 1e-30;

/// One column of a comparison: the uncalibrated scores or one method.
#[derive(Debug, Clone)]
pub struct Column {
    /// `uncalibrated` or the method's name.
    pub name: String,
    /// The metrics on the evaluation split (`None` when the method failed).
    pub report: Option<Report>,
    /// The fit record (methods only).
    pub record: Option<FitRecord>,
    /// Why the method could not be fitted or applied.
    pub error: Option<String>,
    /// The fitted calibrator (methods only).
    pub saved: Option<SavedCalibrator>,
    /// Wall time of the whole fit in seconds, any cross-validation included (methods only).
    pub fit_seconds: Option<f64>,
    /// The NLL with `p[i, y]` floored at [`NLL_FLOOR`] (finite where the exact NLL is not).
    pub nll_clipped: Option<f64>,
    /// The fraction of rows whose prediction differs from the uncalibrated argmax (K-class
    /// input; a top-label calibrator's prediction is its `pred`).
    pub changed_predictions: Option<f64>,
    /// The ECE its own held-out confidences show when perfectly calibrated (sampling noise:
    /// [`crate::diagnosis::noise_ece`]).
    pub noise_ece: Option<f64>,
    /// Its ECE on the split it was fitted on (methods only).
    pub fit_ece: Option<f64>,
}

/// A value a column may hold beside its report.
type ColumnValue = fn(&Column) -> Option<f64>;

/// Metrics of the uncalibrated scores and of each method.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The uncalibrated column first, then one per method in the order asked.
    pub columns: Vec<Column>,
}

impl Comparison {
    /// Fits each of `methods` on `fit` and evaluates it on `test` with `eval`. A method that
    /// cannot be fitted (unsuitable input, underdetermined, ...) gets a column with its error
    /// instead of failing the whole comparison. `on_method` hears each method as it starts.
    ///
    /// # Errors
    /// [`CliError`] when the uncalibrated scores cannot be evaluated (the data is bad).
    pub fn run(
        fit: &Predictions,
        test: &Predictions,
        methods: &[Method],
        eval: &EvaluationConfig,
        reduction: Reduction,
        on_method: &mut dyn FnMut(Method),
    ) -> Result<Self> {
        let uncalibrated = eval.evaluate(test).map_err(|e| CliError::core("evaluation", e))?;
        let clipped = clipped_nll(test).map_err(|e| CliError::core("evaluation", e))?;
        let (baseline, _) = diagnosis::predictions_and_confidences(test, None)?;
        let mut columns = vec![Column {
            name: "uncalibrated".into(),
            report: Some(uncalibrated),
            record: None,
            error: None,
            fit_seconds: None,
            saved: None,
            nll_clipped: clipped,
            changed_predictions: baseline.as_ref().map(|_| 0.0),
            noise_ece: None,
            fit_ece: None,
        }];
        for &method in methods {
            on_method(method);
            let name = method.name();
            let outcome = fit_and_apply(fit, test, method, reduction).and_then(|f| {
                let top = f.top_label.as_ref();
                let report = top_label::evaluate(eval, &f.calibrated, top, test.device(), name)?;
                let clipped = clipped_nll(&f.calibrated).map_err(|e| CliError::core(name, e))?;
                let (after, confidences) =
                    diagnosis::predictions_and_confidences(&f.calibrated, top)?;
                let changed = match (&baseline, after) {
                    (Some(before), Some(after)) => Some(changed_fraction(before, &after)),
                    _ => None,
                };
                let noise = diagnosis::noise_ece(&confidences, eval.n_bins, test.device())?;
                let (on_fit, fit_top) = f
                    .calibrator
                    .calibrate_with_top_label(fit)
                    .map_err(|e| CliError::train(name, e))?;
                let ece_only = EvaluationConfig::new()
                    .with_metrics(vec![Metric::Ece])
                    .with_n_bins(eval.n_bins);
                let fit_ece =
                    top_label::evaluate(&ece_only, &on_fit, fit_top.as_ref(), fit.device(), name)?
                        .get(Metric::Ece);
                Ok((report, f.saved, f.seconds, clipped, changed, noise, fit_ece))
            });
            columns.push(match outcome {
                Ok((report, saved, seconds, nll_clipped, changed_predictions, noise, fit_ece)) => {
                    Column {
                        name: name.into(),
                        report: Some(report),
                        record: saved.fit.clone(),
                        error: None,
                        fit_seconds: Some(seconds),
                        saved: Some(saved),
                        nll_clipped,
                        changed_predictions,
                        noise_ece: Some(noise),
                        fit_ece,
                    }
                }
                Err(e) => Column {
                    name: name.into(),
                    report: None,
                    record: None,
                    error: Some(e.to_string()),
                    fit_seconds: None,
                    saved: None,
                    nll_clipped: None,
                    changed_predictions: None,
                    noise_ece: None,
                    fit_ece: None,
                },
            });
        }
        Ok(Self { columns })
    }

    /// Metrics as rows, the uncalibrated scores and each method as columns (`-` where a method
    /// failed), then the fit time (cross-validation included).
    pub fn table(&self) -> Table {
        let mut header = vec!["metric".to_string()];
        header.extend(self.columns.iter().map(|c| c.name.clone()));
        let mut table = Table::new(header);
        let names: Vec<String> = self.columns[0]
            .report
            .as_ref()
            .map(|r| r.named_values().into_iter().map(|(n, _)| n).collect())
            .unwrap_or_default();
        for (i, name) in names.iter().enumerate() {
            let mut row = vec![name.clone()];
            for c in &self.columns {
                row.push(match &c.report {
                    Some(r) => number(r.named_values()[i].1),
                    None => "-".into(),
                });
            }
            table.push(row);
        }
        let extra: [(&str, ColumnValue); 2] =
            [("nll_clipped", |c| c.nll_clipped), ("changed_pred", |c| c.changed_predictions)];
        for (name, value) in extra {
            if self.columns[0].report.is_some() && value(&self.columns[0]).is_some() {
                let mut row = vec![name.to_string()];
                row.extend(self.columns.iter().map(|c| value(c).map_or("-".into(), number)));
                table.push(row);
            }
        }
        let mut row = vec!["fit_time_s".to_string()];
        for c in &self.columns {
            row.push(c.fit_seconds.map_or("-".into(), |t| format!("{t:.3}")));
        }
        table.push(row);
        table
    }

    /// One line per method that needs a word beside its numbers: an infinite NLL (a zero
    /// probability on a true class), predictions changed, or a held-out ECE above the
    /// uncalibrated one.
    pub fn notes(&self) -> Vec<String> {
        let ece = |c: &Column| c.report.as_ref().and_then(|r| r.get(Metric::Ece));
        let base = ece(&self.columns[0]);
        let mut notes = Vec::new();
        for c in &self.columns[1..] {
            let nll = c.report.as_ref().and_then(|r| r.get(Metric::Nll));
            if nll.is_some_and(f64::is_infinite) {
                notes.push(format!(
                    "{}: nll is infinite: it gives probability 0 to the true class of some \
                     rows; nll_clipped floors p[y] at {NLL_FLOOR:e}",
                    c.name
                ));
            }
            if let Some(changed) = c.changed_predictions.filter(|&f| f > 0.0) {
                let binary_map = Method::from_name(&c.name).is_ok_and(Method::is_binary_map);
                notes.push(format!(
                    "{}: changes the prediction of {:.2} % of the rows (accuracy moves with it{})",
                    c.name,
                    100.0 * changed,
                    if binary_map { "; --reduction top-label keeps every prediction" } else { "" }
                ));
            }
            if let (Some(e), Some(b)) = (ece(c), base)
                && e > b
            {
                notes.push(format!(
                    "{}: ece {e:.6} is above the uncalibrated {b:.6}: {}",
                    c.name,
                    why_worse(c, e)
                ));
            }
        }
        notes
    }

    /// The column of `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// The measured reason a method's held-out ECE `e` ended above the uncalibrated one.
fn why_worse(c: &Column, e: f64) -> String {
    if let Some(noise) = c.noise_ece.filter(|&n| e <= n) {
        return format!(
            "within sampling noise (perfectly calibrated confidences show ECE up to {noise:.6} \
             on these rows, 95th percentile)"
        );
    }
    if let Some(changed) = c.changed_predictions.filter(|&f| f > 0.01) {
        return format!(
            "its maps change {:.1} % of the predictions, so the confidences measured are not \
             the ones it calibrated",
            100.0 * changed
        );
    }
    match c.fit_ece {
        Some(fit) if fit < 0.5 * e => format!(
            "it over-fits the calibration split (ECE {fit:.6} there): too flexible for its rows"
        ),
        Some(fit) => format!(
            "its calibration-split ECE is {fit:.6}: the two splits differ (a shift between them)"
        ),
        None => "no measured cause".into(),
    }
}

/// The NLL of `preds` with `p[i, y]` floored at [`NLL_FLOOR`].
fn clipped_nll(preds: &Predictions) -> calib_core::Result<Option<f64>> {
    let config =
        EvaluationConfig::new().with_metrics(vec![Metric::Nll]).with_nll_eps(Some(NLL_FLOOR));
    Ok(config.evaluate(preds)?.get(Metric::Nll))
}

/// The fraction of rows where `after` differs from `before`.
fn changed_fraction(before: &[u32], after: &[u32]) -> f64 {
    let changed = before.iter().zip(after).filter(|(a, b)| a != b).count();
    changed as f64 / before.len().max(1) as f64
}

/// A method fitted on one split and applied to another.
pub struct Applied {
    /// The calibrated predictions of the applied-to split.
    pub calibrated: Predictions,
    /// A top-label calibrator's predictions and confidences of that split.
    pub top_label: Option<TopLabelPrediction>,
    /// The fitted calibrator and its record.
    pub saved: SavedCalibrator,
    /// The fitted calibrator.
    pub calibrator: AnyCalibrator,
    /// Wall time of the fit in seconds, any cross-validation included.
    pub seconds: f64,
}

/// Fits `method` on `fit` with `settings` and calibrates `test` with it.
///
/// # Errors
/// [`CliError::Train`] when the method cannot be fitted or applied.
pub fn fit_and_apply(
    fit: &Predictions,
    test: &Predictions,
    method: Method,
    reduction: Reduction,
) -> Result<Applied> {
    let train = |e| CliError::train(method.name(), e);
    let start = std::time::Instant::now();
    let binary = fit.kind() == calib_core::input::ScoreKind::Binary;
    let config = default_options(method)?.config(FitInput { binary, reduction })?;
    let fitted = config.fit_any(fit, &mut |_| {}).map_err(train)?;
    let seconds = start.elapsed().as_secs_f64();
    let (calibrated, top_label) =
        fitted.calibrator.calibrate_with_top_label(test).map_err(train)?;
    let saved = fitted.to_saved().map_err(train)?;
    Ok(Applied { calibrated, top_label, saved, calibrator: fitted.calibrator, seconds })
}

/// The default methods: Platt and the binary maps for binary input, the scaling family
/// otherwise.
pub fn default_methods(binary: bool) -> Vec<Method> {
    if binary {
        vec![Method::Platt, Method::Affine, Method::Isotonic, Method::Histogram, Method::Beta]
    } else {
        vec![Method::Temperature, Method::Vector, Method::Matrix, Method::Dirichlet, Method::Sms]
    }
}

/// Every method that applies to the input (`--methods all`): binary input gets the binary
/// maps (Platt included); K-class input every method (the binary maps one-vs-rest).
pub fn all_methods(binary: bool) -> Vec<Method> {
    Method::ALL
        .into_iter()
        .filter(|&m| !binary || (m.is_binary_map() && m != Method::TopLabel))
        .collect()
}
