//! Calibrators: any method of calib-train's registry fitted by name with its command-line
//! options, applied, saved and loaded as `calib fit` and `calib apply` do.

use burn::tensor::Device;
use calib_cli::cli::{options_command, parse_options};
use calib_cli::fitting::{fit_method, parse_method};
use calib_cli::probabilities::softmax_rows;
use calib_cli::top_label::evaluate;
use calib_core::input::{Predictions, ScoreKind};
use calib_train::{AnyCalibrator, Method, SavedCalibrator};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::input::Rows;
use crate::metrics::{Named, config};
use crate::outcome::{Failure, Outcome, detached};

/// One option of a method: `(name, flag, help, takes a value, choices)`; `name` is the
/// keyword the Python estimators take, `flag` the command line's.
type OptionSpec = (String, String, String, bool, Vec<String>);

/// Every method that can be fitted: `(name, one line about it, binary map, options)`, from
/// the same clap definitions as `calib fit METHOD --help`. The binary maps share one set of
/// options, each saying which maps read it (`histogram, bbq: ...`); a map is offered only
/// those it reads (top-label, which passes them to its base, all of them).
#[pyfunction]
pub(crate) fn method_specs() -> Vec<(String, String, bool, Vec<OptionSpec>)> {
    let fitted = Method::ALL.iter().filter_map(|&m| options_command(m).ok().map(|c| (m, c)));
    fitted
        .map(|(method, command)| {
            let options = command.get_arguments().filter_map(|arg| {
                let flag = arg.get_long()?.to_string();
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                if !reads_option(method, &help) {
                    return None;
                }
                let choices =
                    arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
                let takes = arg.get_action().takes_values();
                Some((arg.get_id().to_string(), flag, help, takes, choices))
            });
            let about = command.get_about().map(ToString::to_string).unwrap_or_default();
            (method.name().to_string(), about, method.is_binary_map(), options.collect())
        })
        .collect()
}

/// Whether `method` reads an option whose help is `help`: all do but where the help starts
/// with the methods that read it (`lce: ...`, `affine, quadratic: ...`) and `method` is not
/// among them (top-label reads every map's options for its base).
fn reads_option(method: Method, help: &str) -> bool {
    let Some((head, _)) = help.split_once(": ") else { return true };
    let named: Vec<&str> = head.split(", ").collect();
    let all_methods = named.iter().all(|n| Method::from_name(n).is_ok());
    !all_methods || method == Method::TopLabel || named.contains(&method.name())
}

/// A top-label calibrator's predictions and confidences as NumPy arrays.
type TopLabel<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>);

/// A fitted or loaded calibrator (`calib._calib.Calibrator`).
#[pyclass(name = "Calibrator", module = "calib._calib", frozen)]
pub(crate) struct PyCalibrator {
    saved: SavedCalibrator,
    /// Boxed: calibrators hold cache-line-aligned buffers, and Python allocates objects at
    /// 16 bytes.
    calibrator: Box<AnyCalibrator>,
}

impl PyCalibrator {
    /// The rows as this calibrator takes them (the scaling family: probabilities as
    /// log-probabilities), and what to warn about.
    fn input(&self, rows: &Rows, device: &Device) -> Outcome<(Predictions, Vec<String>)> {
        rows.predictions(!self.saved.method.is_binary_map(), device)
    }

    fn from_saved(saved: SavedCalibrator) -> Outcome<Self> {
        let calibrator = AnyCalibrator::from_saved(&saved, &Device::flex())?;
        Ok(Self { saved, calibrator: Box::new(calibrator) })
    }
}

