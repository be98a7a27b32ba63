//! The probabilities a calibrator's output stands for: what `calib apply` writes as `probs`
//! and the Python package's `predict_proba` returns.

/// Row-wise softmax by max-subtraction, in f64: `p_k = exp(z_k - max z) / sum_j exp(z_j - max z)`.
pub fn softmax_rows(logits: &[f64], k: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(logits.len());
    for row in logits.chunks_exact(k) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = row.iter().map(|z| (z - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        out.extend(exps.into_iter().map(|e| e / sum));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sum_to_one_and_keep_their_order() {
        let p = softmax_rows(&[0.0, 0.0, 1000.0, 0.0, 1.0, 2.0], 3);
        assert_eq!(&p[..3], &[0.0, 0.0, 1.0]);
        assert!((p[3..].iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert!(p[3] < p[4] && p[4] < p[5]);
    }
}
