//! Per-bin statistics: the one value every binned metric is reduced from; and the numerical
//! pieces the estimators share (special functions, ranks, a bracketed Newton solve).

mod bin_stats;
mod interval;
mod newton;
mod rank;
mod special;

pub use bin_stats::{BinLayout, BinStats, BinSummary};
pub use interval::AccuracyInterval;
pub use newton::newton_in_bracket;
pub use rank::{average_ranks, spearman};
pub use special::{beta_inc, beta_quantile, normal_quantile};
