//! CDF-spline calibration (Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu & Hartley 2021,
//! "Calibration of neural networks using splines", ICLR; probmetrics' `CDFSplineCalibrator`).
//!
//! ```text
//! scores sorted s_(1) <= ... <= s_(n) with outcomes o_(i);  t_i = (i - 1) / (n - 1)
//! A_i = (1/n) sum_{j <= i} o_(j),   S_i = (1/n) sum_{j <= i} s_(j)
//! g = the natural cubic spline with knots 0, 1/(m-1), ..., 1 (m = 6) whose knot values
//!     minimise sum_i (g(t_i) - (A_i - S_i))^2
//! calibrated training scores c_i = s_(i) + g'(t_i)
//! m(s) = linear interpolation of (s_(i), c_i) in s (numpy's `interp`: constant outside, the
//!        last of tied scores), clipped to [0, 1]
//! ```
//!
//! The derivative of the cumulative gap between accuracy and confidence is the local
//! miscalibration. The clip is calib's: probmetrics returns `c` as it is, outside [0, 1] near
//! the ends of the scores, where its log-loss is NaN (tests/benchmark_maps.rs shows it). The
//! spline is the one of the paper's code (`kartikgupta-at-anu/spline-calibration`): second
//! derivatives from the knot values by the tridiagonal system `M_{j-1} + 4 M_j + M_{j+1} =
//! 6 (y_{j-1} - 2 y_j + y_{j+1}) / h^2`, zero at both ends. Host, f64; O(N log N). Sample
//! weights: a row of weight `w` is `floor(w)` unit copies and a copy of weight `w - floor(w)`
//! along the curves (`n` becomes `W`), each copy weighted by its weight in the least squares,
//! so whole-number weights are the repeated rows; O(sum ceil(w)) then. The map keeps a row's
//! first and last copies, all that interpolation reads of a run of tied scores.

use std::collections::BTreeMap;

use burn::config::Config;

use crate::api::{Method, SavedTensor};
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::{FitError, Result};

/// A fitted CDF-spline map: sorted training scores and their calibrated values.
#[derive(Debug, Clone, PartialEq)]
pub struct CdfSplineMap {
    scores: Vec<f64>,
    values: Vec<f64>,
}

/// CDF-spline calibration as a calibrator ([`MapCalibrator`] of [`CdfSplineMap`]s).
pub type CdfSplineCalibration = MapCalibrator<CdfSplineMap>;

impl CdfSplineMap {
    /// The sorted training scores and their calibrated values (before the clip).
    pub fn table(&self) -> (&[f64], &[f64]) {
        (&self.scores, &self.values)
    }
}

/// numpy's `interp(x, xs, ys)` on non-decreasing `xs`.
fn interp(x: f64, xs: &[f64], ys: &[f64]) -> f64 {
    let last = xs.len() - 1;
    if x < xs[0] {
        return ys[0];
    }
    if x >= xs[last] {
        return ys[last];
    }
    let j = xs.partition_point(|&v| v <= x) - 1;
    if xs[j] == x {
        return ys[j];
    }
    ys[j] + (ys[j + 1] - ys[j]) * (x - xs[j]) / (xs[j + 1] - xs[j])
}

impl BinaryMap for CdfSplineMap {
    const METHOD: Method = Method::CdfSpline;

    fn predict(&self, s: f64) -> f64 {
        interp(s, &self.scores, &self.values).clamp(0.0, 1.0)
    }

    fn identity() -> Self {
        Self { scores: vec![0.0, 1.0], values: vec![0.0, 1.0] }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "scores", self.scores.clone());
        crate::binary::put(out, prefix, "values", self.values.clone());
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let scores = crate::binary::table(parameters, prefix, "scores")?.to_vec();
        let values = crate::binary::table(parameters, prefix, "values")?.to_vec();
        if scores.is_empty()
            || scores.len() != values.len()
            || scores.windows(2).any(|p| p[0] > p[1])
        {
            return Err(FitError::Format(format!(
                "cdf-spline map `{prefix}` needs equally long tables with sorted scores"
            )));
        }
        Ok(Self { scores, values })
    }
}

/// The natural cubic spline of `m` equally spaced knots on [0, 1], as linear maps of its knot
/// values.
struct KnotSpline {
    m: usize,
    h: f64,
    /// `[M; y]` from the knot values: `2m x m`, row-major.
    from_knots: Vec<f64>,
}

