//! [`BinStats`]: count, sum of scores and sum of outcomes per (group, bin), mergeable.
//!
//! For a set of `(score s, outcome o)` pairs in one bin: `n_b`, `conf_b = mean(s)`,
//! `acc_b = mean(o)` (docs/conventions.md, "Per-bin statistics"). Sums are kept in f64.

use serde::{Deserialize, Serialize};

use crate::error::{CalibError, Result};

/// How the bins of a [`BinStats`] were formed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinLayout {
    /// Static right-closed bins between these `B + 1` edges (even or custom).
    Edges(Vec<f64>),
    /// `n_ranges` equal-mass ranges of the whole set (not mergeable: ranges depend on all rows).
    Adaptive {
        /// R.
        n_ranges: usize,
    },
}

impl BinLayout {
    /// Number of bins.
    pub fn n_bins(&self) -> usize {
        match self {
            Self::Edges(e) => e.len() - 1,
            Self::Adaptive { n_ranges } => *n_ranges,
        }
    }
}

/// Per-(group, bin) sufficient statistics, group-major (`index = group * n_bins + bin`).
///
/// A group is a class column (class-wise metrics), a predicted class (top-label by class) or
/// the whole set. Statistics of static bins merge: `a.merge(&b)` equals the statistics of the
/// concatenated rows, so large sets can be processed in chunks or shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinStats {
    /// How the bins were formed.
    pub layout: BinLayout,
    /// Number of groups G.
    pub n_groups: usize,
    /// `n_b` per (group, bin), `[G * B]`.
    pub count: Vec<f64>,
    /// `sum(s)` per (group, bin), `[G * B]`.
    pub sum_score: Vec<f64>,
    /// `sum(o)` per (group, bin), `[G * B]`.
    pub sum_outcome: Vec<f64>,
}

/// One bin of one group, as a reliability diagram draws it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BinSummary {
    /// Number of pairs in the bin.
    pub count: f64,
    /// Mean score (confidence), `None` when empty.
    pub confidence: Option<f64>,
    /// Mean outcome (accuracy), `None` when empty.
    pub accuracy: Option<f64>,
    /// Lower edge (static bins only).
    pub lower: Option<f64>,
    /// Upper edge (static bins only).
    pub upper: Option<f64>,
}

impl BinStats {
    /// All-zero statistics for `n_groups` groups.
    pub fn zeros(layout: BinLayout, n_groups: usize) -> Self {
        let len = n_groups * layout.n_bins();
        Self {
            layout,
            n_groups,
            count: vec![0.0; len],
            sum_score: vec![0.0; len],
            sum_outcome: vec![0.0; len],
        }
    }

    /// Number of bins B.
    pub fn n_bins(&self) -> usize {
        self.layout.n_bins()
    }

    /// Adds the sums `[count, sum of scores, sum of outcomes]` of some pairs to `(group, bin)`.
    pub(crate) fn add_sums(&mut self, group: usize, bin: usize, sums: [f64; 3]) {
        let i = group * self.layout.n_bins() + bin;
        self.count[i] += sums[0];
        self.sum_score[i] += sums[1];
        self.sum_outcome[i] += sums[2];
    }

    /// Adds one pair of sample weight `w` to (group, bin): `w`, `w s` and `w y` to its sums.
    #[inline]
    pub fn add_weighted(&mut self, group: usize, bin: usize, score: f64, outcome: f64, w: f64) {
        self.add_sums(group, bin, [w, w * score, w * outcome]);
    }

    /// Adds one pair to (group, bin).
    #[inline]
    pub fn add(&mut self, group: usize, bin: usize, score: f64, outcome: f64) {
        let i = group * self.n_bins() + bin;
        self.count[i] += 1.0;
        self.sum_score[i] += score;
        self.sum_outcome[i] += outcome;
    }

