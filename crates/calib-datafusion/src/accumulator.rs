//! [`CalibAccumulator`]: the aggregate of one group (or of a query without `GROUP BY`).

use calib_core::StreamingEvaluation;
use datafusion::arrow::array::ArrayRef;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::Accumulator;

use crate::evaluator::Evaluator;

/// The streaming evaluation of one group's rows.
#[derive(Debug)]
pub(crate) struct CalibAccumulator {
    evaluator: Evaluator,
    stream: Option<StreamingEvaluation>,
}

impl CalibAccumulator {
    pub(crate) fn new(evaluator: Evaluator) -> Self {
        Self { evaluator, stream: None }
    }

    /// The evaluator and the stream, started on first use.
    fn parts(&mut self) -> Result<(&Evaluator, &mut StreamingEvaluation)> {
        if self.stream.is_none() {
            self.stream = Some(self.evaluator.empty()?);
        }
        Ok((&self.evaluator, self.stream.as_mut().expect("set above")))
    }
}

impl Accumulator for CalibAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let (evaluator, stream) = self.parts()?;
        if values.iter().all(|v| v.null_count() == 0) {
            return evaluator.update(stream, values, None);
        }
        let valid = evaluator.valid_rows(values, None);
        let rows: Vec<usize> = (0..values[0].len()).filter(|&i| valid(i)).collect();
        evaluator.update(stream, values, Some(&rows))
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let (evaluator, stream) = self.parts()?;
        let column = evaluator.column(std::slice::from_ref(stream))?;
        ScalarValue::try_from_array(&column, 0)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.stream.as_ref().map_or(0, |s| s.state().size_hint())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let bytes = Evaluator::to_bytes(self.parts()?.1);
        Ok(vec![ScalarValue::Binary(Some(bytes))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (evaluator, stream) = self.parts()?;
        evaluator.merge_rows(stream, states, 0..states[0].len())
    }
}
