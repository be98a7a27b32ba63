//! numpy's default quantile: linear interpolation between order statistics.

/// The `q`-quantile of ascending `sorted` (non-empty): position `q (n - 1)`, interpolated
/// linearly between its neighbours, as `numpy.quantile(x, q)` (method "linear").
///
/// ```
/// use calib_core::bootstrap::quantile;
/// assert_eq!(quantile(&[1.0, 2.0, 4.0, 8.0], 0.5), 3.0);
/// assert_eq!(quantile(&[1.0, 2.0, 4.0, 8.0], 0.05), 1.15);
/// ```
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = position - below as f64;
    sorted[below] + fraction * (sorted[above] - sorted[below])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `numpy.quantile(np.arange(10.0) ** 2, q)` for these `q` (numpy 2.x).
    #[test]
    fn matches_numpy() {
        let x: Vec<f64> = (0..10).map(|i| f64::from(i * i)).collect();
        for (q, expected) in [(0.0, 0.0), (0.05, 0.45), (0.5, 20.5), (0.95, 73.35), (1.0, 81.0)] {
            assert!((quantile(&x, q) - expected).abs() < 1e-12, "{q}");
        }
    }
}
