//! [`CalibGroupsAccumulator`]: one streaming evaluation per group of a `GROUP BY`, fed a whole
//! batch at once: rows are bucketed by group, then each group's rows go through the engine
//! in one call (not row by row).

use std::sync::Arc;

use calib_core::StreamingEvaluation;
use datafusion::arrow::array::{ArrayRef, BinaryArray, BooleanArray};
use datafusion::common::Result;
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};

use crate::evaluator::Evaluator;

/// Streaming evaluations indexed by group.
#[derive(Debug)]
pub(crate) struct CalibGroupsAccumulator {
    evaluator: Evaluator,
    groups: Vec<StreamingEvaluation>,
}

impl CalibGroupsAccumulator {
    pub(crate) fn new(evaluator: Evaluator) -> Self {
        Self { evaluator, groups: Vec::new() }
    }

    /// Grows to `n` groups.
    fn grow(&mut self, n: usize) -> Result<()> {
        while self.groups.len() < n {
            self.groups.push(self.evaluator.empty()?);
        }
        Ok(())
    }
}

/// The rows of each group, in row order: `(group, rows)` for every group with rows kept. Work
/// in proportion to the batch's rows, not to the number of groups so far.
fn bucket(group_indices: &[usize], keep: impl Fn(usize) -> bool) -> Vec<(usize, Vec<usize>)> {
    let mut pairs: Vec<(usize, usize)> =
        group_indices.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(i, &g)| (g, i)).collect();
    pairs.sort_unstable();
    pairs
        .chunk_by(|a, b| a.0 == b.0)
        .map(|run| (run[0].0, run.iter().map(|p| p.1).collect()))
        .collect()
}

impl GroupsAccumulator for CalibGroupsAccumulator {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups)?;
        let valid = self.evaluator.valid_rows(values, opt_filter);
        for (g, rows) in bucket(group_indices, valid) {
            self.evaluator.update(&mut self.groups[g], values, Some(&rows))?;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let emitted = emit_to.take_needed(&mut self.groups);
        self.evaluator.column(&emitted)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let emitted = emit_to.take_needed(&mut self.groups);
        let bytes: Vec<Vec<u8>> = emitted.iter().map(Evaluator::to_bytes).collect();
        let column = BinaryArray::from_iter_values(bytes.iter().map(Vec::as_slice));
        Ok(vec![Arc::new(column)])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups)?;
        for (g, rows) in bucket(group_indices, |_| true) {
            self.evaluator.merge_rows(&mut self.groups[g], values, rows.into_iter())?;
        }
        Ok(())
    }

    /// Each row's own state: what DataFusion asks for when it skips partial aggregation
    /// (groups almost as many as rows).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let valid = self.evaluator.valid_rows(values, opt_filter);
        let mut bytes = Vec::with_capacity(values[0].len());
        for i in 0..values[0].len() {
            let mut stream = self.evaluator.empty()?;
            if valid(i) {
                self.evaluator.update(&mut stream, values, Some(&[i]))?;
            }
            bytes.push(Evaluator::to_bytes(&stream));
        }
        let column = BinaryArray::from_iter_values(bytes.iter().map(Vec::as_slice));
        Ok(vec![Arc::new(column)])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self.groups.iter().map(|s| s.state().size_hint()).sum::<usize>()
    }
}
