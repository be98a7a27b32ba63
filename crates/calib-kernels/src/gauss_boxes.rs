//! Gaussian kernel sums over many sorted points by box moments (the Taylor form of Greengard &
//! Strain's fast Gauss transform, 1991): exact to rounding where the kernel reaches thousands of
//! points, at a cost per query that grows with the boxes in reach, not the points.
//!
//! ```text
//! points s_i in boxes B of width h, centre c_B;  a = (q - c_B) / h,  b_i = (s_i - c_B) / h in [-1/2, 1/2)
//! sum_i v_i exp(-(q - s_i)^2 / 2h^2) = sum_B exp(-a^2 / 2) sum_n a^n / n! M_{B,n},
//! M_{B,n} = sum_{i in B} v_i exp(-b_i^2 / 2) b_i^n      (exp(a b) = sum_n (a b)^n / n!)
//! ```
//!
//! With `|a| <= 10` and `|b| <= 1/2` the series' tail after 32 terms is below 5^32 / 32! ~ 1e-14
//! of its largest term, so the sums agree with the direct ones to about 1e-13 (relative).

use crate::LANES;

/// Series terms kept per box.
const TERMS: usize = 32;

/// The box moments of sorted points with values `y` (numerator) and 1 (denominator). Shared
/// with calib-train's LCE calibration; not part of the API.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussBoxes {
    h: f64,
    origin: f64,
    /// Index of each non-empty box, ascending.
    index: Vec<i64>,
    /// `[boxes][2][TERMS]`: moments of the denominator (weights 1), then the numerator (`y`).
    moments: Vec<f64>,
}

impl GaussBoxes {
    /// Boxes of width `h` over `scores` (sorted ascending) with values `y`.
    pub fn new(scores: &[f64], y: &[f64], h: f64) -> Self {
        Self::weighted(scores, y, None, h)
    }

    /// [`Self::new`] with each point weighted by `weights[i]` (sample weights): the sums
    /// become `(sum_i v_i y_i w_i, sum_i v_i w_i)`.
    ///
    /// Each box's points are cut into pieces of at most [`PIECE`] points whose moments are
    /// summed on the cores and added up per box in order (pieces fixed by the points alone,
    /// so the same bits at every thread count).
    pub fn weighted(scores: &[f64], y: &[f64], weights: Option<&[f64]>, h: f64) -> Self {
        let origin = scores.first().copied().unwrap_or(0.0);
        let box_of = |s: f64| ((s - origin) / h).floor() as i64;
        let mut pieces: Vec<(i64, std::ops::Range<usize>)> = Vec::new();
        let mut start = 0;
        while start < scores.len() {
            let k = box_of(scores[start]);
            let end = start + scores[start..].partition_point(|&s| box_of(s) <= k);
            for from in (start..end).step_by(PIECE) {
                pieces.push((k, from..(from + PIECE).min(end)));
            }
            start = end;
        }
        let parts = crate::in_order(&pieces, |(k, rows)| {
            let mut m = [0.0; 2 * TERMS];
            let weights = weights.map(|w| &w[rows.clone()]);
            let points = (&scores[rows.clone()], &y[rows.clone()], weights);
            crate::dispatch(
                #[inline(always)]
                || box_moments(points, (origin, h, *k), &mut m),
            );
            m
        });
        let (mut index, mut moments) = (Vec::<i64>::new(), Vec::new());
        for ((k, _), m) in pieces.iter().zip(parts) {
            if index.last() == Some(k) {
                let at = moments.len() - 2 * TERMS;
                moments[at..].iter_mut().zip(m).for_each(|(a, b)| *a += b);
            } else {
                index.push(*k);
                moments.extend(m);
            }
        }
        Self { h, origin, index, moments }
    }

    /// The non-empty boxes holding scores in `[lo, hi]`.
    #[inline(always)]
    pub fn boxes_between(&self, lo: f64, hi: f64) -> std::ops::Range<usize> {
        let position = |x: f64| ((x - self.origin) / self.h).floor() as i64;
        self.index.partition_point(|&k| k < position(lo))
            ..self.index.partition_point(|&k| k <= position(hi))
    }

    /// `(sum_i y_i w_i, sum_i w_i)` at `q` over the scores of `boxes` (from
    /// [`Self::boxes_between`]), `w_i = exp(-(q - s_i)^2 / 2h^2)`, added up in box order.
    #[inline(always)]
    pub fn sums(&self, q: f64, boxes: std::ops::Range<usize>) -> (f64, f64) {
        let (mut num, mut den) = (0.0, 0.0);
        for j in boxes {
            let a = (q - self.origin) / self.h - (self.index[j] as f64 + 0.5);
            let (box_num, box_den) = self.series(j, a);
            let scale = crate::exp_nonpositive(-0.5 * a * a);
            num += scale * box_num;
            den += scale * box_den;
        }
        (num, den)
    }