    /// Statistics of the rows of `self` and `other` together.
    ///
    /// # Errors
    /// [`CalibError::Incompatible`] for different bins or group counts, or adaptive ranges
    /// (their ranges depend on every row, so they do not merge).
    pub fn merge(&self, other: &Self) -> Result<Self> {
        if matches!(self.layout, BinLayout::Adaptive { .. }) {
            return Err(CalibError::Incompatible(
                "adaptive ranges depend on all rows; recompute them on the whole set".into(),
            ));
        }
        if self.layout != other.layout || self.n_groups != other.n_groups {
            return Err(CalibError::Incompatible(format!(
                "{:?} x {} groups vs {:?} x {} groups",
                self.layout, self.n_groups, other.layout, other.n_groups
            )));
        }
        let add = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x + y).collect();
        Ok(Self {
            layout: self.layout.clone(),
            n_groups: self.n_groups,
            count: add(&self.count, &other.count),
            sum_score: add(&self.sum_score, &other.sum_score),
            sum_outcome: add(&self.sum_outcome, &other.sum_outcome),
        })
    }

    /// Adds `other` into `self` (same layout; used when accumulating chunks).
    pub(crate) fn accumulate(&mut self, other: &Self) {
        for (a, b) in [
            (&mut self.count, &other.count),
            (&mut self.sum_score, &other.sum_score),
            (&mut self.sum_outcome, &other.sum_outcome),
        ] {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
    }

    /// All groups summed into one (static bins: the pooled statistics).
    pub fn pooled(&self) -> Self {
        let b = self.n_bins();
        let mut out = Self::zeros(self.layout.clone(), 1);
        for g in 0..self.n_groups {
            for j in 0..b {
                let i = g * b + j;
                out.count[j] += self.count[i];
                out.sum_score[j] += self.sum_score[i];
                out.sum_outcome[j] += self.sum_outcome[i];
            }
        }
        out
    }

    /// Number of pairs in `group`.
    pub fn group_count(&self, group: usize) -> f64 {
        let b = self.n_bins();
        self.count[group * b..(group + 1) * b].iter().sum()
    }

    /// The bins of `group`, with means and edges.
    pub fn summaries(&self, group: usize) -> Vec<BinSummary> {
        let b = self.n_bins();
        (0..b)
            .map(|j| {
                let i = group * b + j;
                let n = self.count[i];
                let (lower, upper) = match &self.layout {
                    BinLayout::Edges(e) => (Some(e[j]), Some(e[j + 1])),
                    BinLayout::Adaptive { .. } => (None, None),
                };
                BinSummary {
                    count: n,
                    confidence: (n > 0.0).then(|| self.sum_score[i] / n),
                    accuracy: (n > 0.0).then(|| self.sum_outcome[i] / n),
                    lower,
                    upper,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(pairs: &[(usize, usize, f64, f64)]) -> BinStats {
        let mut s = BinStats::zeros(BinLayout::Edges(vec![0.0, 0.5, 1.0]), 2);
        pairs.iter().for_each(|&(g, b, x, o)| s.add(g, b, x, o));
        s
    }

    #[test]
    fn merge_equals_concatenation() {
        let a = [(0, 0, 0.2, 1.0), (1, 1, 0.9, 0.0)];
        let b = [(0, 0, 0.4, 0.0), (0, 1, 0.7, 1.0)];
        let both: Vec<_> = a.iter().chain(&b).copied().collect();
        assert_eq!(stats(&a).merge(&stats(&b)).unwrap(), stats(&both));
    }

    #[test]
    fn merge_refuses_other_bins_and_adaptive() {
        let a = stats(&[]);
        let other = BinStats::zeros(BinLayout::Edges(vec![0.0, 1.0]), 2);
        assert!(a.merge(&other).is_err());
        let ad = BinStats::zeros(BinLayout::Adaptive { n_ranges: 2 }, 2);
        assert!(ad.merge(&ad).is_err());
    }

    #[test]
    fn serde_round_trip() {
        let s = stats(&[(0, 0, 0.2, 1.0), (1, 1, 0.9, 0.0)]);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<BinStats>(&json).unwrap(), s);
    }
}
