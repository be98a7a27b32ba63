//! [`KeyGuide`]: how many of a map's sorted thresholds lie at or below a score, from a table
//! over the thresholds' order keys and a short branch-free search.
//!
//! ```text
//! key(x)    = calib_kernels::order_key(x + 0.0)          (integer order = f64 order; -0 as +0)
//! bucket(q) = (q - key(x_0)) >> shift                     (about 4 buckets per threshold)
//! first[t]  = #{ i : bucket(key(x_i)) < t }
//! count(s)  = first[t] + #{ i in [first[t], first[t] + W) : key(x_i) <= key(s) },  t = bucket(key(s))
//! ```
//!
//! The keys past bucket `t` are above every key in it, so the window of `W` keys from
//! `first[t]` (`W` a power of two above the fullest bucket's count) holds the answer: `log2 W`
//! halving steps, the same for every score, where a binary search over all thresholds takes
//! `log2 P`. Keys spread the thresholds by their binary exponent as well as their mantissa,
//! so the probabilities of a rare class, crowded near 0, still fall into many buckets. The
//! count equals the binary search's, so a prediction through it keeps its bits.

use calib_kernels::order_key;

/// The widest window a guide searches; a fuller bucket leaves the map to the binary search.
const MAX_WINDOW: usize = 64;

/// Buckets per threshold (at most).
const BUCKETS_PER_THRESHOLD: u64 = 4;

/// The guide of a map's thresholds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyGuide {
    /// The thresholds' keys, then a window of `u64::MAX` (so that every window is in bounds).
    keys: Vec<u64>,
    /// `first[t]` for every bucket.
    first: Vec<u32>,
    /// The first threshold's key.
    base: u64,
    /// Bucket width, as a power of two.
    shift: u32,
    /// The window `W`.
    window: usize,
}

impl KeyGuide {
    /// The guide of strictly increasing, non-NaN thresholds `x`; `None` when some bucket
    /// holds [`MAX_WINDOW`] thresholds or more.
    pub(crate) fn new(x: &[f64]) -> Option<Self> {
        let mut keys: Vec<u64> = x.iter().map(|&v| order_key(v + 0.0)).collect();
        let (base, top) = (*keys.first()?, *keys.last()?);
        let target = BUCKETS_PER_THRESHOLD * keys.len() as u64;
        let range = top - base;
        let shift = (0..64).find(|&s| range >> s < target).unwrap_or(63);
        let buckets = (range >> shift) as usize + 1;
        let mut first = vec![0u32; buckets + 1];
        for &k in &keys {
            first[((k - base) >> shift) as usize + 1] += 1;
        }
        let fullest = first.iter().copied().max().unwrap_or(0) as usize;
        let window = (fullest + 1).next_power_of_two();
        if window > MAX_WINDOW || keys.len() >= u32::MAX as usize {
            return None;
        }
        for t in 1..first.len() {
            first[t] += first[t - 1];
        }
        keys.resize(keys.len() + window, u64::MAX);
        Some(Self { keys, first, base, shift, window })
    }

    /// For each score `s` (not NaN), how many thresholds lie at or below it, the `N` searches
    /// in lockstep (their steps compile to conditional moves).
    #[inline(always)]
    pub(crate) fn counts<const N: usize>(&self, s: &[f64; N]) -> [usize; N] {
        let last = self.first.len() - 2;
        let mut q = [0u64; N];
        let mut at = [0usize; N];
        for k in 0..N {
            q[k] = order_key(s[k] + 0.0);
            let bucket = (q[k].saturating_sub(self.base) >> self.shift).min(last as u64);
            at[k] = self.first[bucket as usize] as usize;
        }
        let mut step = self.window / 2;
        while step > 0 {
            for k in 0..N {
                at[k] = if self.keys[at[k] + step - 1] <= q[k] { at[k] + step } else { at[k] };
            }
            step /= 2;
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut x: Vec<f64>) -> Vec<f64> {
        x.sort_by(f64::total_cmp);
        x.dedup_by(|a, b| a == b);
        x
    }

    /// Counts equal a plain count over the thresholds, at the thresholds, between, outside,
    /// at -0 and +0 and at infinity, for thresholds crowded near 0 and of both signs.
    #[test]
    fn counts_are_the_thresholds_at_or_below() {
        let hash =
            |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
        let crowded: Vec<f64> = (0..300).map(|i| hash(i).powi(6)).collect();
        let signed: Vec<f64> = (0..200).map(|i| 40.0 * hash(i + 999) - 20.0).collect();
        // Logits of both signs leave most buckets empty (the keys of magnitudes far below 1
        // lie between them) and some too full: no guide, the binary search instead.
        assert!(KeyGuide::new(&sorted(signed.clone())).is_none());
        let spread: Vec<f64> = signed.iter().map(|v| v * 1e-3 + 0.5).collect();
        for x in [crowded, spread, vec![-0.0, 0.5], vec![0.25]] {
            let x = sorted(x);
            let guide = KeyGuide::new(&x).expect("buckets small enough");
            let mut probes: Vec<f64> = x.clone();
            probes.extend(x.iter().map(|v| v + v.abs() * 1e-12 + 1e-300));
            probes.extend((0..500).map(|i| 50.0 * hash(i + 5000) - 25.0));
            probes.extend([-0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 1e-300, x[0] - 1.0]);
            for s in probes {
                let want = x.iter().filter(|&&v| v <= s).count();
                assert_eq!(guide.counts(&[s])[0], want, "{s} among {} thresholds", x.len());
            }
        }
    }
}