impl KnotSpline {
    fn new(m: usize) -> Self {
        let h = 1.0 / (m - 1) as f64;
        let inner = m - 2;
        // A M_inner = B y: A tridiagonal (4 on the diagonal, 1 beside), B the second difference.
        let mut a = vec![0.0; inner * inner];
        let mut rhs = vec![0.0; inner * m];
        for i in 0..inner {
            a[i * inner + i] = 4.0;
            if i + 1 < inner {
                a[i * inner + i + 1] = 1.0;
                a[(i + 1) * inner + i] = 1.0;
            }
            let scale = 6.0 / (h * h);
            rhs[i * m + i] = scale;
            rhs[i * m + i + 1] = -2.0 * scale;
            rhs[i * m + i + 2] = scale;
        }
        let solved = solve_dense(a, rhs, inner, m);
        let mut from_knots = vec![0.0; 2 * m * m];
        // Row 0 and row m - 1 of M stay zero (natural run-out).
        from_knots[m..(m - 1) * m].copy_from_slice(&solved);
        for j in 0..m {
            from_knots[(m + j) * m + j] = 1.0;
        }
        Self { m, h, from_knots }
    }

    /// The row `[coefficients of M; of y]` (`2m`) of the value (`derivative = false`) or the
    /// derivative at `t`.
    fn row(&self, t: f64, derivative: bool) -> Vec<f64> {
        let (m, h) = (self.m, self.h);
        let j = ((t / h).floor().max(0.0) as usize).min(m - 2);
        let x = t - j as f64 * h;
        let mut row = vec![0.0; 2 * m];
        if derivative {
            row[j] = -x * x / (2.0 * h) + x - h / 3.0;
            row[j + 1] = x * x / (2.0 * h) - h / 6.0;
            row[m + j] = -1.0 / h;
            row[m + j + 1] = 1.0 / h;
        } else {
            row[j] = -x.powi(3) / (6.0 * h) + x * x / 2.0 - h * x / 3.0;
            row[j + 1] = x.powi(3) / (6.0 * h) - h * x / 6.0;
            row[m + j] = 1.0 - x / h;
            row[m + j + 1] = x / h;
        }
        row
    }

    /// The row as a linear map of the knot values (`m`).
    fn on_knots(&self, t: f64, derivative: bool) -> Vec<f64> {
        let m = self.m;
        let row = self.row(t, derivative);
        (0..m).map(|c| (0..2 * m).map(|r| row[r] * self.from_knots[r * m + c]).sum()).collect()
    }
}

/// `A^-1 B` for a small dense `A` (`n x n`) and `B` (`n x cols`), by Gauss-Jordan with
/// partial pivoting.
fn solve_dense(mut a: Vec<f64>, mut b: Vec<f64>, n: usize, cols: usize) -> Vec<f64> {
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i * n + c].abs().total_cmp(&a[j * n + c].abs())).unwrap();
        for k in 0..n {
            a.swap(c * n + k, p * n + k);
        }
        for k in 0..cols {
            b.swap(c * cols + k, p * cols + k);
        }
        let d = a[c * n + c];
        for r in 0..n {
            if r == c {
                continue;
            }
            let f = a[r * n + c] / d;
            for k in 0..n {
                a[r * n + k] -= f * a[c * n + k];
            }
            for k in 0..cols {
                b[r * cols + k] -= f * b[c * cols + k];
            }
        }
    }
    for r in 0..n {
        let d = a[r * n + r];
        b[r * cols..(r + 1) * cols].iter_mut().for_each(|v| *v /= d);
    }
    b
}

