//! Binning-free calibration tests on (score, outcome) pairs: Kolmogorov-Smirnov and Kuiper
//! statistics of the cumulative differences (Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu 2022;
//! Tygert 2023) and Spiegelhalter's z (Spiegelhalter 1986), as MAPIE 1.6's
//! `mapie.metrics.calibration` defines them.
//!
//! ```text
//! pairs sorted by score (stable),  C_j = (1/N) sum_{i <= j} (y_i - s_i),  j = 1..N
//! sigma = sqrt(sum_i s_i (1 - s_i)) / N
//! ks = max_j |C_j| / sigma                      p = P(max_{t<=1} |B_t| >= ks)
//! kuiper = (max_j C_j - min_j C_j) / sigma      p = P(max_t B_t - min_t B_t >= kuiper)
//! kuiper_range = max(0, max_j C_j) - min(0, min_j C_j)   (CalArena's `kuiper`: no sigma)
//! z = sum_i (y_i - s_i)(1 - 2 s_i) / sqrt(sum_i (1 - 2 s_i)^2 s_i (1 - s_i))
//! p = 2 (1 - Phi(|z|))                          (two-sided; MAPIE's is one-sided, 1 - Phi(z))
//! ```
//!
//! With sample weights `w_i` every sum is weighted and `N` becomes `W = sum_i w_i`; `C` is
//! read after each row and after the first unit of weight of the first row (its first copy),
//! so whole-number weights give exactly the statistics of the repeated rows.
//!
//! `B` is standard Brownian motion on [0, 1], the null limit of `C / sigma`. MAPIE multiplies
//! each score by `1 + 1e-8 N(0, 1)` (seeded) before sorting, to break ties at random; calib sorts
//! stably, so tied scores keep row order. When `sigma` (or Spiegelhalter's denominator) is 0,
//! every score is 0, 1 (or 1/2): the statistic is 0 if the outcomes agree exactly and
//! infinite otherwise, with p-values 1 and 0.

use std::f64::consts::{FRAC_1_SQRT_2, PI};

use crate::pairs::ScorePairs;

/// The three statistics and their p-values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinningFreeTests {
    /// Kolmogorov-Smirnov statistic of the cumulative differences.
    pub ks: f64,
    /// Its p-value.
    pub ks_pvalue: f64,
    /// Kuiper statistic (range of the cumulative differences).
    pub kuiper: f64,
    /// The range of the cumulative differences with the origin, not standardised:
    /// `max(0, max_j C_j) - min(0, min_j C_j)` (CalArena's `kuiper`).
    pub kuiper_range: f64,
    /// Its p-value.
    pub kuiper_pvalue: f64,
    /// Spiegelhalter's z.
    pub spiegelhalter: f64,
    /// Its two-sided p-value.
    pub spiegelhalter_pvalue: f64,
}

impl BinningFreeTests {
    /// The tests on `pairs` (at least one pair).
    ///
    /// ```
    /// use calib_core::metrics::BinningFreeTests;
    /// use calib_core::pairs::ScorePairs;
    ///
    /// let pairs = ScorePairs { scores: vec![0.2, 0.9, 0.6, 0.4], outcomes: vec![0.0, 1.0, 1.0, 0.0] };
    /// let t = BinningFreeTests::of(&pairs);
    /// // sorted: 0.2, 0.4, 0.6, 0.9; C = [-0.2, -0.6, -0.2, -0.1] / 4
    /// let sigma = (0.16f64 + 0.24 + 0.24 + 0.09).sqrt() / 4.0;
    /// assert!((t.ks - 0.15 / sigma).abs() < 1e-12);
    /// assert!((t.kuiper - 0.125 / sigma).abs() < 1e-12);
    /// ```
    pub fn of(pairs: &ScorePairs) -> Self {
        Self::weighted(pairs, None)
    }

