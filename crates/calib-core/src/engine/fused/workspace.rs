//! Working memory the fused engine keeps from one evaluation to the next.

use super::class_columns::GroupColumns;

/// Buffers the fused engine ([`Engine::Fused`](crate::Engine::Fused)) reuses between
/// evaluations: the class columns of the adaptive class-wise metrics (ACE, TACE), `8 N` bytes
/// per class of a group of 16 to 128 classes per thread (18 MiB per thread where `N` allows,
/// e.g. 48 classes, 19 MB, at N = 50,000).
///
/// [`EvaluationConfig::evaluate`](crate::EvaluationConfig::evaluate) takes fresh memory every
/// call, and fresh memory costs a page fault per 4 KiB on first touch. Keep a workspace
/// ([`EvaluationConfig::evaluate_in`](crate::EvaluationConfig::evaluate_in)) when evaluating
/// repeatedly, e.g. across the epochs of a training loop. Results are the same bits with or without one, whatever the
/// inputs it served before. Dropping it frees the memory.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use calib_core::{input::Predictions, EvaluationConfig, Metric, Workspace};
///
/// let device = Device::flex();
/// let logits = Tensor::<2>::from_data([[2.0, 0.5, 0.1], [0.1, 1.5, 0.2]], &device);
/// let labels = Tensor::<1, Int>::from_data([0, 2], &device);
/// let preds = Predictions::logits(logits, labels).unwrap();
/// let config = EvaluationConfig::new().with_metrics(vec![Metric::Ace]);
/// let mut workspace = Workspace::new();
/// for _epoch in 0..3 {
///     let kept = config.evaluate_in(&preds, &mut workspace).unwrap();
///     assert_eq!(kept, config.evaluate(&preds).unwrap());
/// }
/// assert!(workspace.bytes() > 0);
/// ```
#[derive(Debug, Default)]
pub struct Workspace {
    /// One set of class-column buffers per worker thread.
    pub(super) columns: Vec<GroupColumns>,
}

impl Workspace {
    /// An empty workspace (no memory until an evaluation uses it).
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of buffer capacity held.
    pub fn bytes(&self) -> usize {
        self.columns.iter().map(GroupColumns::bytes).sum()
    }
}