/// Settings of a CDF-spline fit.
#[derive(Config, Debug, PartialEq)]
pub struct CdfSplineCalibrationConfig {
    /// Knots of the spline on [0, 1] (the paper's and probmetrics' 6).
    #[config(default = 6)]
    pub n_knots: usize,
    /// One-vs-rest or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl BinaryFit for CdfSplineCalibrationConfig {
    type Map = CdfSplineMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        if self.n_knots < 3 {
            return Err(FitError::InvalidConfig("n_knots must be at least 3".into()));
        }
        Ok(())
    }

    /// The fit; with weights each row is `floor(w)` unit copies and one copy of weight
    /// `w - floor(w)` (if any), in a row of the cumulative curves: copy `q` of sorted row `i`
    /// sits at `t = (C_{i-1} + q) / (W - 1)` with `A, S` its running sums `/ W`, weighs its own
    /// weight in the least squares; the map keeps the row's first and last copies.
    /// Whole-number weights are the repeated rows.
    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<CdfSplineMap>> {
        let ones = vec![1.0; scores.len()];
        let weights = weights.unwrap_or(&ones);
        let total: f64 = weights.iter().sum();
        let copies: f64 = weights.iter().map(|w| w.ceil()).sum();
        if total < 2.0 || copies > MAX_COPIES {
            let reason = if total < 2.0 {
                format!("calibration weight {total}: the cumulative curves need 2")
            } else {
                format!(
                    "{copies} unit copies of the weighted rows; at most {MAX_COPIES} (rescale the weights)"
                )
            };
            return Err(FitError::UnsuitableInput {
                method: Method::CdfSpline.name().into(),
                reason,
            });
        }
        let mut rows: Vec<(f64, bool, f64)> =
            (0..scores.len()).map(|i| (scores[i], outcomes[i], weights[i])).collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let spline = KnotSpline::new(self.n_knots);
        let m = self.n_knots;
        let (inv_total, t) = (1.0 / total, |position: f64| position / (total - 1.0));
        // Normal equations of the weighted least-squares fit of the knot values.
        let (mut gram, mut rhs) = (vec![0.0; m * m], vec![0.0; m]);
        let (mut acc, mut conf, mut position) = (0.0, 0.0, 0.0);
        // The map's points: each row at its first copy's position and, with more copies, its
        // last (interpolation reads a tie run's first and last point alone, as numpy does).
        let mut points: Vec<(f64, f64)> = Vec::with_capacity(rows.len());
        for &(s, o, w) in &rows {
            let (mut left, mut at) = (w, position);
            points.push((s, position));
            while left > 0.0 {
                let v = left.min(1.0);
                acc += v * f64::from(u8::from(o));
                conf += v * s;
                let target = (acc - conf) * inv_total;
                let row = spline.on_knots(t(position), false);
                for r in 0..m {
                    rhs[r] += v * row[r] * target;
                    for c in 0..m {
                        gram[r * m + c] += v * row[r] * row[c];
                    }
                }
                at = position;
                position += v;
                left -= v;
            }
            if at > points[points.len() - 1].1 {
                points.push((s, at));
            }
        }
        let knots = solve_dense(gram, rhs, m, 1);
        let derivative = |at: f64| -> f64 {
            spline.on_knots(t(at), true).iter().zip(&knots).map(|(a, b)| a * b).sum()
        };
        let values = points.iter().map(|&(s, at)| s + derivative(at)).collect();
        let scores = points.iter().map(|p| p.0).collect();
        Ok(BinaryFitted::exact(CdfSplineMap { scores, values }))
    }
}

/// The most unit copies (`sum ceil(w_i)`) a weighted fit walks.
const MAX_COPIES: f64 = 1e8;

crate::binary::fit_by_maps!(CdfSplineCalibrationConfig, CdfSplineCalibration);

#[cfg(test)]
mod tests {
    use super::*;

    /// The spline reproduces a cubic's knot interpolation: with knot values of a straight line
    /// the natural spline is that line, and its derivative the slope.
    #[test]
    fn a_linear_knot_vector_is_a_line() {
        let spline = KnotSpline::new(6);
        let knots: Vec<f64> = (0..6).map(|j| 0.5 + 2.0 * j as f64 / 5.0).collect();
        for t in [0.0, 0.13, 0.5, 0.77, 1.0] {
            let v: f64 = spline.on_knots(t, false).iter().zip(&knots).map(|(a, b)| a * b).sum();
            let d: f64 = spline.on_knots(t, true).iter().zip(&knots).map(|(a, b)| a * b).sum();
            assert!((v - (0.5 + 2.0 * t)).abs() < 1e-12 && (d - 2.0).abs() < 1e-12, "{t}");
        }
    }

    #[test]
    fn interpolates_as_numpy() {
        let (xs, ys) = ([0.1, 0.2, 0.2, 0.2, 0.5], [1.0, 2.0, 3.0, 4.0, 5.0]);
        let got: Vec<f64> =
            [0.2, 0.19, 0.21, 0.1, 0.5, 0.6, 0.0].iter().map(|&x| interp(x, &xs, &ys)).collect();
        let want = [4.0, 1.9, 4.0 + 1.0 / 30.0, 1.0, 5.0, 5.0, 1.0];
        assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-12), "{got:?}");
    }
}
