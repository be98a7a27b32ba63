//! Working memory the fused engine keeps from one evaluation to the next.

use super::class_columns::GroupColumns;

/// Buffers the fused engine ([`Engine::Fused`](super::Engine::Fused)) reuses between
/// evaluations: the class columns of the adaptive class-wise metrics (ACE, TACE), `8 N` bytes
/// per class of a group of 16 to 128 classes per thread (64 MiB per thread where `N` allows,
/// e.g. 51 MB at N = 50,000).
///
/// [`EvaluationConfig::evaluate`](crate::EvaluationConfig::evaluate) takes fresh memory every
/// call, and fresh memory costs a page fault per 4 KiB on first touch: 0.9x for the full
/// metric set at 50,000 x 1,000 when a workspace is kept
/// ([`EvaluationConfig::evaluate_in`](crate::EvaluationConfig::evaluate_in)), e.g. across the
/// epochs of a training loop. Results are the same bits with or without one, whatever the
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

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::input::{InputConfig, Predictions, ScoreKind};
    use crate::synthetic::overconfident_logits;
    use crate::{Engine, EvaluationConfig, Metric};

    /// Rows of softmax probabilities of `logits` (`k` columns).
    fn softmax(logits: &[f32], k: usize) -> Vec<f64> {
        logits
            .chunks_exact(k)
            .flat_map(|row| {
                let max = row.iter().fold(f32::MIN, |m, &v| m.max(v)) as f64;
                let e: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp()).collect();
                let s: f64 = e.iter().sum();
                e.into_iter().map(move |x| x / s)
            })
            .collect()
    }

    #[test]
    fn a_reused_workspace_gives_the_reports_of_fresh_memory() {
        let device = Device::flex();
        let metric_sets =
            [vec![Metric::Ace, Metric::Tace, Metric::Sce], vec![Metric::Tace], vec![Metric::Ace]];
        let mut workspace = Workspace::new();
        // Shapes that grow, shrink and change the group width (k > 128: a narrower last
        // group), on logits and probabilities, so buffers are reused, resized and left over.
        for (i, (n, k)) in
            [(300, 150), (120, 20), (300, 150), (500, 7), (90, 260)].iter().enumerate()
        {
            let (logits, labels) = overconfident_logits(*n, *k, 0.8, 2.0, i as u64);
            let inputs = [
                Predictions::from_host(&logits, *k, &labels, InputConfig::default(), &device),
                Predictions::from_host(
                    &softmax(&logits, *k),
                    *k,
                    &labels,
                    InputConfig::new(ScoreKind::Probabilities),
                    &device,
                ),
            ];
            for preds in inputs {
                let preds = preds.expect("valid input");
                for metrics in &metric_sets {
                    let config = EvaluationConfig::new()
                        .with_metrics(metrics.clone())
                        .with_engine(Engine::Fused);
                    let kept = config.evaluate_in(&preds, &mut workspace).expect("evaluates");
                    let fresh = config.evaluate(&preds).expect("evaluates");
                    assert_eq!(kept, fresh, "n={n} k={k} {metrics:?}");
                }
            }
            assert!(workspace.bytes() >= 8 * n, "the full columns stay: {}", workspace.bytes());
        }
    }
}
