//! Ranks and Spearman's rank correlation (Nixon et al. §5.3 compare method rankings with it).
//!
//! ```text
//! rank: 1 for the smallest value; tied values share the mean of their ranks
//! rho  = 1 - 6 sum_i d_i^2 / (n (n^2 - 1)),   d_i = rank_a(i) - rank_b(i)
//! ```
//! The paper's text prints `|d|` where the formula needs `d^2` (a typo). With ties the formula
//! is the convention's (docs/conventions.md), not Pearson's correlation of the ranks.

/// Ranks of `values` from 1 (smallest), ties averaged; NaN ranks after every number.
///
/// ```
/// assert_eq!(calib_core::stats::average_ranks(&[0.3, 0.1, 0.3, 0.2]), vec![3.5, 1.0, 3.5, 2.0]);
/// ```
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let v = values[order[start]];
        let end = start
            + order[start..]
                .iter()
                .take_while(|&&i| values[i] == v || values[i].is_nan() && v.is_nan())
                .count();
        let mean = (start + 1 + end) as f64 / 2.0;
        order[start..end].iter().for_each(|&i| ranks[i] = mean);
        start = end;
    }
    ranks
}

/// Spearman's rho between two rankings of the same `n >= 2` items (`None` below 2).
///
/// ```
/// use calib_core::stats::spearman;
/// assert_eq!(spearman(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), Some(1.0));
/// assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
/// ```
pub fn spearman(ranks_a: &[f64], ranks_b: &[f64]) -> Option<f64> {
    let n = ranks_a.len() as f64;
    if ranks_a.len() < 2 || ranks_a.len() != ranks_b.len() {
        return None;
    }
    let d2: f64 = ranks_a.iter().zip(ranks_b).map(|(a, b)| (a - b) * (a - b)).sum();
    Some(1.0 - 6.0 * d2 / (n * (n * n - 1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scipy.stats.spearmanr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) = 0.8 (no ties: the formula).
    #[test]
    fn matches_scipy_without_ties() {
        let a = average_ranks(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        let b = average_ranks(&[2.0, 1.0, 4.0, 3.0, 5.0]);
        assert!((spearman(&a, &b).unwrap() - 0.8).abs() < 1e-15);
        assert_eq!(spearman(&[1.0], &[1.0]), None);
        assert_eq!(average_ranks(&[f64::NAN, 1.0]), vec![2.0, 1.0]);
    }
}