#[pymethods]
impl PyCalibrator {
    /// Fits `method` with its command-line `options` (`["--bins", "10"]`) on the rows; returns
    /// the calibrator and the warnings about the input.
    #[staticmethod]
    #[pyo3(signature = (method, options, scores, labels, input="auto", weights=None))]
    fn fit(
        py: Python<'_>,
        method: &str,
        options: Vec<String>,
        scores: &Bound<'_, PyAny>,
        labels: PyReadonlyArray1<'_, i64>,
        input: &str,
        weights: Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<(Self, Vec<String>)> {
        let method = parse_method(method).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let rows = Rows::new(scores, Some(labels), weights, input)?;
        detached(py, move || {
            let options = parse_options(method, &options)?;
            let (preds, warnings) = rows.predictions(!method.is_binary_map(), &Device::flex())?;
            let saved = fit_method(options.as_ref(), &preds, "fit", &mut |_| {})?;
            Ok((Self::from_saved(saved)?, warnings))
        })
    }

    /// The calibrated probabilities `[N, K]` (`[N, 2]` for binary scores) as float64, and
    /// the warnings about the input.
    #[pyo3(signature = (scores, input="auto"))]
    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        scores: &Bound<'py, PyAny>,
        input: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
        let rows = Rows::new(scores, None, None, input)?;
        let (values, k, warnings) = detached(py, || {
            let (preds, warnings) = self.input(&rows, &Device::flex())?;
            let calibrated = self.calibrator.calibrate(&preds)?;
            let (values, _) = calibrated.host_rows()?;
            let (values, k) = (values.into_f64(), calibrated.n_columns());
            let values = match calibrated.kind() {
                ScoreKind::Logits => softmax_rows(&values, k),
                _ => values,
            };
            Ok(match k {
                1 => (values.iter().flat_map(|&p| [1.0 - p, p]).collect(), 2, warnings),
                _ => (values, k, warnings),
            })
        })?;
        let n = values.len() / k;
        let array = PyArray1::from_vec(py, values).reshape([n, k])?;
        Ok((array.into_any(), warnings))
    }

    /// `calib eval --calibrator`: the metrics of the rows after this calibrator (a top-label
    /// calibrator's top-label metrics from its predictions and confidences), by name, and the
    /// warnings about the input.
    #[pyo3(signature = (scores, labels, input="auto", metrics=None, n_bins=15, edges=None, weights=None, nll_eps=None, split_fits=None))]
    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &self,
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
        detached(py, || {
            let device = Device::flex();
            let (preds, warnings) = self.input(&rows, &device)?;
            let (calibrated, top) = self.calibrator.calibrate_with_top_label(&preds)?;
            let report = evaluate(&config, &calibrated, top.as_ref(), &device, "scores")?;
            Ok((report.named_values(), warnings))
        })
    }

    /// A top-label calibrator's prediction and calibrated confidence for each row (`None` for
    /// other calibrators), and the warnings about the input.
    #[pyo3(signature = (scores, input="auto"))]
    fn predict_top_label<'py>(
        &self,
        py: Python<'py>,
        scores: &Bound<'py, PyAny>,
        input: &str,
    ) -> PyResult<(Option<TopLabel<'py>>, Vec<String>)> {
        let rows = Rows::new(scores, None, None, input)?;
        let (top, warnings) = detached(py, || {
            let (preds, warnings) = self.input(&rows, &Device::flex())?;
            let (_, top) = self.calibrator.calibrate_with_top_label(&preds)?;
            Ok((top.map(|t| (t.pred, t.confidence)), warnings))
        })?;
        let arrays = top.map(|(pred, confidence)| {
            let pred = PyArray1::from_vec(py, pred).into_any();
            (pred, PyArray1::from_vec(py, confidence).into_any())
        });
        Ok((arrays, warnings))
    }

    /// The saved form (`calib-calibrator/2` JSON), which the command line reads.
    fn to_json(&self) -> String {
        self.saved.to_json()
    }

    /// A calibrator from its saved form.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        let saved = SavedCalibrator::from_json(text).map_err(Failure::from)?;
        Ok(Self::from_saved(saved)?)
    }

    /// Writes the saved form to `path` atomically.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.saved.save(&path).map_err(|e| Failure::Os(e.to_string()))?;
        Ok(())
    }

    /// Reads a calibrator saved by `calib fit` or [`Self::save`].
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        if !path.exists() {
            let message = format!("{}: no such file", path.display());
            return Err(pyo3::exceptions::PyFileNotFoundError::new_err(message));
        }
        let saved = SavedCalibrator::load(&path).map_err(Failure::from)?;
        Ok(Self::from_saved(saved)?)
    }

    /// The method's name.
    #[getter]
    fn method(&self) -> &'static str {
        self.saved.method.name()
    }

    /// K.
    #[getter]
    fn n_classes(&self) -> usize {
        self.saved.n_classes
    }

    /// Pickles through the saved form.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let rebuild = py.get_type::<Self>().getattr("from_json")?;
        let args = PyTuple::new(py, [slf.get().saved.to_json()])?;
        Ok((rebuild, args))
    }
}
