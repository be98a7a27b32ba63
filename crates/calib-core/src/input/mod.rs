//! Inputs: what the scores are, validation, and the validated [`Predictions`].
//!
//! Every rule is checked once, before any work: shapes agree, N >= 1, K >= 2 (or binary),
//! labels in `[0, K)`, all values finite, probabilities in `[0, 1]` with rows summing to 1.

mod buffer;
mod kind;
mod predictions;
mod top_labels;
mod validate;
mod values;
mod weights;

pub use buffer::ScoreBuffer;
pub use kind::ScoreKind;
pub use predictions::{HostRows, HostScore, InputConfig, Predictions, RESIDENT_VALUES};
pub use validate::DEFAULT_ROW_SUM_TOLERANCE;
pub use values::HostValues;
pub use weights::SampleWeights;
