//! [`Evaluator`]: what the plain and the grouped accumulators share: Arrow rows into a
//! [`StreamingEvaluation`], states to and from bytes, the value of a finished group.

use burn::tensor::Device;
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::{EvaluationConfig, EvaluationState, StreamingEvaluation};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{DataFusionError, Result};

use calib_io::Scores;
use calib_io::table::rows::gather;

/// What an aggregate returns: report values, as a Float64 or a struct of them.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    pub values: Vec<&'static str>,
    pub result: DataType,
}

/// One aggregate's configuration and what it returns.
#[derive(Debug, Clone)]
pub(crate) struct Evaluator {
    name: String,
    config: EvaluationConfig,
    output: Output,
    probs: bool,
    /// Whether the third column holds sample weights.
    weighted: bool,
    device: Device,
}

impl Evaluator {
    pub(crate) fn new(
        name: String,
        config: EvaluationConfig,
        output: Output,
        (probs, weighted): (bool, bool),
    ) -> Self {
        Self { name, config, output, probs, weighted, device: Device::flex() }
    }

    /// A stream with no rows.
    pub(crate) fn empty(&self) -> Result<StreamingEvaluation> {
        self.config.streaming().map_err(|e| self.fail(e))
    }

    /// `e` as an execution error naming the aggregate.
    pub(crate) fn fail(&self, e: impl std::fmt::Display) -> DataFusionError {
        DataFusionError::Execution(format!("{}: {e}", self.name))
    }

    /// Adds `rows` (all when `None`) of the score, label (and weight) columns `values` to
    /// `stream`.
    pub(crate) fn update(
        &self,
        stream: &mut StreamingEvaluation,
        values: &[ArrayRef],
        rows: Option<&[usize]>,
    ) -> Result<()> {
        if rows.map_or(values[0].is_empty(), <[usize]>::is_empty) {
            return Ok(());
        }
        let gathered =
            gather(values[0].as_ref(), values[1].as_ref(), rows).map_err(|e| self.fail(e))?;
        let c = gathered.n_columns;
        let kind = match (c, self.probs) {
            (1, _) => ScoreKind::Binary,
            (_, true) => ScoreKind::Probabilities,
            (_, false) => ScoreKind::Logits,
        };
        let config = InputConfig::new(kind);
        let labels = gathered.labels;
        let preds = match gathered.scores {
            Scores::F64(v) if c == 1 && !self.probs => {
                Predictions::from_host_vec(logistic(v), 1, labels, config, &self.device)
            }
            Scores::F32(v) if c == 1 && !self.probs => {
                let wide = v.into_iter().map(f64::from).collect();
                Predictions::from_host_vec(logistic(wide), 1, labels, config, &self.device)
            }
            Scores::F64(v) => Predictions::from_host_vec(v, c, labels, config, &self.device),
            Scores::F32(v) => Predictions::from_host_vec(v, c, labels, config, &self.device),
        }
        .map_err(|e| self.fail(e))?;
        let preds = match self.weighted {
            true => preds.with_chunk_weights(self.weights(&values[2], rows)?),
            false => Ok(preds),
        }
        .map_err(|e| self.fail(e))?;
        stream.update(&preds).map_err(|e| self.fail(e))
    }

    /// The weights at `rows` (all when `None`) of the column `weights` (Float64 after
    /// coercion).
    fn weights(&self, weights: &ArrayRef, rows: Option<&[usize]>) -> Result<Vec<f64>> {
        let column = weights.as_primitive_opt::<Float64Type>().ok_or_else(|| {
            DataFusionError::Internal(format!("{}: weights are not a Float64 column", self.name))
        })?;
        Ok(match rows {
            Some(rows) => rows.iter().map(|&i| column.value(i)).collect(),
            None => column.values().to_vec(),
        })
    }

    /// The rows of `values` that count: not filtered out, with a score, a label (and a
    /// weight).
    pub(crate) fn valid_rows(
        &self,
        values: &[ArrayRef],
        filter: Option<&datafusion::arrow::array::BooleanArray>,
    ) -> impl Fn(usize) -> bool + use<> {
        let columns: Vec<ArrayRef> = values[..if self.weighted { 3 } else { 2 }].to_vec();
        let filter = filter.cloned();
        move |i| {
            filter.as_ref().is_none_or(|f| f.is_valid(i) && f.value(i))
                && columns.iter().all(|c| c.is_valid(i))
        }
    }

    /// The report values of `stream`'s rows, in the output's order; `None` without rows (or
    /// without weight).
    pub(crate) fn evaluate(&self, stream: &StreamingEvaluation) -> Result<Option<Vec<f64>>> {
        if stream.state().n_samples() == 0 || stream.state().total_weight() <= 0.0 {
            return Ok(None);
        }
        let named = stream.finish().map_err(|e| self.fail(e))?.named_values();
        let value = |v: &str| named.iter().find(|(k, _)| k == v).map_or(f64::NAN, |(_, x)| *x);
        Ok(Some(self.output.values.iter().map(|v| value(v)).collect()))
    }

    /// The results of `streams` as one column of the output type (null for groups without
    /// rows).
    pub(crate) fn column(&self, streams: &[StreamingEvaluation]) -> Result<ArrayRef> {
        let results: Vec<Option<Vec<f64>>> =
            streams.iter().map(|s| self.evaluate(s)).collect::<Result<_>>()?;
        let field = |j: usize| -> ArrayRef {
            Arc::new(Float64Array::from_iter(results.iter().map(|r| r.as_ref().map(|v| v[j]))))
        };
        let DataType::Struct(fields) = &self.output.result else { return Ok(field(0)) };
        let columns = (0..fields.len()).map(field).collect();
        let nulls = NullBuffer::from_iter(results.iter().map(Option::is_some));
        let array = StructArray::try_new(fields.clone(), columns, Some(nulls))?;
        Ok(Arc::new(array))
    }

    /// `stream`'s state as bytes.
    pub(crate) fn to_bytes(stream: &StreamingEvaluation) -> Vec<u8> {
        stream.state().to_bytes()
    }

    /// Merges every non-null state of the binary column `states[0]` at `rows` into `stream`:
    /// the states add up first, then the stream is rebuilt once.
    pub(crate) fn merge_rows(
        &self,
        stream: &mut StreamingEvaluation,
        states: &[ArrayRef],
        rows: impl Iterator<Item = usize>,
    ) -> Result<()> {
        let column = states[0].as_binary_opt::<i32>().ok_or_else(|| {
            DataFusionError::Internal(format!("{}: state is not a binary column", self.name))
        })?;
        let mut merged = stream.state().clone();
        for i in rows.filter(|&i| column.is_valid(i)) {
            let other = EvaluationState::from_bytes(column.value(i)).map_err(|e| self.fail(e))?;
            merged = merged.merge(&other).map_err(|e| self.fail(e))?;
        }
        *stream = StreamingEvaluation::from_state(merged).map_err(|e| self.fail(e))?;
        Ok(())
    }
}

/// Probabilities of log-odds: 1 / (1 + e^-z).
fn logistic(z: Vec<f64>) -> Vec<f64> {
    z.into_iter().map(|z| 1.0 / (1.0 + (-z).exp())).collect()
}
