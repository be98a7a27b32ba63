//! Per-bin statistics: the one value every binned metric is reduced from.

mod bin_stats;

pub use bin_stats::{BinLayout, BinStats, BinSummary};
