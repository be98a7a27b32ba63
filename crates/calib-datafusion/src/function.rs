//! [`CalibAggregate`]: one calib metric as a DataFusion aggregate function,
//! `calib_<metric>(scores, label [, bins])`, and over weighted rows
//! `calib_<metric>_weighted(scores, label, weight [, bins])`.

use std::sync::Arc;

use calib_core::{EvaluationConfig, Metric};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, GroupsAccumulator, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;

use crate::accumulator::CalibAccumulator;
use crate::evaluator::{Evaluator, Output};
use crate::groups::CalibGroupsAccumulator;
use calib_io::table::rows::{is_label_type, is_score_type};

/// One calib metric as an aggregate: `calib_ece(logits, label)`, `calib_nll_probs(probs,
/// label)`, `calib_ece(logits, label, 20)` (bins of a binned metric).
///
/// Scores are a list of floats per row (`FixedSizeList`, `List`, `LargeList`; K classes) or one
/// float per row (binary: the positive-class log-odds, or its probability for `_probs`);
/// labels an integer or boolean column. Rows with a null score or label are skipped, as SQL
/// aggregates skip nulls; a group without rows gives NULL.
///
/// The `_weighted` forms (`calib_ece_weighted(logits, label, w)`, `calib_nll_weighted_probs`,
/// `calib_metrics_weighted`) take a numeric weight column third, the bins fourth: each row
/// weighs `w` in every sum (docs/conventions.md, "Sample weights"); a null weight skips the
/// row, a negative or non-finite one fails the query, and a group of zero weight gives NULL.
///
/// The state is calib's [`calib_core::EvaluationState`] in its binary form (per-bin sums,
/// configuration inside), so partial aggregates merge exactly across partitions and workers.
/// Adaptive-range and sorted-pair metrics (ACE, TACE, RMSCE, the L2 errors, KS, ...) need
/// every row twice or at once, which an aggregate cannot have: planning them fails with a
/// message that says so.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CalibAggregate {
    name: String,
    metrics: Vec<Metric>,
    /// The report values returned: one (a Float64), or several (a struct of them).
    values: Vec<&'static str>,
    single: bool,
    probs: bool,
    /// Whether the third argument is a weight column.
    weighted: bool,
    signature: Signature,
}

/// The one-pass metrics `calib_metrics` computes, and the fields of its struct.
const ALL_METRICS: [Metric; 8] = [
    Metric::Ece,
    Metric::Mce,
    Metric::Sce,
    Metric::ToplabelEce,
    Metric::Nll,
    Metric::Brier,
    Metric::Accuracy,
    Metric::BrierDecomposition,
];
const ALL_VALUES: [&str; 10] = [
    "ece",
    "mce",
    "sce",
    "toplabel_ece",
    "nll",
    "brier",
    "accuracy",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
];

impl CalibAggregate {
    /// The aggregate returning report value `value` of `metric` (`value` is the metric's name
    /// except for the Brier decomposition's three terms); `probs` for probability scores.
    pub fn new(metric: Metric, value: &'static str, probs: bool) -> Self {
        Self::build(format!("calib_{value}"), vec![metric], vec![value], true, probs)
    }

    /// `calib_metrics(scores, label [, bins])`: every one-pass metric from one pass of the
    /// engine, as a struct (`ece`, `mce`, `sce`, `toplabel_ece`, `nll`, `brier`, `accuracy`,
    /// `brier_reliability`, `brier_resolution`, `brier_uncertainty`).
    pub fn all(probs: bool) -> Self {
        Self::build("calib_metrics".into(), ALL_METRICS.to_vec(), ALL_VALUES.to_vec(), false, probs)
    }

    fn build(
        base: String,
        metrics: Vec<Metric>,
        values: Vec<&'static str>,
        single: bool,
        probs: bool,
    ) -> Self {
        let suffix = if probs { "_probs" } else { "" };
        let signature = Signature::user_defined(Volatility::Immutable);
        let name = format!("{base}{suffix}");
        Self { name, metrics, values, single, probs, weighted: false, signature }
    }

    /// The same aggregate over weighted rows: `calib_<value>_weighted[_probs](scores, label,
    /// weight [, bins])`.
    pub fn weighted(mut self) -> Self {
        let suffix = if self.probs { "_probs" } else { "" };
        let base = self.name.strip_suffix(suffix).unwrap_or(&self.name);
        self.name = format!("{base}_weighted{suffix}");
        self.weighted = true;
        self
    }

