//! [`Comparison`]: fit calibrators on one split, measure every metric on another, next to the
//! uncalibrated scores: the answer to "which calibrator should I use".

use calib_core::input::Predictions;
use calib_core::{EvaluationConfig, Report};
use calib_train::{FitRecord, Method, SavedCalibrator};

use crate::error::{CliError, Result};
use crate::fitting::{FitSettings, config_for};
use crate::table::{Table, number};

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
}

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
        settings: &FitSettings,
        on_method: &mut dyn FnMut(Method),
    ) -> Result<Self> {
        let uncalibrated = eval.evaluate(test).map_err(|e| CliError::core("evaluation", e))?;
        let mut columns = vec![Column {
            name: "uncalibrated".into(),
            report: Some(uncalibrated),
            record: None,
            error: None,
            fit_seconds: None,
            saved: None,
        }];
        for &method in methods {
            on_method(method);
            let outcome = fit_and_apply(fit, test, method, settings).and_then(|f| {
                let report =
                    eval.evaluate(&f.calibrated).map_err(|e| CliError::core(method.name(), e))?;
                Ok((report, f.saved, f.seconds))
            });
            columns.push(match outcome {
                Ok((report, saved, seconds)) => Column {
                    name: method.name().into(),
                    report: Some(report),
                    record: saved.fit.clone(),
                    error: None,
                    fit_seconds: Some(seconds),
                    saved: Some(saved),
                },
                Err(e) => Column {
                    name: method.name().into(),
                    report: None,
                    record: None,
                    error: Some(e.to_string()),
                    fit_seconds: None,
                    saved: None,
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
        let mut row = vec!["fit_time_s".to_string()];
        for c in &self.columns {
            row.push(c.fit_seconds.map_or("-".into(), |t| format!("{t:.3}")));
        }
        table.push(row);
        table
    }

    /// The column of `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// A method fitted on one split and applied to another.
pub struct Applied {
    /// The calibrated predictions of the applied-to split.
    pub calibrated: Predictions,
    /// The fitted calibrator and its record.
    pub saved: SavedCalibrator,
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
    settings: &FitSettings,
) -> Result<Applied> {
    let train = |e| CliError::train(method.name(), e);
    let start = std::time::Instant::now();
    let binary = fit.kind() == calib_core::input::ScoreKind::Binary;
    let fitted = config_for(method, settings, binary)?.fit_any(fit, &mut |_| {}).map_err(train)?;
    let seconds = start.elapsed().as_secs_f64();
    let calibrated = fitted.calibrator.calibrate(test).map_err(train)?;
    Ok(Applied { calibrated, saved: fitted.to_saved().map_err(train)?, seconds })
}

/// The default methods: Platt and the binary maps for binary input, the scaling family
/// otherwise.
pub fn default_methods(binary: bool) -> Vec<Method> {
    if binary {
        vec![Method::Platt, Method::Isotonic, Method::Histogram, Method::Beta]
    } else {
        vec![Method::Temperature, Method::Vector, Method::Matrix, Method::Dirichlet]
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
