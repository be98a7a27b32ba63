//! [`SortedPairs`]: calibration pairs sorted by score with running sums of their weights, what
//! the binning fits (histogram binning, BBQ) count in their bins.
//!
//! ```text
//! W_j = sum_{i < j} w_(i)   P_j = sum_{i < j} w_(i) y_(i)   S_j = sum_{i < j} w_(i) s_(i)
//!                                                                     (sorted order, stable)
//! bin (a, b]: weight W_hi - W_lo, positives' weight P_hi - P_lo
//! equal-mass edge r: c = floor(r W / B) for whole-number weights (the repeated rows'
//!                    position), r W / B otherwise;
//!                    (s of the first row with W_{i+1} >= c + s of the first with W_{i+1} > c) / 2
//! ```
//! Unit weights (no weights) give the rows' counts and the unweighted edges
//! `(s_(c-1) + s_(c)) / 2`; whole-number weights give exactly the sums and edges of the repeated
//! rows (`docs/conventions.md`, "Sample weights").

use calib_core::binning::weighted_range_start;
use calib_core::input::SampleWeights;

use super::isotonic::{SortedOutcomes, weighted_sorted};

/// Pairs sorted by score with running sums of weight and of positive outcomes' weight.
#[derive(Debug, Clone)]
pub(crate) struct SortedPairs {
    /// The scores, ascending (stable on ties).
    pub(crate) scores: Vec<f64>,
    /// `weight[j]`: the total weight of the first `j` pairs (`n + 1` values from 0).
    weight: Vec<f64>,
    /// `positive[j]`: the weight of the positive outcomes among the first `j` pairs.
    positive: Vec<f64>,
    /// `score[j]`: the weighted sum of the first `j` pairs' scores.
    score: Vec<f64>,
    /// Whether every weight is a whole number (then cuts fall on the repeated rows' positions).
    whole: bool,
}

impl SortedPairs {
    /// Sorts `(scores, outcomes)` with their `weights` (each 1 when `None`).
    pub(crate) fn new(scores: &[f64], outcomes: &[bool], weights: Option<&[f64]>) -> Self {
        let n = scores.len();
        let mut pairs = Self {
            scores: Vec::with_capacity(n),
            weight: Vec::with_capacity(n + 1),
            positive: Vec::with_capacity(n + 1),
            score: Vec::with_capacity(n + 1),
            whole: weights.is_none_or(SampleWeights::whole_numbers),
        };
        match weights {
            // Without weights, the exactly equal scores' order is the only difference, and no
            // running sum sees it.
            None => pairs.extend(SortedOutcomes::new(scores, outcomes).triples()),
            Some(_) => {
                let y: Vec<f64> = outcomes.iter().map(|&o| f64::from(u8::from(o))).collect();
                pairs.extend(weighted_sorted(scores, &y, weights));
            }
        }
        pairs
    }

    /// Appends `(score, outcome, weight)` triples in score order to the running sums.
    fn extend(&mut self, triples: impl IntoIterator<Item = (f64, f64, f64)>) {
        let mut sums = (0.0, 0.0, 0.0);
        let mut push = |(w, p, s): (f64, f64, f64)| {
            self.weight.push(w);
            self.positive.push(p);
            self.score.push(s);
        };
        push(sums);
        for (score, outcome, weight) in triples {
            let (w, p, s) = sums;
            sums = (w + weight, p + weight * outcome, s + weight * score);
            self.scores.push(score);
            push(sums);
        }
    }

    /// The pairs' total weight `W` (their count without weights).
    pub(crate) fn total(&self) -> f64 {
        self.weight[self.scores.len()]
    }

    /// The number of pairs with a score at most `x`.
    pub(crate) fn at_most(&self, x: f64) -> usize {
        self.scores.partition_point(|&s| s <= x)
    }

    /// Whether every weight is a whole number (so positions are the repeated rows').
    pub(crate) fn whole(&self) -> bool {
        self.whole
    }

    /// The weight of pairs `lo..hi` (in sorted order) and that of their positive outcomes.
    pub(crate) fn sums(&self, lo: usize, hi: usize) -> (f64, f64) {
        (self.weight[hi] - self.weight[lo], self.positive[hi] - self.positive[lo])
    }

