//! What a worker agrees to run: every node of a received plan must be one of the kinds calib's
//! queries are made of, checked after the plan is decoded and before it is registered. A
//! worker runs file scans (Parquet, CSV, JSON, Arrow; through its data root), filters,
//! projections, aggregates (calib's and DataFusion's built-ins: unknown functions fail to decode),
//! sorts, limits, unions, repartitions and datafusion-distributed's exchange nodes. Any other
//! node (a join, which can multiply rows without bound; a write; a recursive query; a generated
//! or in-memory table; a node of someone else's codec) fails the task, naming the node, before
//! it runs.

use std::any::Any;
use std::sync::Arc;

use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{WorkerPlanRewriteEvent, WorkerPlanRewriteEventResponse};

/// The node kinds a worker runs, by [`ExecutionPlan::name`] (a `DataSourceExec` also needs a
/// file scan of a format in [`FILE_FORMATS`]).
const NODES: &[&str] = &[
    "DataSourceExec",
    "ProjectionExec",
    "FilterExec",
    "AggregateExec",
    "RepartitionExec",
    "CoalescePartitionsExec",
    "CoalesceBatchesExec",
    "CooperativeExec",
    "SortExec",
    "SortPreservingMergeExec",
    "PartialSortExec",
    "GlobalLimitExec",
    "LocalLimitExec",
    "UnionExec",
    "InterleaveExec",
    "EmptyExec",
    "PlaceholderRowExec",
    // datafusion-distributed's stages and exchanges.
    "NetworkShuffleExec",
    "NetworkCoalesceExec",
    "NetworkBroadcastExec",
    "BroadcastExec",
    "PartitionIsolatorExec",
    "ChildrenIsolatorUnionExec",
    "DistributedLeafExec",
    "SamplerExec",
    "MetricsWrapperExec",
];

/// The file formats a worker scans.
const FILE_FORMATS: &[&str] = &["parquet", "csv", "json", "arrow"];

/// A worker's plan-rewrite handler that rewrites nothing: it passes a plan made of [`NODES`]
/// alone and fails any other.
pub(crate) fn admit_plan(event: WorkerPlanRewriteEvent) -> Result<WorkerPlanRewriteEventResponse> {
    check(&event.plan)?;
    Ok(WorkerPlanRewriteEventResponse::new(event.plan))
}

/// `Ok` when `plan` and all its inputs are nodes a worker runs.
fn check(plan: &Arc<dyn ExecutionPlan>) -> Result<()> {
    let name = plan.name();
    if !NODES.contains(&name) {
        return Err(refused(name));
    }
    if let Some(source) = plan.downcast_ref::<DataSourceExec>() {
        let source: &dyn Any = source.data_source().as_ref();
        let format = source.downcast_ref::<FileScanConfig>().map(|s| s.file_source().file_type());
        match format {
            Some(format) if FILE_FORMATS.contains(&format) => {}
            Some(format) => return Err(refused(&format!("a {format} scan"))),
            None => return Err(refused("a DataSourceExec that reads no file")),
        }
    }
    plan.children().into_iter().try_for_each(check)
}

fn refused(node: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "the calib worker refuses a plan with {node}: it runs file scans, filters, projections, \
         aggregates, sorts, limits, unions and exchanges only"
    ))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion::physical_plan::joins::CrossJoinExec;
    use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
    use datafusion::physical_plan::union::UnionExec;

    use super::*;

    #[test]
    fn joins_and_in_memory_tables_are_refused_by_name() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
        let empty: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::clone(&schema)));
        let row: Arc<dyn ExecutionPlan> = Arc::new(PlaceholderRowExec::new(schema));
        assert!(check(&empty).is_ok());
        let union = UnionExec::try_new(vec![Arc::clone(&empty), row]).unwrap();
        assert!(check(&union).is_ok());
        let join: Arc<dyn ExecutionPlan> = Arc::new(CrossJoinExec::new(Arc::clone(&empty), empty));
        let e = check(&join).unwrap_err().to_string();
        assert!(e.contains("refuses a plan with CrossJoinExec"), "{e}");
        let nested = UnionExec::try_new(vec![Arc::clone(&join), join]).unwrap();
        assert!(check(&nested).unwrap_err().to_string().contains("CrossJoinExec"));
    }
}
