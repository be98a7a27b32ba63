//! Per-bin statistics: the one value every binned metric is reduced from.

mod bin_stats;
mod interval;
mod rank;
mod special;

pub use bin_stats::{BinLayout, BinStats, BinSummary};
pub use interval::AccuracyInterval;
pub use rank::{average_ranks, spearman};
pub use special::{beta_inc, beta_quantile, normal_quantile};
