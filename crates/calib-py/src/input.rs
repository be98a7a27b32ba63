//! Arrays from Python as calib's input: what the scores are, and predictions that read them in
//! place wherever calib takes them as they are.

use std::sync::Arc;

use burn::tensor::Device;
use calib_cli::io::{Scores, to_log_probabilities};
use calib_core::input::{HostValues, InputConfig, Predictions, ScoreBuffer, ScoreKind};
use numpy::{PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::buffer::NumpyScores;
use crate::outcome::Outcome;

/// What the scores are: `input="auto" | "logits" | "probs"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// Probabilities when every value is in `[0, 1]` and every row sums to 1 (one column:
    /// every value in `[0, 1]`), else logits.
    Auto,
    /// Logits (log-odds for one column).
    Logits,
    /// Probabilities (of the positive class for one column).
    Probs,
}

impl Input {
    /// Parses `input=`.
    pub(crate) fn parse(name: &str) -> PyResult<Self> {
        match name {
            "auto" => Ok(Self::Auto),
            "logits" => Ok(Self::Logits),
            "probs" | "probabilities" => Ok(Self::Probs),
            other => Err(PyValueError::new_err(format!(
                "input must be \"auto\", \"logits\" or \"probs\", not {other:?}"
            ))),
        }
    }
}

/// Rows handed over from Python: scores (read in place), labels, weights.
#[derive(Debug)]
pub(crate) struct Rows {
    scores: Arc<NumpyScores>,
    n_columns: usize,
    labels: Vec<i64>,
    weights: Option<Vec<f64>>,
    input: Input,
    /// A chunk of a larger set's rows (a streamed evaluation's): its weights may all be zero.
    chunk: bool,
}

impl Rows {
    /// `scores` (`[N]` binary or `[N, K]`, C-contiguous float32/float64), `labels` (`[N]`
    /// int64; `None`: zeros, for applying a calibrator), `weights` (`[N]` float64).
    pub(crate) fn new(
        scores: &Bound<'_, PyAny>,
        labels: Option<PyReadonlyArray1<'_, i64>>,
        weights: Option<PyReadonlyArray1<'_, f64>>,
        input: &str,
    ) -> PyResult<Self> {
        let input = Input::parse(input)?;
        let shape = scores.cast::<numpy::PyUntypedArray>().map(|a| a.shape().to_vec());
        let (n, n_columns) = match shape.as_deref() {
            Ok([n]) => (*n, 1),
            Ok([n, k]) => (*n, *k),
            Ok(other) => {
                return Err(PyValueError::new_err(format!(
                    "scores must be [N] (binary) or [N, K], got {} dimensions",
                    other.len()
                )));
            }
            Err(_) => return Err(PyValueError::new_err("scores must be a NumPy array")),
        };
        if n == 0 || n_columns == 0 {
            return Err(PyValueError::new_err(format!(
                "scores of shape {:?}: no {}",
                shape.as_deref().unwrap_or_default(),
                if n == 0 { "rows" } else { "columns" }
            )));
        }
        let scores = Arc::new(NumpyScores::new(scores)?);
        let labels = match labels {
            Some(l) => l
                .as_slice()
                .map_err(|_| PyValueError::new_err("labels must be contiguous"))?
                .to_vec(),
            None => vec![0; n],
        };
        let weights = weights
            .map(|w| w.as_slice().map(<[f64]>::to_vec))
            .transpose()
            .map_err(|_| PyValueError::new_err("weights must be contiguous"))?;
        Ok(Self { scores, n_columns, labels, weights, input, chunk: false })
    }

    /// These rows as a chunk of a streamed evaluation's: weighted as
    /// `Predictions::with_chunk_weights` weighs them (all zero allowed; the state checks the
    /// sum of every chunk's).
    pub(crate) fn of_chunk(mut self) -> Self {
        self.chunk = true;
        self
    }