    /// Box `j`'s series `sum_n a^n / n! M_{B,n}` for the numerator and the denominator, the
    /// powers [`STRIDE`] at a time: `a^(n + 4) / (n + 4)! = a^n / n! * a^4 RISES[k][l]`, so
    /// that the chain of dependent products is `TERMS / 4` long instead of `TERMS` (a term at
    /// a time, each waiting on the last, was most of a query's time).
    #[inline(always)]
    fn series(&self, j: usize, a: f64) -> (f64, f64) {
        let m = &self.moments[j * 2 * TERMS..(j + 1) * 2 * TERMS];
        let a4 = (a * a) * (a * a);
        let mut power = [1.0, a, a * a * 0.5, a * a * a * (1.0 / 6.0)];
        let (mut den, mut num) = ([0.0; STRIDE], [0.0; STRIDE]);
        for (k, rise) in RISES.iter().enumerate() {
            let (m_den, m_num) = (&m[k * STRIDE..][..STRIDE], &m[TERMS + k * STRIDE..][..STRIDE]);
            for l in 0..STRIDE {
                den[l] += power[l] * m_den[l];
                num[l] += power[l] * m_num[l];
                power[l] *= a4 * rise[l];
            }
        }
        let sum = |v: [f64; STRIDE]| (v[0] + v[1]) + (v[2] + v[3]);
        (sum(num), sum(den))
    }
}

/// Powers of a box's series computed at once by [`GaussBoxes::series`].
const STRIDE: usize = 4;

/// `RISES[k][l] = n! / (n + 4)!` for `n = 4k + l`: the factor from `a^n / n!` to
/// `a^(n + 4) / (n + 4)!` beside `a^4`.
const RISES: [[f64; STRIDE]; TERMS / STRIDE] = {
    let mut r = [[0.0; STRIDE]; TERMS / STRIDE];
    let mut n = 0;
    while n < TERMS {
        let m = n as f64;
        r[n / STRIDE][n % STRIDE] = 1.0 / ((m + 1.0) * (m + 2.0) * (m + 3.0) * (m + 4.0));
        n += 1;
    }
    r
};

/// Adds box `k`'s moments of its points `(s, y, w)` to `out` (`[2][TERMS]`): [`LANES`]
/// points at a time, each lane with its own powers of `b` (the power chain of one point is
/// sequential; eight run side by side in vector registers), the lanes summed in order at the
/// end.
#[inline(always)]
fn box_moments(
    (scores, y, weights): (&[f64], &[f64], Option<&[f64]>),
    (origin, h, k): (f64, f64, i64),
    out: &mut [f64],
) {
    let centre = k as f64 + 0.5;
    let (mut den, mut num) = ([[0.0; LANES]; TERMS], [[0.0; LANES]; TERMS]);
    let lane = |i: usize| {
        let b = (scores[i] - origin) / h - centre;
        let power = crate::exp_nonpositive(-0.5 * b * b) * weights.map_or(1.0, |w| w[i]);
        (b, power)
    };
    let full = scores.len() / LANES * LANES;
    for base in (0..full).step_by(LANES) {
        let (mut b, mut power, mut v) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
        for l in 0..LANES {
            (b[l], power[l]) = lane(base + l);
            v[l] = y[base + l];
        }
        for n in 0..TERMS {
            for l in 0..LANES {
                den[n][l] += power[l];
                num[n][l] += v[l] * power[l];
                power[l] *= b[l];
            }
        }
    }
    let (den_out, num_out) = out.split_at_mut(TERMS);
    for n in 0..TERMS {
        den_out[n] = den[n].iter().fold(0.0, |s, &v| s + v);
        num_out[n] = num[n].iter().fold(0.0, |s, &v| s + v);
    }
    for i in full..scores.len() {
        let (b, mut power) = lane(i);
        for n in 0..TERMS {
            den_out[n] += power;
            num_out[n] += y[i] * power;
            power *= b;
        }
    }
}

/// The most points of one box one core sums at a time.
const PIECE: usize = 8192;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_sums_equal_direct_sums() {
        let mut rng = crate::test_rng::SplitMix64(11);
        let mut s: Vec<f64> = (0..5000).map(|_| rng.uniform().powi(3)).collect();
        s.sort_by(f64::total_cmp);
        let y: Vec<f64> = s.iter().map(|&v| f64::from(u8::from(rng.uniform() < v))).collect();
        let h = 0.01;
        let boxes = GaussBoxes::new(&s, &y, h);
        for q in [0.0, 1e-4, 0.003, 0.05, 0.2, 0.5, 0.93, -0.02] {
            let reach = 9.0 * h;
            let (mut num, mut den) = (0.0, 0.0);
            for (&si, &yi) in s.iter().zip(&y) {
                let w = (-0.5 * ((q - si) / h).powi(2)).exp();
                num += yi * w;
                den += w;
            }
            let (bn, bd) = boxes.sums(q, boxes.boxes_between(q - reach, q + reach));
            assert!((bd - den).abs() <= 1e-11 * den, "q {q}: den {bd} vs {den}");
            assert!((bn - num).abs() <= 1e-11 * den, "q {q}: num {bn} vs {num}");
        }
    }
}
