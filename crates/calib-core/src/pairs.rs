//! [`ScorePairs`]: one (score, outcome) pair per row, the input of the estimators that sort or
//! smooth scores instead of binning them (binning-free tests, smooth ECE, the reliability
//! curve).
//!
//! ```text
//! binary input:  (s_i, y_i)
//! top-label:     (max_k p_ik, 1[argmax_k p_ik = y_i])     argmax ties to the lowest class
//! class k:       (p_ik, 1[y_i = k])
//! ```

use crate::error::Result;
use crate::input::{HostValues, Predictions, ScoreKind};
use calib_kernels::{Score, max_and_argmax};

/// Scores and 0/1 outcomes, in row order.
#[derive(Debug, Clone, PartialEq)]
pub struct ScorePairs {
    /// Scores in `[0, 1]`.
    pub scores: Vec<f64>,
    /// Outcomes, 0 or 1.
    pub outcomes: Vec<f64>,
}

/// Which pairs to take from K-class predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairSet {
    /// The top-label confidence and whether the prediction is right (binary input: the
    /// positive-class score and the label).
    TopLabel,
    /// Column `k` and whether the label is `k`.
    Class(usize),
}

impl ScorePairs {
    /// The pairs `set` names, read from `preds` (one read-back for device storage).
    ///
    /// # Errors
    /// [`crate::CalibError::Backend`] when the rows cannot be read back;
    /// [`crate::CalibError::InvalidConfig`] for a class outside `[0, K)`.
    pub fn of(preds: &Predictions, set: PairSet) -> Result<Self> {
        let (values, labels) = preds.host_rows()?;
        let (kind, width) = (preds.kind(), preds.n_columns());
        if let PairSet::Class(k) = set
            && (k >= preds.n_classes() || kind == ScoreKind::Binary && k > 1)
        {
            return Err(crate::CalibError::InvalidConfig(format!(
                "class {k} outside [0, {})",
                preds.n_classes()
            )));
        }
        Ok(match values {
            HostValues::F32(v) => pairs(&v, width, &labels, kind, set),
            HostValues::F64(v) => pairs(&v, width, &labels, kind, set),
        })
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// Row indices in ascending score order, ties in row order (a stable sort).
    pub fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| self.scores[a].total_cmp(&self.scores[b]));
        order
    }

    /// The pairs in ascending score order (ties in row order) and the row of each.
    pub fn sorted(&self) -> (ScorePairs, Vec<usize>) {
        let order = self.order();
        let pick = |v: &[f64]| order.iter().map(|&i| v[i]).collect();
        (ScorePairs { scores: pick(&self.scores), outcomes: pick(&self.outcomes) }, order)
    }
}

fn pairs<T: Score>(
    values: &[T],
    width: usize,
    labels: &[i64],
    kind: ScoreKind,
    set: PairSet,
) -> ScorePairs {
    let n = labels.len();
    let (mut scores, mut outcomes) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (row, &y) in values.chunks_exact(width).zip(labels) {
        let (s, hit) = match (kind, set) {
            (ScoreKind::Binary, PairSet::TopLabel | PairSet::Class(1)) => (row[0].into(), y == 1),
            (ScoreKind::Binary, PairSet::Class(_)) => (1.0 - row[0].into(), y == 0),
            (_, PairSet::TopLabel) => {
                let (top, c) = max_and_argmax(row);
                (probability(row, top.into(), c, kind), c as i64 == y)
            }
            (_, PairSet::Class(k)) => {
                let top: f64 = max_and_argmax(row).0.into();
                (probability(row, top, k, kind), k as i64 == y)
            }
        };
        scores.push(s);
        outcomes.push(f64::from(u8::from(hit)));
    }
    ScorePairs { scores, outcomes }
}

/// `p[c]` of a row whose largest value is `top`: the value itself for probabilities, the
/// stable softmax for logits.
pub(crate) fn probability<T: Score>(row: &[T], top: f64, c: usize, kind: ScoreKind) -> f64 {
    if kind == ScoreKind::Probabilities {
        return row[c].into();
    }
    let sum: f64 = row.iter().map(|&v| (v.into() - top).exp()).sum();
    (row[c].into() - top).exp() / sum
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::input::InputConfig;

    #[test]
    fn top_label_and_class_pairs_of_logits_probabilities_and_binary_scores() {
        let device = Device::flex();
        let logits = [0.0f64, 1.0f64.ln(), 2.0f64.ln(), 2.0f64.ln()]; // rows [1, 1], [2, 2]
        let labels = [1, 0];
        let config = InputConfig::new(ScoreKind::Logits);
        let preds = Predictions::from_host(&logits, 2, &labels, config, &device).unwrap();
        let top = ScorePairs::of(&preds, PairSet::TopLabel).unwrap();
        assert_eq!(top.outcomes, vec![0.0, 1.0], "ties go to class 0");
        assert!(top.scores.iter().all(|s| (s - 0.5).abs() < 1e-15));
        let probs = [0.2f64, 0.8, 0.6, 0.4];
        let config = InputConfig::new(ScoreKind::Probabilities);
        let preds = Predictions::from_host(&probs, 2, &labels, config, &device).unwrap();
        let class0 = ScorePairs::of(&preds, PairSet::Class(0)).unwrap();
        assert_eq!((class0.scores, class0.outcomes), (vec![0.2, 0.6], vec![0.0, 1.0]));
        assert!(ScorePairs::of(&preds, PairSet::Class(2)).is_err());
        let config = InputConfig::new(ScoreKind::Binary);
        let preds = Predictions::from_host(&[0.3f64, 0.9], 1, &labels, config, &device).unwrap();
        let top = ScorePairs::of(&preds, PairSet::TopLabel).unwrap();
        assert_eq!((top.scores, top.outcomes), (vec![0.3, 0.9], vec![1.0, 0.0]));
    }

    #[test]
    fn order_is_stable() {
        let pairs = ScorePairs { scores: vec![0.5, 0.1, 0.5, 0.1], outcomes: vec![0.0; 4] };
        assert_eq!(pairs.order(), vec![1, 3, 0, 2]);
    }
}
