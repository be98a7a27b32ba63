//! Running SQL with calib's aggregates: a session that reads files named in the query
//! (`FROM 'preds/*.parquet'`), a blocking runner, and result rows as JSON objects or text.

use std::sync::OnceLock;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use serde_json::{Map, Value, json};

/// A single-node session with calib's aggregates, where a quoted path or glob is a table
/// (`SELECT ... FROM 'preds/*.parquet'`).
pub fn local_context() -> SessionContext {
    let builder = SessionStateBuilder::new()
        .with_config(SessionConfig::new().with_information_schema(true))
        .with_default_features();
    let state = crate::with_udafs(builder).build();
    SessionContext::new_with_state(state).enable_url_table()
}

/// Runs `sql` in `ctx` to completion on the process's Tokio runtime. A result without rows is
/// one empty batch, so its columns are still known.
///
/// # Errors
/// DataFusion's planning and execution errors (calib's say which aggregate and row).
pub fn run_blocking(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    run_blocking_within(ctx, sql, None)
}

/// [`run_blocking`], given up after `limit` (if any): the query is dropped (its tasks on
/// workers with it) and an error says how long it ran.
///
/// # Errors
/// As [`run_blocking`]; [`DataFusionError::ResourcesExhausted`] past `limit`.
pub fn run_blocking_within(
    ctx: &SessionContext,
    sql: &str,
    limit: Option<std::time::Duration>,
) -> Result<Vec<RecordBatch>> {
    let query = async {
        let frame = ctx.sql(sql).await?;
        let schema = std::sync::Arc::new(frame.schema().as_arrow().clone());
        let batches = frame.collect().await?;
        Ok(if batches.is_empty() { vec![RecordBatch::new_empty(schema)] } else { batches })
    };
    runtime()?.block_on(async {
        let Some(limit) = limit else { return query.await };
        tokio::time::timeout(limit, query).await.unwrap_or_else(|_| {
            Err(DataFusionError::ResourcesExhausted(format!(
                "the query ran past its time limit of {} s and was stopped",
                limit.as_secs_f64()
            )))
        })
    })
}

/// The physical plan of `sql` in `ctx`, as text (DataFusion's indented form).
///
/// # Errors
/// DataFusion's planning errors.
pub fn explain_blocking(ctx: &SessionContext, sql: &str) -> Result<String> {
    let plan = runtime()?.block_on(async { ctx.sql(sql).await?.create_physical_plan().await })?;
    Ok(datafusion::physical_plan::displayable(plan.as_ref()).indent(true).to_string())
}

/// The process's multi-threaded Tokio runtime, built once: a cluster session caches its gRPC
/// channels to the workers, which live on the runtime that opened them (with a runtime per
/// query, a second query on the same session found its channels dead: "Service was not
/// ready").
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    let built = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())
    });
    built.as_ref().map_err(|e| DataFusionError::Execution(format!("tokio runtime: {e}")))
}

/// The rows of `batches` as JSON objects (column name -> value): numbers as numbers (NaN and
/// infinities as null), strings, booleans, null, structs as objects (`calib_metrics`); other
/// types as their display text.
pub fn to_json_rows(batches: &[RecordBatch]) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for batch in batches {
        let schema = batch.schema();
        for row in 0..batch.num_rows() {
            let mut object = Map::new();
            for (field, column) in schema.fields().iter().zip(batch.columns()) {
                object.insert(field.name().clone(), json_value(column.as_ref(), row));
            }
            out.push(object);
        }
    }
    out
}

/// Column names and the rows of `batches` as display text.
///
/// # Errors
/// Arrow's, for a type without a display form.
pub fn to_text_rows(batches: &[RecordBatch]) -> Result<(Vec<String>, Vec<Vec<String>>)> {
    let names = match batches.first() {
        Some(b) => b.schema().fields().iter().map(|f| f.name().clone()).collect(),
        None => Vec::new(),
    };
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<ArrayFormatter> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<std::result::Result<_, _>>()?;
        for row in 0..batch.num_rows() {
            rows.push(formatters.iter().map(|f| f.value(row).to_string()).collect());
        }
    }
    Ok((names, rows))
}

/// One cell as JSON.
fn json_value(column: &dyn Array, row: usize) -> Value {
    if column.is_null(row) {
        return Value::Null;
    }
    let finite = |v: f64| if v.is_finite() { json!(v) } else { Value::Null };
    match column.data_type() {
        DataType::Float64 => finite(column.as_primitive::<Float64Type>().value(row)),
        DataType::Float32 => finite(f64::from(column.as_primitive::<Float32Type>().value(row))),
        DataType::Int8 => json!(column.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => json!(column.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => json!(column.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => json!(column.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => json!(column.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => json!(column.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => json!(column.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => json!(column.as_primitive::<UInt64Type>().value(row)),
        DataType::Boolean => json!(column.as_boolean().value(row)),
        DataType::Utf8 => json!(column.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => json!(column.as_string::<i64>().value(row)),
        DataType::Utf8View => json!(column.as_string_view().value(row)),
        DataType::Struct(fields) => {
            let s = column.as_struct();
            let object = fields
                .iter()
                .zip(s.columns())
                .map(|(f, c)| (f.name().clone(), json_value(c.as_ref(), row)))
                .collect();
            Value::Object(object)
        }
        _ => {
            let options = FormatOptions::default();
            match ArrayFormatter::try_new(column, &options) {
                Ok(f) => json!(f.value(row).to_string()),
                Err(_) => Value::Null,
            }
        }
    }
}
