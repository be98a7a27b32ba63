//! Per-row building blocks of the host engines, shaped so the compiler vectorises them.
//!
//! Reductions keep [`LANES`] independent partial results and combine them in a fixed order at
//! the end, so they vectorise and stay deterministic (the same bits on every run and CPU).

use super::exp::exp_nonpositive;
use super::simd::mask_above;

/// Host score types the engines read (`f32` or `f64` rows).
pub trait Score: Copy + PartialOrd + Into<f64> + Send + Sync + 'static {}
impl Score for f32 {}
impl Score for f64 {}

/// Independent partial results per reduction.
pub const LANES: usize = 8;

/// The maximum of a non-empty row and its first position (argmax ties go to the lowest
/// column, docs/conventions.md).
///
/// ```
/// use calib_kernels::max_and_argmax;
/// assert_eq!(max_and_argmax(&[1.0f32, 3.0, -2.0, 3.0]), (3.0, 1));
/// ```
#[inline(always)]
pub fn max_and_argmax<T: Score>(row: &[T]) -> (T, usize) {
    let mut lanes = [row[0]; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (m, &v) in lanes.iter_mut().zip(c) {
            *m = if v > *m { v } else { *m };
        }
    }
    let mut max = row[0];
    for &v in lanes.iter().chain(tail) {
        max = if v > max { v } else { max };
    }
    // The first position of `max`: a vectorised "any lane equal" test per chunk, then a
    // scalar search of the one chunk that has it (a scalar `position` over the whole row
    // cannot be vectorised, and at 1,000 classes it would cost as much as the exponentials).
    let mut base = 0;
    for c in row.chunks_exact(LANES) {
        if c.iter().fold(false, |any, &v| any | (v == max)) {
            break;
        }
        base += LANES;
    }
    let at = base + row[base..].iter().position(|&v| v == max).unwrap_or(0);
    (max, at)
}

/// Sum in [`LANES`] partial sums, combined in order, then the tail.
///
/// ```
/// use calib_kernels::lane_sum;
/// assert_eq!(lane_sum(&[1.0; 19]), 19.0);
/// ```
#[inline(always)]
pub fn lane_sum(values: &[f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().chain(tail).fold(0.0, |s, &v| s + v)
}

/// Dot product in [`LANES`] partial sums, combined in order, then the tail (vectorises
/// where a plain `zip().map().sum()` cannot: floating-point addition is not reassociated).
///
/// ```
/// use calib_kernels::lane_dot;
/// let a: Vec<f64> = (0..19).map(f64::from).collect();
/// assert_eq!(lane_dot(&a, &[2.0; 19]), 342.0);
/// ```
#[inline(always)]
pub fn lane_dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ta, tb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for ((s, &x), &y) in acc.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    let tail = ta.iter().zip(tb).fold(0.0, |s, (&x, &y)| s + x * y);
    acc.iter().fold(0.0, |s, &v| s + v) + tail
}

/// `out[j] = exp(row[j] - shift)` (`shift >=` every entry, usually the row maximum); returns
/// the [`lane_sum`] of `out`.
#[inline(always)]
pub fn exp_shifted<T: Score>(row: &[T], shift: f64, out: &mut [f64]) -> f64 {
    for (o, &v) in out.iter_mut().zip(row) {
        *o = exp_nonpositive(v.into() - shift);
    }
    lane_sum(&out[..row.len()])
}

/// Multiplies `p` by `scale` in place and returns the [`lane_sum`] of the squares.
#[inline(always)]
pub fn scale_and_square_sum(p: &mut [f64], scale: f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let mut chunks = p.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c.iter_mut()) {
            *v *= scale;
            *a += *v * *v;
        }
    }
    let tail = chunks.into_remainder();
    let mut s = acc.iter().fold(0.0, |s, &a| s + a);
    for v in tail {
        *v *= scale;
        s += *v * *v;
    }
    s
}

/// `(sum e, sum d e, sum d^2 e)` over `d_j = row[j] - shift` with `e = exp(s d)`, `s >= 0`:
/// the moments of the tempered softmax (temperature scaling's Newton solver).
///
/// ```
/// use calib_kernels::tempered_moments;
/// let (s0, s1, s2) = tempered_moments(&[0.0f64, -1.0], 0.0, 2.0);
/// let e = (-2.0f64).exp();
/// assert!((s0 - (1.0 + e)).abs() < 1e-15 && (s1 + e).abs() < 1e-15 && (s2 - e).abs() < 1e-15);
/// ```
#[inline(always)]
pub fn tempered_moments<T: Score>(row: &[T], shift: f64, s: f64) -> (f64, f64, f64) {
    let (mut a0, mut a1, mut a2) = ([0.0f64; LANES], [0.0f64; LANES], [0.0f64; LANES]);
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            let d = c[l].into() - shift;
            let e = exp_nonpositive(s * d);
            a0[l] += e;
            a1[l] += d * e;
            a2[l] += d * d * e;
        }
    }
    let (mut s0, mut s1, mut s2) = (0.0, 0.0, 0.0);
    for l in 0..LANES {
        (s0, s1, s2) = (s0 + a0[l], s1 + a1[l], s2 + a2[l]);
    }
    for &v in tail {
        let d = v.into() - shift;
        let e = exp_nonpositive(s * d);
        (s0, s1, s2) = (s0 + e, s1 + d * e, s2 + d * d * e);
    }
    (s0, s1, s2)
}