    /// The tests on `pairs` with row `i` weighted by `weights[i]` (module docs); `None`: all 1.
    ///
    /// ```
    /// use calib_core::metrics::BinningFreeTests;
    /// use calib_core::pairs::ScorePairs;
    /// let pairs = ScorePairs { scores: vec![0.2, 0.9], outcomes: vec![1.0, 0.0] };
    /// let repeated = ScorePairs { scores: vec![0.2, 0.2, 0.2, 0.9], outcomes: vec![1.0, 1.0, 1.0, 0.0] };
    /// let (w, r) = (BinningFreeTests::weighted(&pairs, Some(&[3.0, 1.0])), BinningFreeTests::of(&repeated));
    /// assert!((w.kuiper - r.kuiper).abs() < 1e-12 && (w.spiegelhalter - r.spiegelhalter).abs() < 1e-12);
    /// ```
    pub fn weighted(pairs: &ScorePairs, weights: Option<&[f64]>) -> Self {
        let (s, y) = (&pairs.scores, &pairs.outcomes);
        let w = |i: usize| weights.map_or(1.0, |w| w[i]);
        let n: f64 = weights.map_or(s.len() as f64, |w| w.iter().sum());
        let (mut c, mut max, mut min, mut max_abs) =
            (0.0, f64::NEG_INFINITY, f64::INFINITY, 0.0f64);
        let mut first = true;
        for i in pairs.order().into_iter().filter(|&i| w(i) > 0.0) {
            let d = y[i] - s[i];
            if first {
                // The first copy of the first row: the repeated rows' first cumulative sum.
                let c1 = w(i).min(1.0) * d;
                (max, min) = (c1, c1);
                first = false;
            }
            c += w(i) * d;
            max = max.max(c);
            min = min.min(c);
            max_abs = max_abs.max(c.abs());
        }
        let variance: f64 = (0..s.len()).map(|i| w(i) * s[i] * (1.0 - s[i])).sum();
        let sigma = variance.sqrt() / n;
        let ks = ratio(max_abs / n, sigma);
        let kuiper = ratio((max - min) / n, sigma);
        let kuiper_range = (max.max(0.0) - min.min(0.0)) / n;
        let (mut num, mut den) = (0.0, 0.0);
        for (i, (s, y)) in s.iter().zip(y).enumerate() {
            let a = 1.0 - 2.0 * s;
            num += w(i) * (y - s) * a;
            den += w(i) * a * a * s * (1.0 - s);
        }
        let spiegelhalter = ratio(num, den.sqrt());
        Self {
            ks,
            ks_pvalue: ks_pvalue(ks),
            kuiper,
            kuiper_pvalue: kuiper_pvalue(kuiper),
            kuiper_range,
            spiegelhalter,
            spiegelhalter_pvalue: libm::erfc(spiegelhalter.abs() * FRAC_1_SQRT_2),
        }
    }
}

impl BinningFreeTests {
    /// The value of `metric` if it is one of these tests.
    pub(crate) fn value(&self, metric: super::Metric) -> Option<f64> {
        use super::Metric as M;
        Some(match metric {
            M::Ks => self.ks,
            M::KsPvalue => self.ks_pvalue,
            M::Kuiper => self.kuiper,
            M::KuiperPvalue => self.kuiper_pvalue,
            M::KuiperRange => self.kuiper_range,
            M::Spiegelhalter => self.spiegelhalter,
            M::SpiegelhalterPvalue => self.spiegelhalter_pvalue,
            _ => return None,
        })
    }
}

/// `a / b`, with `0 / 0 = 0` and `a / 0 = ±inf` (module docs).
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else if a == 0.0 {
        0.0
    } else {
        f64::INFINITY.copysign(a)
    }
}

/// `P(max_{t<=1} |B_t| >= x)`. Small `x`: one minus the theta series MAPIE sums,
/// `(4/pi) sum_k (-1)^k / (2k+1) exp(-(2k+1)^2 pi^2 / (8 x^2))`; larger `x`: the reflection
/// series `4 sum_k (-1)^k Q((2k+1) x)`, exact in the tail where `1 - cdf` would cancel.
pub fn ks_pvalue(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 1.0;
    }
    let mut sum = 0.0;
    if x < 1.0 {
        for k in 0..64 {
            let odd = f64::from(2 * k + 1);
            let term = (-(odd * odd) * PI * PI / (8.0 * x * x)).exp() / odd;
            sum += if k % 2 == 0 { term } else { -term };
            if term < 1e-18 {
                break;
            }
        }
        return (1.0 - 4.0 / PI * sum).clamp(0.0, 1.0);
    }
    for k in 0..64 {
        let odd = f64::from(2 * k + 1);
        let term = 0.5 * libm::erfc(odd * x * FRAC_1_SQRT_2);
        sum += if k % 2 == 0 { term } else { -term };
        if term < 1e-300 {
            break;
        }
    }
    (4.0 * sum).clamp(0.0, 1.0)
}

