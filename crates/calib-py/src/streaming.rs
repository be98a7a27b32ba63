//! The mergeable evaluation state behind `calib.CalibrationMetrics`: what `calib eval
//! --save-state` writes and `calib merge` merges.

use std::sync::Mutex;

use burn::tensor::Device;
use calib_cli::io::{read_state, write_state};
use calib_core::{EvaluationState, StreamingEvaluation};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use crate::input::Rows;
use crate::metrics::config;
use crate::outcome::{Failure, Outcome, detached};

/// Which of `metrics` one pass computes and merges (static bins, NLL, Brier, accuracy):
/// `(name, one pass)` each; the others (adaptive ranges, estimators on every row) need the
/// rows themselves.
#[pyfunction]
#[pyo3(signature = (metrics=None, n_bins=15, edges=None))]
pub(crate) fn one_pass_metrics(
    metrics: Option<Vec<String>>,
    n_bins: usize,
    edges: Option<Vec<f64>>,
) -> PyResult<Vec<(String, bool)>> {
    let config = config(metrics, n_bins, edges, None, None)?;
    Ok(config.metrics.iter().map(|&m| (m.name().to_string(), config.is_one_pass(m))).collect())
}

/// One-pass metrics fed chunk by chunk (`calib._calib.StreamingState`).
#[pyclass(name = "StreamingState", module = "calib._calib", frozen)]
pub(crate) struct PyStreamingState {
    /// Boxed: Python allocates objects at 16 bytes, whatever the state's alignment.
    stream: Mutex<Box<StreamingEvaluation>>,
}

impl PyStreamingState {
    fn of_state(state: EvaluationState) -> Outcome<Self> {
        Ok(Self { stream: Mutex::new(Box::new(StreamingEvaluation::from_state(state)?)) })
    }

    fn state(&self) -> EvaluationState {
        self.stream.lock().unwrap_or_else(|e| e.into_inner()).state().clone()
    }
}

#[pymethods]
impl PyStreamingState {
    /// An empty state of one-pass `metrics` under `calib eval`'s options.
    #[new]
    #[pyo3(signature = (metrics=None, n_bins=15, edges=None, nll_eps=None))]
    fn new(
        metrics: Option<Vec<String>>,
        n_bins: usize,
        edges: Option<Vec<f64>>,
        nll_eps: Option<f64>,
    ) -> PyResult<Self> {
        let config = config(metrics, n_bins, edges, nll_eps, None)?;
        if let Some(m) = config.metrics.iter().find(|&&m| !config.is_one_pass(m)) {
            let message = format!(
                "{m} is not computed in one pass; a streaming state holds only static bins, NLL, Brier and accuracy"
            );
            return Err(Failure::Value(message).into());
        }
        Ok(Self { stream: Mutex::new(Box::new(config.streaming().map_err(Failure::from)?)) })
    }

    /// Adds the rows; returns the warnings about the input.
    #[pyo3(signature = (scores, labels, input="auto", weights=None))]
    fn update(
        &self,
        py: Python<'_>,
        scores: &Bound<'_, PyAny>,
        labels: PyReadonlyArray1<'_, i64>,
        input: &str,
        weights: Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<Vec<String>> {
        let rows = Rows::new(scores, Some(labels), weights, input)?.of_chunk();
        detached(py, || {
            let (preds, warnings) = rows.predictions(false, &Device::flex())?;
            self.stream.lock().unwrap_or_else(|e| e.into_inner()).update(&preds)?;
            Ok(warnings)
        })
    }

    /// The state of both states' rows.
    fn merge(&self, other: &Self) -> PyResult<Self> {
        let merged = self.state().merge(&other.state()).map_err(Failure::from)?;
        Ok(Self::of_state(merged)?)
    }

    /// The metrics of the rows so far, by name.
    fn compute(&self, py: Python<'_>) -> PyResult<Vec<(String, f64)>> {
        let state = self.state();
        detached(py, move || Ok(state.report()?.named_values()))
    }

    /// Rows added so far.
    #[getter]
    fn n_samples(&self) -> u64 {
        self.state().n_samples()
    }

    /// The state as JSON (what `calib merge` reads from a `.json` file).
    fn to_json(&self) -> String {
        self.state().to_json()
    }

    /// A state from [`Self::to_json`]'s JSON.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Ok(Self::of_state(EvaluationState::from_json(text).map_err(Failure::from)?)?)
    }

    /// Writes the state to `path` atomically (JSON for `.json`, else calib's binary form), for
    /// `calib merge`.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        write_state(&path, &self.state()).map_err(Failure::from)?;
        Ok(())
    }

    /// Reads a state written by [`Self::save`] or `calib eval --save-state`.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(Self::of_state(read_state(&path).map_err(Failure::from)?)?)
    }

    /// Pickles through the JSON form.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let rebuild = slf.py().get_type::<Self>().getattr("from_json")?;
        Ok((rebuild, (slf.get().to_json(),)))
    }
}
