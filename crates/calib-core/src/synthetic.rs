//! Synthetic, deterministic classifier outputs for tests, benchmarks and examples.
//!
//! Nothing here is real data: [`overconfident_logits`] draws logits whose softmax is
//! over-confident the way an uncalibrated deep network's is (Guo et al. 2017), so calibration
//! metrics and calibrators have something to find. [`sharpened_logits`] is over-confident in
//! exactly the way temperature scaling undoes: its labels are drawn from `softmax(z)` and it
//! returns `s * z`, so `T = s` is the perfect calibrator.

/// SplitMix64: a small, fast, deterministic generator.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `[0, n)`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.uniform() * n as f64) as usize
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.uniform().max(f64::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * self.uniform()).cos()
    }
}

/// Synthetic logits `[n, k]` (row-major) and labels.
///
/// Each row's label is uniform; with probability `accuracy` the largest margin goes to the
/// label, else to another class. Logits are `temperature * (3 * [j = top] + 0.8 * noise)`,
/// so `temperature > 1` makes the softmax over-confident.
pub fn overconfident_logits(
    n: usize,
    k: usize,
    accuracy: f64,
    temperature: f64,
    seed: u64,
) -> (Vec<f32>, Vec<i64>) {
    let mut rng = SplitMix64(seed);
    let mut logits = Vec::with_capacity(n * k);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let y = rng.below(k);
        let top =
            if k < 2 || rng.uniform() < accuracy { y } else { (y + 1 + rng.below(k - 1)) % k };
        for j in 0..k {
            let margin = if j == top { 3.0 } else { 0.0 };
            logits.push((temperature * (margin + 0.8 * rng.normal())) as f32);
        }
        labels.push(y as i64);
    }
    (logits, labels)
}

/// `n` rows of `k` logits `s * z` whose *calibrated* probabilities are `softmax(z)`: a latent
/// class `c` is uniform, `z_j = margin * [j = c] + normal()`, and the label is drawn from
/// `softmax(z)`. With `sharpness = s > 1` the returned logits are over-confident and
/// temperature scaling with `T = s` calibrates them exactly (in expectation).
pub fn sharpened_logits(
    n: usize,
    k: usize,
    margin: f64,
    sharpness: f64,
    seed: u64,
) -> (Vec<f32>, Vec<i64>) {
    let mut rng = SplitMix64(seed);
    let mut logits = Vec::with_capacity(n * k);
    let mut labels = Vec::with_capacity(n);
    let mut z = vec![0.0f64; k];
    for _ in 0..n {
        let c = rng.below(k);
        for (j, zj) in z.iter_mut().enumerate() {
            *zj = if j == c { margin } else { 0.0 } + rng.normal();
        }
        let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = z.iter().map(|v| (v - max).exp()).sum();
        let mut u = rng.uniform() * total;
        let mut y = k - 1;
        for (j, zj) in z.iter().enumerate() {
            u -= (zj - max).exp();
            if u <= 0.0 {
                y = j;
                break;
            }
        }
        logits.extend(z.iter().map(|v| (sharpness * v) as f32));
        labels.push(y as i64);
    }
    (logits, labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_shaped() {
        let (a, y) = overconfident_logits(50, 4, 0.9, 2.0, 1);
        let (b, _) = overconfident_logits(50, 4, 0.9, 2.0, 1);
        assert_eq!(a, b);
        assert_eq!((a.len(), y.len()), (200, 50));
        assert!(y.iter().all(|&l| (0..4).contains(&l)));
    }

    #[test]
    fn sharpened_logits_are_calibrated_after_dividing_by_the_sharpness() {
        // Mean top-label confidence of softmax(z) equals the accuracy up to sampling noise
        // (N = 20,000: standard error ~0.003).
        let (n, k, s) = (20_000, 10, 2.5);
        let (logits, labels) = sharpened_logits(n, k, 4.0, s, 3);
        let (mut conf, mut hits) = (0.0, 0.0);
        for (row, &y) in logits.chunks_exact(k).zip(&labels) {
            let z: Vec<f64> = row.iter().map(|&v| f64::from(v) / s).collect();
            let (top, max) = z
                .iter()
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |a, (j, &v)| if v > a.1 { (j, v) } else { a });
            let total: f64 = z.iter().map(|v| (v - max).exp()).sum();
            conf += 1.0 / total;
            hits += f64::from(u8::from(top as i64 == y));
        }
        let (conf, acc) = (conf / n as f64, hits / n as f64);
        assert!((conf - acc).abs() < 0.01, "confidence {conf} vs accuracy {acc}");
    }
}