/// `P(max_t B_t - min_t B_t >= x)` over `t` in [0, 1]. Small `x`: one minus the series MAPIE
/// sums, `sum_k (8 / x^2 + 2 / ((k+1/2)^2 pi^2)) exp(-2 (k+1/2)^2 pi^2 / x^2)`; larger `x`:
/// Feller's (1951) series from the range's density, `8 sum_{k>=1} (-1)^(k-1) k Q(k x)`, exact
/// in the tail where `1 - cdf` would cancel.
pub fn kuiper_pvalue(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 1.0;
    }
    if x < 1.0 {
        let mut cdf = 0.0;
        for k in 0..64 {
            let half = f64::from(k) + 0.5;
            let term = (8.0 / (x * x) + 2.0 / (half * half * PI * PI))
                * (-2.0 * half * half * PI * PI / (x * x)).exp();
            cdf += term;
            if term < 1e-18 {
                break;
            }
        }
        return (1.0 - cdf).clamp(0.0, 1.0);
    }
    let mut sum = 0.0;
    for k in 1..64 {
        let kf = f64::from(k);
        let term = kf * 0.5 * libm::erfc(kf * x * FRAC_1_SQRT_2);
        sum += if k % 2 == 1 { term } else { -term };
        if term < 1e-300 {
            break;
        }
    }
    (8.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two KS series agree where they meet, and the p-values fall with `x`.
    #[test]
    fn ks_series_meet_and_decrease() {
        let theta = |x: f64| {
            let s: f64 = (0..200)
                .map(|k| {
                    let odd = f64::from(2 * k + 1);
                    let t = (-(odd * odd) * PI * PI / (8.0 * x * x)).exp() / odd;
                    if k % 2 == 0 { t } else { -t }
                })
                .sum();
            1.0 - 4.0 / PI * s
        };
        for x in [0.9, 1.0, 1.2, 2.0] {
            assert!((theta(x) - ks_pvalue(x)).abs() < 1e-14, "{x}");
        }
        let mut last = 1.0;
        for i in 1..100 {
            let p = ks_pvalue(f64::from(i) * 0.05);
            assert!(p <= last && p >= 0.0);
            last = p;
        }
        // Tail: P(max |B| >= x) ~ 4 Q(x) for large x.
        let x = 6.0;
        assert!((ks_pvalue(x) / (2.0 * libm::erfc(x * FRAC_1_SQRT_2)) - 1.0).abs() < 1e-12);
    }

    /// The two Kuiper series agree where they meet (values from both summed in numpy to 2,000
    /// terms agree to 1e-15 at x = 1, 2, 3).
    #[test]
    fn kuiper_series_meet() {
        let series = |x: f64| {
            let c: f64 = (0..400)
                .map(|k| {
                    let h = f64::from(k) + 0.5;
                    (8.0 / (x * x) + 2.0 / (h * h * PI * PI))
                        * (-2.0 * h * h * PI * PI / (x * x)).exp()
                })
                .sum();
            1.0 - c
        };
        for x in [0.99, 1.0, 1.5, 2.0, 3.0] {
            assert!((series(x) - kuiper_pvalue(x)).abs() < 1e-13, "{x}");
        }
        assert!((kuiper_pvalue(2.0) - 0.181_494_339_394_187_4).abs() < 1e-15);
    }

    #[test]
    fn kuiper_pvalue_is_a_tail_probability() {
        assert_eq!(kuiper_pvalue(0.0), 1.0);
        assert!(kuiper_pvalue(0.3) > 0.999_999);
        assert!(kuiper_pvalue(10.0) < 1e-12);
        let mut last = 1.0;
        for i in 1..100 {
            let p = kuiper_pvalue(f64::from(i) * 0.05);
            assert!(p <= last && p >= 0.0);
            last = p;
        }
    }

    /// Scores of 0 and 1 only: no variance; agreeing outcomes give 0 and p = 1, a
    /// contradicting one infinity and p = 0.
    #[test]
    fn degenerate_scores_give_zero_or_infinity() {
        let agree = ScorePairs { scores: vec![0.0, 1.0], outcomes: vec![0.0, 1.0] };
        let t = BinningFreeTests::of(&agree);
        assert_eq!((t.ks, t.ks_pvalue, t.spiegelhalter_pvalue), (0.0, 1.0, 1.0));
        let wrong = ScorePairs { scores: vec![0.0, 1.0], outcomes: vec![1.0, 1.0] };
        let t = BinningFreeTests::of(&wrong);
        assert!(t.ks.is_infinite() && t.ks_pvalue == 0.0 && t.spiegelhalter_pvalue == 0.0);
        // The range leaves out C_0 = 0 (as MAPIE): C = [1/2, 1/2] has none.
        assert_eq!(t.kuiper, 0.0);
    }

    /// A plain f64 loop of the formulas, on pairs with ties (stable order).
    #[test]
    fn statistics_match_a_direct_computation() {
        let s = [0.3, 0.7, 0.3, 0.9, 0.1, 0.7, 0.55];
        let y = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0];
        let pairs = ScorePairs { scores: s.to_vec(), outcomes: y.to_vec() };
        let order = [4usize, 0, 2, 6, 1, 5, 3];
        let n = 7.0;
        let mut c = Vec::new();
        let mut acc = 0.0;
        for &i in &order {
            acc += (y[i] - s[i]) / n;
            c.push(acc);
        }
        let sigma = s.iter().map(|s| s * (1.0 - s)).sum::<f64>().sqrt() / n;
        let ks = c.iter().fold(0.0f64, |m, v| m.max(v.abs())) / sigma;
        let range =
            c.iter().cloned().fold(f64::MIN, f64::max) - c.iter().cloned().fold(f64::MAX, f64::min);
        let num: f64 = s.iter().zip(&y).map(|(s, y)| (y - s) * (1.0 - 2.0 * s)).sum();
        let den: f64 = s.iter().map(|s| (1.0 - 2.0 * s).powi(2) * s * (1.0 - s)).sum();
        let t = BinningFreeTests::of(&pairs);
        assert!((t.ks - ks).abs() < 1e-12 && (t.kuiper - range / sigma).abs() < 1e-12);
        assert!((t.spiegelhalter - num / den.sqrt()).abs() < 1e-12);
    }
}