/// How many entries of `values` are above `floor`, their sum and the sum of the others (in
/// [`LANES`] partial sums, combined in order, then the tail).
///
/// ```
/// use calib_kernels::split_sums_at;
/// let v = [0.5, 2.0, 3.0, 1.0, 4.0, 0.0, 9.0, 1.5, 2.5];
/// assert_eq!(split_sums_at(&v, 1.0), (6, 22.0, 1.5));
/// ```
#[inline(always)]
pub fn split_sums_at(values: &[f64], floor: f64) -> (usize, f64, f64) {
    let (mut n, mut above, mut rest) = ([0u64; LANES], [0.0f64; LANES], [0.0f64; LANES]);
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            let over = c[l] > floor;
            n[l] += u64::from(over);
            above[l] += if over { c[l] } else { 0.0 };
            rest[l] += if over { 0.0 } else { c[l] };
        }
    }
    let fold = |a: &[f64; LANES]| a.iter().fold(0.0, |s, &v| s + v);
    let (mut count, mut sum, mut others) =
        (n.iter().sum::<u64>() as usize, fold(&above), fold(&rest));
    for &v in tail {
        if v > floor {
            (count, sum) = (count + 1, sum + v);
        } else {
            others += v;
        }
    }
    (count, sum, others)
}

/// Calls `visit(j, p[j])` for every `p[j] > floor`, in order; whole chunks of [`LANES`] with
/// no such entry are skipped by a vectorised test. Suited to sparse hits (softmax rows).
#[inline(always)]
pub fn for_each_above(p: &[f64], floor: f64, mut visit: impl FnMut(usize, f64)) {
    let mut chunks = p.chunks_exact(LANES);
    let mut base = 0;
    for c in &mut chunks {
        // A bit per lane (vector compares and move-masks), then its set bits in order.
        let mut mask = mask_above(c.try_into().expect("chunks of LANES = 8"), floor);
        while mask != 0 {
            let l = mask.trailing_zeros() as usize;
            visit(base + l, c[l]);
            mask &= mask - 1;
        }
        base += LANES;
    }
    for (l, &v) in chunks.remainder().iter().enumerate() {
        if v > floor {
            visit(base + l, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_first_maximum_in_any_lane() {
        for k in 1..40 {
            for at in 0..k {
                let mut row = vec![0.5f32; k];
                row[at] = 2.0;
                if at + 9 < k {
                    row[at + 9] = 2.0; // same lane, later chunk
                }
                assert_eq!(max_and_argmax(&row), (2.0, at), "k={k} at={at}");
            }
        }
        assert_eq!(max_and_argmax(&[-0.0f64, 0.0]).1, 0);
    }

    #[test]
    fn kernels_match_plain_loops() {
        let row: Vec<f32> = (0..37).map(|i| ((i * 7919) % 101) as f32 / 10.0 - 5.0).collect();
        let (max, _) = max_and_argmax(&row);
        let max = max as f64;
        let mut p = vec![0.0; row.len()];
        let se = exp_shifted(&row, max, &mut p);
        let plain: f64 = row.iter().map(|&v| (v as f64 - max).exp()).sum();
        assert!((se - plain).abs() < 1e-13 * plain);
        let sq = scale_and_square_sum(&mut p, 1.0 / se);
        let plain_sq: f64 = row.iter().map(|&v| ((v as f64 - max).exp() / plain).powi(2)).sum();
        assert!((sq - plain_sq).abs() < 1e-14);
        let (s0, s1, s2) = tempered_moments(&row, max, 0.7);
        let (mut t0, mut t1, mut t2) = (0.0, 0.0, 0.0);
        for &v in &row {
            let d = v as f64 - max;
            let e = (0.7 * d).exp();
            (t0, t1, t2) = (t0 + e, t1 + d * e, t2 + d * d * e);
        }
        assert!((s0 - t0).abs() < 1e-13 * t0);
        assert!((s1 - t1).abs() < 1e-13 * t1.abs());
        assert!((s2 - t2).abs() < 1e-13 * t2);
        let mut seen = Vec::new();
        for_each_above(&p, 0.05, |j, v| seen.push((j, v)));
        let want: Vec<(usize, f64)> =
            p.iter().copied().enumerate().filter(|&(_, v)| v > 0.05).collect();
        assert_eq!(seen, want);
    }
}
