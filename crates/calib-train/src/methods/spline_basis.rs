//! The bases of spline calibration: the natural cubic spline basis of ml_insights' model, and
//! the clamped cubic B-splines on the same knots that fit it four non-zeros a row.
//!
//! ```text
//! natural:   [1, x, H_1(x), ..., H_{K-2}(x)]          (truncated powers, dense rows)
//! B-splines: B_0(x), ..., B_{K+1}(x) on t_0 (x4), t_1, ..., t_{K-2}, t_{K-1} (x4),
//!            continued past t_0 and t_{K-1} by their value and slope (de Boor 1978)
//! natural(x) = A B(x) for every x, A [K, K + 2]
//! ```
//!
//! A natural spline is a cubic spline on the knots that is linear past the end knots with
//! matching value and slope, so it lies in the span of the continued B-splines; `A` comes from
//! a least-squares fit at four points an interval and two past each end (exact, since each
//! interval's cubic is fixed by four points), and is checked before use.

use crate::binary::{Features, LocalRows};

/// The natural cubic spline basis `[1, x, H_1(x), ..., H_{K-2}(x)]` of `x` on `knots`:
/// `H_k = d_k - d_{K-1}`, `d_k(x) = ((x - t_{k-1})_+^3 - (x - t_{K-1})_+^3) / (t_{K-1} - t_{k-1})`.
pub fn natural_spline_basis(x: f64, knots: &[f64], out: &mut [f64]) {
    let k = knots.len();
    let last = knots[k - 1];
    let d = |j: usize| {
        let cube = |v: f64| v.max(0.0).powi(3);
        (cube(x - knots[j - 1]) - cube(x - last)) / (last - knots[j - 1])
    };
    out[0] = 1.0;
    out[1] = x;
    let d_last = d(k - 1);
    for i in 1..k - 1 {
        out[i + 1] = d(i) - d_last;
    }
}

/// The clamped cubic B-splines on `K >= 3` increasing knots, continued linearly.
pub(crate) struct BSplines<'a> {
    knots: &'a [f64],
    /// The clamped knot vector, `K + 6` entries.
    tau: Vec<f64>,
}

impl<'a> BSplines<'a> {
    pub fn new(knots: &'a [f64]) -> Self {
        let (first, last) = (knots[0], knots[knots.len() - 1]);
        let mut tau = vec![first; 4];
        tau.extend_from_slice(&knots[1..knots.len() - 1]);
        tau.extend([last; 4]);
        Self { knots, tau }
    }

    /// `K + 2` functions.
    pub fn width(&self) -> usize {
        self.knots.len() + 2
    }

    /// The four functions that may be non-zero at `x`: their first index and values.
    pub fn row(&self, x: f64) -> (usize, [f64; 4]) {
        let k = self.knots.len();
        let (first, last) = (self.knots[0], self.knots[k - 1]);
        if x < first {
            let u = 3.0 * (x - first) / (self.knots[1] - first);
            return (0, [1.0 - u, u, 0.0, 0.0]);
        }
        if x > last {
            let u = 3.0 * (x - last) / (last - self.knots[k - 2]);
            return (self.width() - 4, [0.0, 0.0, -u, 1.0 + u]);
        }
        // The interval [t_j, t_{j+1}) holding x (the last one holds t_{K-1}); span mu = j + 3.
        let j = self.knots.partition_point(|&t| t <= x).clamp(1, k - 1) - 1;
        (j, self.cox_de_boor(j + 3, x))
    }

    /// The four cubic B-splines non-zero on span `mu` at `x` (The NURBS Book, A2.2).
    fn cox_de_boor(&self, mu: usize, x: f64) -> [f64; 4] {
        let tau = &self.tau;
        let (mut n, mut left, mut right) = ([1.0, 0.0, 0.0, 0.0], [0.0; 4], [0.0; 4]);
        for j in 1..4 {
            left[j] = x - tau[mu + 1 - j];
            right[j] = tau[mu + j] - x;
            let mut saved = 0.0;
            for r in 0..j {
                let temp = n[r] / (right[r + 1] + left[j - r]);
                n[r] = saved + right[r + 1] * temp;
                saved = left[j - r] * temp;
            }
            n[j] = saved;
        }
        n
    }

    /// Points where `A` is fitted: four in each interval, two past each end (as far out as
    /// the end interval is wide, so the continued functions stay of order one).
    fn sample_points(&self) -> Vec<f64> {
        let t = self.knots;
        let mut points: Vec<f64> = t
            .windows(2)
            .flat_map(|w| [0.1, 0.4, 0.6, 0.9].map(|f| w[0] + f * (w[1] - w[0])))
            .collect();
        let (h0, h1) = (t[1] - t[0], t[t.len() - 1] - t[t.len() - 2]);
        points.extend([t[0] - h0, t[0] - 2.0 * h0, t[t.len() - 1] + h1, t[t.len() - 1] + 2.0 * h1]);
        points.extend(t.iter().copied());
        points
    }