    /// The position of the bins argument: after the weights, if any.
    fn bins_at(&self) -> usize {
        2 + usize::from(self.weighted)
    }

    /// The metrics computed.
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// Whether a bins argument applies.
    fn is_binned(&self) -> bool {
        self.metrics.iter().any(|m| m.calibration_error(15, 15, 0.0).is_some())
    }

    /// Why the metric cannot be an aggregate, if it cannot.
    fn unsupported(&self) -> Option<String> {
        let metric = self.metrics[0];
        let config = EvaluationConfig::new().with_metrics(vec![metric]);
        if !self.single || config.is_one_pass(metric) {
            return None;
        }
        let why = if metric.uses_pairs() {
            "sorts or smooths all rows at once"
        } else if metric.needs_all_rows() {
            "refits on all rows at once"
        } else {
            "cuts adaptive ranges at ranks of all rows, which takes a second pass over them"
        };
        Some(format!(
            "{}: {} {why}; an SQL aggregate sees each row once. Use `calib eval` on the files \
             (it runs the passes; docs/scale.md)",
            self.name,
            metric.name()
        ))
    }

    /// The result type: Float64, or a struct of Float64 fields.
    fn result_type(&self) -> DataType {
        if self.single {
            return DataType::Float64;
        }
        let fields: Vec<Field> =
            self.values.iter().map(|v| Field::new(*v, DataType::Float64, true)).collect();
        DataType::Struct(fields.into())
    }

    /// The evaluator `args` configure (bins from a literal last argument).
    fn evaluator(&self, args: &AccumulatorArgs) -> Result<Evaluator> {
        let mut config = EvaluationConfig::new().with_metrics(self.metrics.clone());
        if let Some(expr) = args.exprs.get(self.bins_at()) {
            let bins = match expr.downcast_ref::<Literal>().map(Literal::value) {
                Some(ScalarValue::Int64(Some(b))) if *b >= 1 => *b as usize,
                _ => return exec_err!("{}: bins must be a literal integer >= 1", self.name),
            };
            config = config.with_n_bins(bins).with_n_ranges(bins);
        }
        let output = Output { values: self.values.clone(), result: self.result_type() };
        Ok(Evaluator::new(self.name.clone(), config, output, (self.probs, self.weighted)))
    }
}

impl AggregateUDFImpl for CalibAggregate {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let (name, bins_at) = (&self.name, self.bins_at());
        let max = if self.is_binned() { bins_at + 1 } else { bins_at };
        if arg_types.len() < bins_at || arg_types.len() > max {
            let weight = if self.weighted { ", weight" } else { "" };
            let bins = if self.is_binned() { " [, bins]" } else { "" };
            let got = arg_types.len();
            return plan_err!("{name} takes (scores, label{weight}{bins}), got {got} arguments");
        }
        if !is_score_type(&arg_types[0]) {
            return plan_err!(
                "{name}: scores must be a list of floats (or one float, binary), found {}",
                arg_types[0]
            );
        }
        if !is_label_type(&arg_types[1]) {
            return plan_err!(
                "{name}: labels must be integers or booleans, found {}",
                arg_types[1]
            );
        }
        if self.weighted && !arg_types[2].is_numeric() {
            return plan_err!("{name}: weights must be numbers, found {}", arg_types[2]);
        }
        if arg_types.get(bins_at).is_some_and(|t| !t.is_integer()) {
            return plan_err!("{name}: bins must be an integer, found {}", arg_types[bins_at]);
        }
        let mut out = vec![arg_types[0].clone(), DataType::Int64];
        if self.weighted {
            out.push(DataType::Float64);
        }
        if arg_types.len() > bins_at {
            out.push(DataType::Int64);
        }
        Ok(out)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        match self.unsupported() {
            Some(why) => plan_err!("{why}"),
            None => Ok(self.result_type()),
        }
    }

    fn is_nullable(&self) -> bool {
        true
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(CalibAccumulator::new(self.evaluator(&args)?)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let name = format_state_name(args.name, "calib_state");
        Ok(vec![Arc::new(Field::new(name, DataType::Binary, true))])
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(CalibGroupsAccumulator::new(self.evaluator(&args)?)))
    }
}
