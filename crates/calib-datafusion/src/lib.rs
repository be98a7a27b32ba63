//! calib's metrics as DataFusion aggregate functions, on one machine or on
//! datafusion-distributed workers.
//!
//! [`register`] adds `calib_<metric>(scores, label [, bins])` for every metric that merges
//! across partitions (ECE, MCE, SCE, top-label ECE, NLL, Brier and its three terms, accuracy),
//! each with a `calib_<metric>_probs` twin for probability scores, and `calib_metrics(scores,
//! label)`, a struct of all of them from one pass of the engine (one aggregate per metric
//! runs the engine once each). The state of a partial
//! aggregate is calib's [`calib_core::EvaluationState`] (per-bin sums with the configuration
//! inside), so `GROUP BY model, epoch` over many files and workers gives the single-pass answer
//! up to the order of floating-point additions.
//!
//! [`udafs`] and [`with_udafs`] give the aggregates for a session of one's own; [`sql`] runs
//! queries over quoted file paths; [`distributed`] (feature `distributed`) serves workers and
//! plans queries over them; [`rows`] (calib-io's) is what a score and a label column mean.
//!
//! ```
//! use calib_datafusion::{register, sql::run_blocking};
//! use datafusion::prelude::SessionContext;
//!
//! let ctx = SessionContext::new();
//! register(&ctx);
//! let batches = run_blocking(&ctx, "SELECT calib_ece(s, y) AS ece, calib_accuracy(s, y) AS acc \
//!     FROM (VALUES ([2.0, 0.0], 0), ([0.5, 1.0], 0), ([0.0, 3.0], 1)) AS t(s, y)")?;
//! let rows = calib_datafusion::sql::to_json_rows(&batches);
//! assert!((rows[0]["acc"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
//! # Ok::<(), datafusion::error::DataFusionError>(())
//! ```

mod accumulator;
#[cfg(feature = "distributed")]
mod admission;
#[cfg(feature = "distributed")]
mod auth;
#[cfg(feature = "distributed")]
mod channels;
#[cfg(feature = "distributed")]
mod data_root;
#[cfg(feature = "distributed")]
pub mod distributed;
mod evaluator;
mod function;
mod groups;
#[cfg(feature = "distributed")]
mod plan_rules;
pub mod sql;
#[cfg(feature = "distributed")]
mod tls;

use std::sync::Arc;

use calib_core::Metric;
use datafusion::logical_expr::AggregateUDF;
use datafusion::prelude::SessionContext;

pub use calib_io::RowsError;
pub use calib_io::table::rows;
pub use datafusion;
pub use function::CalibAggregate;

/// Every calib aggregate: one per report value of every metric, for logits and for
/// probabilities, over plain and weighted rows (adaptive and sorted-pair metrics included:
/// planning them fails with a message saying why).
pub fn udafs() -> Vec<Arc<AggregateUDF>> {
    let mut out = Vec::new();
    for metric in Metric::ALL {
        let values: &[&'static str] = match metric {
            Metric::BrierDecomposition => {
                &["brier_reliability", "brier_resolution", "brier_uncertainty"]
            }
            m => &[m.name()],
        };
        for &value in values {
            for probs in [false, true] {
                let f = CalibAggregate::new(metric, value, probs);
                out.push(Arc::new(AggregateUDF::from(f.clone().weighted())));
                out.push(Arc::new(AggregateUDF::from(f)));
            }
        }
    }
    for probs in [false, true] {
        let all = CalibAggregate::all(probs);
        out.push(Arc::new(AggregateUDF::from(all.clone().weighted())));
        out.push(Arc::new(AggregateUDF::from(all)));
    }
    out
}

/// `builder` with [`udafs`] added to its aggregate functions (DataFusion's own kept).
pub fn with_udafs(
    mut builder: datafusion::execution::SessionStateBuilder,
) -> datafusion::execution::SessionStateBuilder {
    builder.aggregate_functions().get_or_insert_with(Vec::new).extend(udafs());
    builder
}

/// Registers [`udafs`] in `ctx`.
pub fn register(ctx: &SessionContext) {
    for f in udafs() {
        ctx.register_udaf(f.as_ref().clone());
    }
}
