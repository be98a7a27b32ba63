//! Binomial acceptance intervals: where a bin's accuracy may fall if its predictions are
//! calibrated (Bröcker & Smith 2007, "consistency bars").
//!
//! ```text
//! A bin of n predictions with mean confidence c is consistent with calibration when its
//! number of hits h lies in [q(alpha/2), q(1 - alpha/2)] of Binomial(n, c); the interval of
//! accuracies is those quantiles divided by n.
//! ```
//! The quantiles are exact: the pmf is summed in log space from `h = 0` by the ratio
//! `pmf(h + 1) / pmf(h) = (n - h) / (h + 1) * c / (1 - c)`, so large `n` neither underflows
//! nor needs a gamma function.

/// The central `1 - alpha` acceptance interval of accuracies for a bin of `n` predictions with
/// mean confidence `c` (for `n` rounded to an integer; `None` for an empty bin).
pub fn acceptance_interval(n: f64, c: f64, alpha: f64) -> Option<(f64, f64)> {
    let n = n.round() as u64;
    if n == 0 || !c.is_finite() {
        return None;
    }
    let c = c.clamp(0.0, 1.0);
    if c == 0.0 || c == 1.0 {
        return Some((c, c));
    }
    let log_ratio = (c / (1.0 - c)).ln();
    let mut log_pmf = Vec::with_capacity(n as usize + 1);
    let mut current = n as f64 * (1.0 - c).ln();
    for h in 0..=n {
        log_pmf.push(current);
        current += ((n - h) as f64 / (h + 1) as f64).ln() + log_ratio;
    }
    let max = log_pmf.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pmf: Vec<f64> = log_pmf.iter().map(|l| (l - max).exp()).collect();
    let total: f64 = pmf.iter().sum();
    let quantile = |q: f64| {
        let mut acc = 0.0;
        for (h, p) in pmf.iter().enumerate() {
            acc += p / total;
            if acc >= q - 1e-12 {
                return h as f64;
            }
        }
        n as f64
    };
    let (lo, hi) = (quantile(alpha / 2.0), quantile(1.0 - alpha / 2.0));
    Some((lo / n as f64, hi / n as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_exact_binomial_quantiles() {
        // Exact CDF in Python: smallest h with sum(comb(100, i) 0.7^i 0.3^(100-i), i <= h) >= q
        // gives 61 (q = 0.025) and 79 (q = 0.975); same for n = 10, c = 0.5: 2 and 8.
        assert_eq!(acceptance_interval(100.0, 0.7, 0.05), Some((0.61, 0.79)));
        assert_eq!(acceptance_interval(10.0, 0.5, 0.05), Some((0.2, 0.8)));
    }

    #[test]
    fn large_bins_do_not_underflow() {
        // Normal approximation: 0.9 +- 1.96 * sqrt(0.9 * 0.1 / 100000) = 0.9 +- 0.00186.
        let (lo, hi) = acceptance_interval(100_000.0, 0.9, 0.05).unwrap();
        assert!((lo - 0.89814).abs() < 2e-4 && (hi - 0.90186).abs() < 2e-4, "{lo} {hi}");
    }

    #[test]
    fn degenerate_bins() {
        assert_eq!(acceptance_interval(0.0, 0.5, 0.05), None);
        assert_eq!(acceptance_interval(5.0, 1.0, 0.05), Some((1.0, 1.0)));
    }
}