    /// `A` (`[K, K + 2]`, row-major) with `natural(x) = A B(x)`; `None` when the fitted `A`
    /// misses the natural basis by more than `1e-9 (1 + |natural(x)|)` at some fitted point.
    pub fn transform(&self) -> Option<Vec<f64>> {
        let (k, w) = (self.knots.len(), self.width());
        let points = self.sample_points();
        let dense = |x: f64| {
            let (s, v) = self.row(x);
            let mut c = vec![0.0; w];
            c[s..s + 4].copy_from_slice(&v);
            c
        };
        // Normal equations G X = R: G = C'C, R = C'N, X = A'.
        let (mut g, mut r) = (vec![0.0; w * w], vec![0.0; w * k]);
        let mut natural = vec![0.0; k];
        for &x in &points {
            let c = dense(x);
            natural_spline_basis(x, self.knots, &mut natural);
            for a in 0..w {
                g[a * w..(a + 1) * w].iter_mut().zip(&c).for_each(|(v, cb)| *v += c[a] * cb);
                r[a * k..(a + 1) * k].iter_mut().zip(&natural).for_each(|(v, n)| *v += c[a] * n);
            }
        }
        let mut transform = vec![0.0; k * w];
        for col in 0..k {
            let rhs: Vec<f64> = (0..w).map(|a| -r[a * k + col]).collect();
            let x = crate::binary::newton_step(&g, &rhs);
            (0..w).for_each(|a| transform[col * w + a] = x[a]);
        }
        let exact = points.iter().all(|&x| {
            let c = dense(x);
            natural_spline_basis(x, self.knots, &mut natural);
            natural.iter().enumerate().all(|(i, &n)| {
                let fitted: f64 =
                    transform[i * w..(i + 1) * w].iter().zip(&c).map(|(a, b)| a * b).sum();
                (fitted - n).abs() <= 1e-9 * (1.0 + n.abs())
            })
        });
        exact.then_some(transform)
    }

    /// The rows of `xs` in the local basis, or `None` when `A` does not check out.
    pub fn local_rows(&self, xs: impl Iterator<Item = f64>) -> Option<LocalRows> {
        let mut rows = LocalRows::new(self.width(), self.transform()?);
        for x in xs {
            let (start, values) = self.row(x);
            rows.push(start, values);
        }
        Some(rows)
    }
}

/// Basis rows: dense natural-basis rows `[M, K]`, or the same rows through B-splines (four
/// non-zeros a row; used whenever the transform checks out).
#[derive(Clone)]
pub(super) enum Rows {
    Dense(Vec<f64>),
    Local(LocalRows),
}

impl Rows {
    /// The rows of `xs` (log-odds) on `knots`.
    pub fn new(knots: &[f64], xs: impl Iterator<Item = f64> + Clone) -> Self {
        if let Some(local) = BSplines::new(knots).local_rows(xs.clone()) {
            return Self::Local(local);
        }
        let mut dense = vec![0.0; knots.len()];
        Self::Dense(
            xs.flat_map(|x| {
                natural_spline_basis(x, knots, &mut dense);
                dense.clone()
            })
            .collect(),
        )
    }

    pub fn push_row_of(&mut self, other: &Self, i: usize, k: usize) {
        match (self, other) {
            (Self::Dense(a), Self::Dense(b)) => a.extend_from_slice(&b[i * k..(i + 1) * k]),
            (Self::Local(a), Self::Local(b)) => a.push_row_of(b, i),
            _ => unreachable!("rows of one design share a basis"),
        }
    }

    /// `beta . B(x_i)` of every row.
    pub fn linear(&self, beta: &[f64]) -> Vec<f64> {
        match self {
            Self::Dense(x) => x
                .chunks_exact(beta.len())
                .map(|b| b.iter().zip(beta).map(|(a, c)| a * c).sum())
                .collect(),
            Self::Local(l) => {
                let gamma = l.gamma(beta);
                (0..l.len()).map(|i| l.z(&gamma, i)).collect()
            }
        }
    }

    pub fn features(&self) -> Features<'_> {
        match self {
            Self::Dense(x) => Features::Dense(x),
            Self::Local(l) => Features::Local(l),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOTS: [f64; 7] = [-6.0, -2.2, -1.0, -0.999, 0.3, 2.0, 7.5];

    #[test]
    fn b_splines_sum_to_one_inside_and_continue_linearly() {
        let b = BSplines::new(&KNOTS);
        for x in [-6.0, -3.0, -1.0, -0.9995, 0.0, 5.0, 7.5] {
            let (_, v) = b.row(x);
            assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-13, "{x}: {v:?}");
        }
        // Past the ends: linear, so midpoints average.
        for (lo, hi) in [(-20.0, -8.0), (8.0, 30.0)] {
            let (s, a) = b.row(lo);
            let (_, c) = b.row(hi);
            let (_, m) = b.row(0.5 * (lo + hi));
            assert!((0..4).all(|q| (m[q] - 0.5 * (a[q] + c[q])).abs() < 1e-12), "{s}");
        }
    }

    /// `A B(x)` equals the natural basis at points the fit never saw, inside and past the ends.
    #[test]
    fn transform_reproduces_the_natural_basis() {
        let b = BSplines::new(&KNOTS);
        let a = b.transform().expect("an exact transform");
        let (k, w) = (KNOTS.len(), b.width());
        let mut natural = vec![0.0; k];
        for i in 0..200 {
            let x = -25.0 + 0.2537 * i as f64;
            let (s, v) = b.row(x);
            natural_spline_basis(x, &KNOTS, &mut natural);
            for (f, &n) in natural.iter().enumerate() {
                let fitted: f64 = (0..4).map(|q| a[f * w + s + q] * v[q]).sum();
                assert!((fitted - n).abs() <= 1e-9 * (1.0 + n.abs()), "x {x} f {f}: {fitted} {n}");
            }
        }
    }
}