    /// The weighted sum of the scores of pairs `lo..hi`.
    pub(crate) fn score_sum(&self, lo: usize, hi: usize) -> f64 {
        self.score[hi] - self.score[lo]
    }

    /// The scores on either side of running weight `c`: that of the first pair whose running
    /// weight (itself included) reaches `c`, and that of the first whose running weight
    /// exceeds it; for unit weights and a whole `c`, the sorted scores `s_(c-1)` and `s_(c)`.
    pub(crate) fn around(&self, c: f64) -> (f64, f64) {
        let last = self.scores.len() - 1;
        let first = |j: usize| self.scores[j.min(last)];
        let running = &self.weight[1..];
        (first(running.partition_point(|&w| w < c)), first(running.partition_point(|&w| w <= c)))
    }

    /// Each bin's weight and positive outcomes' weight, for right-closed bins between
    /// `edges` (ascending, `edges[0] = 0`; a score at 0 in the first bin, every score above
    /// the last inner edge in the last bin).
    pub(crate) fn bins(&self, edges: &[f64]) -> Vec<(f64, f64)> {
        let b = edges.len() - 1;
        let mut lo = 0;
        (0..b)
            .map(|j| {
                let hi = if j + 1 == b { self.scores.len() } else { self.at_most(edges[j + 1]) };
                let sums = self.sums(lo, hi.max(lo));
                lo = hi.max(lo);
                sums
            })
            .collect()
    }

    /// `n_bins + 1` equal-mass edges from 0 to 1 (`n_bins <= W`).
    pub(crate) fn mass_edges(&self, n_bins: usize) -> Vec<f64> {
        let total = self.total();
        let mut edges = vec![0.0];
        for r in 1..n_bins {
            let (below, above) = self.around(weighted_range_start(r, total, n_bins, self.whole));
            edges.push(0.5 * (below + above));
        }
        edges.push(1.0);
        edges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_weights_cut_at_row_positions() {
        let p = SortedPairs::new(&[0.8, 0.1, 0.4, 0.2], &[true, false, true, true], None);
        assert_eq!(p.scores, [0.1, 0.2, 0.4, 0.8]);
        assert_eq!(p.mass_edges(2), [0.0, 0.5 * (0.2 + 0.4), 1.0]);
        assert_eq!(p.sums(1, 4), (3.0, 3.0));
        assert!((p.score_sum(1, 3) - 0.6).abs() < 1e-15);
        assert_eq!(p.around(2.0), (0.2, 0.4));
        assert_eq!(p.at_most(0.4), 3);
        assert_eq!(p.bins(&[0.0, 0.1, 0.5, 1.0]), [(1.0, 0.0), (2.0, 2.0), (1.0, 1.0)]);
    }

    /// Whole-number weights: the sums and edges of the repeated rows.
    #[test]
    fn whole_weights_are_repeated_rows() {
        let (s, o, w) = ([0.3, 0.1, 0.7], [true, false, true], [2.0, 3.0, 1.0]);
        let p = SortedPairs::new(&s, &o, Some(&w));
        let r = SortedPairs::new(
            &[0.3, 0.3, 0.1, 0.1, 0.1, 0.7],
            &[true, true, false, false, false, true],
            None,
        );
        for b in 1..=6 {
            assert_eq!(p.mass_edges(b), r.mass_edges(b), "{b} bins");
        }
        assert_eq!(p.sums(0, 3), r.sums(0, 6));
        assert_eq!(p.sums(1, 2), r.sums(3, 5));
    }

    /// Fractional weights cut at `r W / B`: inside a pair's weight both sides read it.
    #[test]
    fn fractional_cuts_fall_inside_a_pair() {
        let p = SortedPairs::new(&[0.2, 0.6], &[false, true], Some(&[1.5, 0.5]));
        // W = 2, one cut at 1.0, inside the first pair's weight 1.5.
        assert_eq!(p.mass_edges(2), [0.0, 0.2, 1.0]);
        // Three bins: cuts at 2/3 and 4/3, both inside the first pair.
        assert_eq!(p.mass_edges(3), [0.0, 0.2, 0.2, 1.0]);
        let q = SortedPairs::new(&[0.2, 0.6], &[false, true], Some(&[0.5, 1.5]));
        // The cut at 1.0 lies in the second pair: edge 0.6, its own score.
        assert_eq!(q.mass_edges(2), [0.0, 0.6, 1.0]);
    }
}