    /// Predictions of these rows on `device`, and what to warn about. `scaling`: for a
    /// scaling calibrator, which maps logits, so probabilities become log-probabilities
    /// (floored at calib's `PROBABILITY_FLOOR`). The scores are read in place unless one
    /// column of log-odds needs its sigmoid or probabilities their logarithm.
    pub(crate) fn predictions(
        &self,
        scaling: bool,
        device: &Device,
    ) -> Outcome<(Predictions, Vec<String>)> {
        let (c, mut warnings) = (self.n_columns, Vec::new());
        let values = self.scores.values();
        let looks_like_probs = || in_unit(&values) && (c == 1 || rows_sum_to_one(&values, c));
        let probs = match self.input {
            Input::Auto => looks_like_probs(),
            Input::Probs => true,
            Input::Logits => {
                if looks_like_probs() {
                    warnings.push(format!(
                        "scores: every {} in [0, 1]{}: these look like probabilities, not {}; \
                         pass input=\"probs\" if they are",
                        if c == 1 { "score is" } else { "row is" },
                        if c == 1 { "" } else { " and sums to 1" },
                        if c == 1 { "log-odds" } else { "logits" },
                    ));
                }
                false
            }
        };
        let config = |kind| InputConfig::new(kind);
        let preds = if c == 1 && !probs {
            let sigmoid = |s: f64| 1.0 / (1.0 + (-s).exp());
            let mut scores = owned(&values);
            scores.map_in_place(sigmoid);
            from_scores(scores, 1, &self.labels, config(ScoreKind::Binary), device)?
        } else if scaling && probs && c > 1 {
            let mut scores = owned(&values);
            warnings.extend(to_log_probabilities(&mut scores, c, "scores", 0));
            from_scores(scores, c, &self.labels, config(ScoreKind::Logits), device)?
        } else {
            let kind = match (c, probs) {
                (1, _) => ScoreKind::Binary,
                (_, true) => ScoreKind::Probabilities,
                (_, false) => ScoreKind::Logits,
            };
            let buffer: Arc<dyn ScoreBuffer> = self.scores.clone();
            Predictions::from_buffer(buffer, c, self.labels.clone(), config(kind), device)?
        };
        let preds = match &self.weights {
            Some(w) if self.chunk => preds.with_chunk_weights(w.clone())?,
            Some(w) => preds.with_weights(w.clone())?,
            None => preds,
        };
        Ok((preds, warnings))
    }
}

/// Where the predictions calib builds from `scores` read their values, and whether that is
/// `scores`' own memory: the check, from Python, that nothing was copied.
#[pyfunction]
#[pyo3(signature = (scores, labels, input="auto"))]
pub(crate) fn read_address(
    scores: &Bound<'_, PyAny>,
    labels: PyReadonlyArray1<'_, i64>,
    input: &str,
) -> PyResult<usize> {
    let rows = Rows::new(scores, Some(labels), None, input)?;
    let (preds, _) = rows.predictions(false, &Device::flex())?;
    let (values, _) = preds.host_rows().map_err(crate::outcome::Failure::from)?;
    Ok(match values {
        HostValues::F32(v) => v.as_ptr() as usize,
        HostValues::F64(v) => v.as_ptr() as usize,
    })
}

/// The values, copied.
fn owned(values: &HostValues<'_>) -> Scores {
    match values {
        HostValues::F32(v) => Scores::F32(v.to_vec()),
        HostValues::F64(v) => Scores::F64(v.to_vec()),
    }
}

/// Host predictions of owned scores.
fn from_scores(
    scores: Scores,
    c: usize,
    labels: &[i64],
    config: InputConfig,
    device: &Device,
) -> Outcome<Predictions> {
    let labels = labels.to_vec();
    Ok(match scores {
        Scores::F32(v) => Predictions::from_host_vec(v, c, labels, config, device),
        Scores::F64(v) => Predictions::from_host_vec(v, c, labels, config, device),
    }?)
}

/// Whether every value is in `[0, 1]` (NaN is not).
fn in_unit(values: &HostValues<'_>) -> bool {
    match values {
        HostValues::F32(v) => v.iter().all(|x| (0.0..=1.0).contains(x)),
        HostValues::F64(v) => v.iter().all(|x| (0.0..=1.0).contains(x)),
    }
}

/// Whether every row of `c` values sums to 1 within `1e-3` (the command line's rule).
fn rows_sum_to_one(values: &HostValues<'_>, c: usize) -> bool {
    let near = |s: f64| (s - 1.0).abs() <= 1e-3;
    match values {
        HostValues::F32(v) => v.chunks(c).all(|r| near(r.iter().map(|&x| f64::from(x)).sum())),
        HostValues::F64(v) => v.chunks(c).all(|r| near(r.iter().sum())),
    }
}
