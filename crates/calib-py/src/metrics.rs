//! Metrics: `evaluate`, `bootstrap` and `reliability`, as `calib eval` and `calib plot`
//! compute them.

use burn::tensor::Device;
use calib_cli::evaluation::evaluation_config;
use calib_cli::plot::{DiagramConfig, DiagramScores, ReliabilityDiagram};
use calib_core::bootstrap::{BootstrapConfig, IntervalKind};
use calib_core::stats::AccuracyInterval;
use calib_core::{EvaluationConfig, Metric};
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::input::Rows;
use crate::outcome::{Failure, Outcome, detached};

/// Every metric name: `(name, in the default set, needs every row at once)`, in the registry's
/// order.
#[pyfunction]
pub(crate) fn metric_names() -> Vec<(&'static str, bool, bool)> {
    let defaults = Metric::defaults();
    Metric::ALL.iter().map(|&m| (m.name(), defaults.contains(&m), m.needs_all_rows())).collect()
}

/// `calib eval`'s configuration from its options (calib-cli's `evaluation_config`), with
/// zero bins named by this module's argument before any row is read.
pub(crate) fn config(
    metrics: Option<Vec<String>>,
    n_bins: usize,
    edges: Option<Vec<f64>>,
    nll_eps: Option<f64>,
    split_fits: Option<usize>,
) -> PyResult<EvaluationConfig> {
    if n_bins == 0 {
        return Err(PyValueError::new_err("n_bins must be at least 1"));
    }
    let config = evaluation_config(metrics.as_deref(), n_bins, edges, nll_eps, split_fits);
    Ok(config.map_err(Failure::from)?)
}

/// Metric values by name, and the warnings about the input.
pub(crate) type Named = (Vec<(String, f64)>, Vec<String>);

/// `(name, estimate, lower, upper, standard error)` per metric, and the warnings about the
/// input.
type Intervals = (Vec<(String, f64, f64, f64, f64)>, Vec<String>);

/// The metrics of the rows, by name, with the warnings about the input.
#[pyfunction]
#[pyo3(signature = (scores, labels, input="auto", metrics=None, n_bins=15, edges=None, weights=None, nll_eps=None, split_fits=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn evaluate(
    py: Python<'_>,
    scores: &Bound<'_, PyAny>,
    labels: PyReadonlyArray1<'_, i64>,
    input: &str,
    metrics: Option<Vec<String>>,
    n_bins: usize,
    edges: Option<Vec<f64>>,
    weights: Option<PyReadonlyArray1<'_, f64>>,
    nll_eps: Option<f64>,
    split_fits: Option<usize>,
) -> PyResult<Named> {
    let config = config(metrics, n_bins, edges, nll_eps, split_fits)?;
    let rows = Rows::new(scores, Some(labels), weights, input)?;
    detached(py, move || {
        let (preds, warnings) = rows.predictions(false, &Device::flex())?;
        Ok((config.evaluate(&preds)?.named_values(), warnings))
    })
}

/// Bootstrap intervals: `(name, estimate, lower, upper, standard error)` per metric.
#[pyfunction]
#[pyo3(signature = (scores, labels, input="auto", metrics=None, n_bins=15, edges=None, weights=None, nll_eps=None, split_fits=None, replicates=1000, level=0.9, seed=0, interval="percentile"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn bootstrap(
    py: Python<'_>,
    scores: &Bound<'_, PyAny>,
    labels: PyReadonlyArray1<'_, i64>,
    input: &str,
    metrics: Option<Vec<String>>,
    n_bins: usize,
    edges: Option<Vec<f64>>,
    weights: Option<PyReadonlyArray1<'_, f64>>,
    nll_eps: Option<f64>,
    split_fits: Option<usize>,
    replicates: usize,
    level: f64,
    seed: u64,
    interval: &str,
) -> PyResult<Intervals> {
    let config = config(metrics, n_bins, edges, nll_eps, split_fits)?;
    if replicates < 2 {
        return Err(PyValueError::new_err("replicates must be at least 2"));
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(PyValueError::new_err(format!("level {level} is outside (0, 1)")));
    }
    let interval = match interval {
        "percentile" => IntervalKind::Percentile,
        "basic" => IntervalKind::Basic,
        other => {
            return Err(PyValueError::new_err(format!(
                "interval must be \"percentile\" or \"basic\", not {other:?}"
            )));
        }
    };
    let b = BootstrapConfig::new()
        .with_replicates(replicates)
        .with_level(level)
        .with_seed(seed)
        .with_interval(interval);
    let rows = Rows::new(scores, Some(labels), weights, input)?;
    detached(py, move || {
        let (preds, warnings) = rows.predictions(false, &Device::flex())?;
        let (_, intervals) = config.bootstrap(&preds, &b)?;
        let out = intervals.into_iter();
        Ok((
            out.map(|i| (i.name, i.estimate, i.lower, i.upper, i.standard_error)).collect(),
            warnings,
        ))
    })
}

/// One drawn bin: `(lower, upper, count, confidence, accuracy, acceptance interval, accuracy
/// interval)`; empty bins have `None`s.
type Bin = (f64, f64, f64, Option<f64>, Option<f64>, Option<(f64, f64)>, Option<(f64, f64)>);

/// A reliability diagram's numbers (`calib plot`'s): the bins, N, and the binned calibration
/// error, with the warnings about the input.
#[pyfunction]
#[pyo3(signature = (scores, labels, input="auto", n_bins=15, adaptive=false, edges=None, class_index=None, alpha=0.05, accuracy_interval=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn reliability(
    py: Python<'_>,
    scores: &Bound<'_, PyAny>,
    labels: PyReadonlyArray1<'_, i64>,
    input: &str,
    n_bins: usize,
    adaptive: bool,
    edges: Option<Vec<f64>>,
    class_index: Option<usize>,
    alpha: f64,
    accuracy_interval: Option<String>,
) -> PyResult<(Vec<Bin>, f64, f64, Vec<String>)> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(PyValueError::new_err(format!("alpha {alpha} is outside (0, 1)")));
    }
    let accuracy_interval = accuracy_interval
        .map(|name| AccuracyInterval::from_name(&name))
        .transpose()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let config = DiagramConfig {
        scores: class_index.map_or(DiagramScores::TopLabel, DiagramScores::Class),
        n_bins,
        adaptive,
        edges,
        alpha,
        accuracy_interval,
    };
    let rows = Rows::new(scores, Some(labels), None, input)?;
    detached(py, move || {
        let (preds, warnings) = rows.predictions(false, &Device::flex())?;
        let diagram: Outcome<ReliabilityDiagram> =
            Ok(ReliabilityDiagram::compute(&preds, &config)?);
        let d = diagram?;
        let bins = d.bins.iter().map(|b| {
            (b.lower, b.upper, b.count, b.confidence, b.accuracy, b.interval, b.accuracy_interval)
        });
        Ok((bins.collect(), d.n_samples, d.calibration_error, warnings))
    })
}
