//! Logistic regression on a few features by Newton's method on the host: the fit behind beta
//! calibration, the host Platt maps, scaling-binning and spline calibration.
//!
//! ```text
//! z_i = w . x_i + b,   loss(w, b) = (1/N) sum_i v_i [softplus(z_i) - t_i z_i] + (l2 / 2) |w|^2
//! grad = (1/N) X' v (sigmoid(z) - t) + l2 w,   H = (1/N) X' diag(v s (1 - s)) X + l2 I
//! (v: sample weights, 1 by default)
//! ```
//!
//! Targets `t` may be soft (Platt's). Each step solves `H d = -grad` by Cholesky and
//! backtracks until the loss falls (Armijo). The fit stops at `|grad|_inf <= 1e-11` or a Newton
//! decrement `-grad . d <= 1e-18` (converged), or when a step changes nothing; a separable problem (the loss falling towards 0 while `|w|` grows
//! without bound) is detected and stopped within a few steps, `separable = true`.

use calib_kernels::{dispatch, exp_nonpositive, lane_dot, lane_sum, ln_1p_unit};

use super::local_rows::{CHUNK, LocalRows};
use crate::fit::host::gemm::{MatRef, gemm};

/// The feature rows of a problem.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Features<'a> {
    /// `[N, d]`, row-major.
    Dense(&'a [f64]),
    /// `x_i = A c_i` through a local basis (spline bases); no intercept.
    Local(&'a LocalRows),
}

/// One logistic-regression problem: features `[N, d]` (row-major), targets `[N]` in `[0, 1]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogisticProblem<'a> {
    /// The rows `x_i`, `[N, d]`.
    pub features: Features<'a>,
    /// d.
    pub n_features: usize,
    /// `[N]`.
    pub targets: &'a [f64],
    /// Whether an intercept `b` is fitted (it is never penalised).
    pub intercept: bool,
    /// L2 strength on `w`.
    pub l2: f64,
    /// Per-sample weights (`None`: all 1); the loss stays a sum over N divided by N.
    pub weights: Option<&'a [f64]>,
}

/// The fitted weights: `w` then, with an intercept, `b`.
#[derive(Debug, Clone)]
pub(crate) struct LogisticFit {
    /// `[d]` or `[d + 1]`.
    pub weights: Vec<f64>,
    /// Newton iterations.
    pub iterations: usize,
    /// True when the gradient tolerance was met.
    pub converged: bool,
    /// True when the data are separable and the weights have no finite optimum.
    pub separable: bool,
}

/// Rows a core sums at a time in one evaluation.
const BLOCK_ROWS: usize = 32_768;

const MAX_ITER: usize = 200;
const TOL_GRAD: f64 = 1e-11;
const WEIGHT_LIMIT: f64 = 1e6;

impl<'a> LogisticProblem<'a> {
    /// `sigmoid(w x + b)` on one feature: intercept, no penalty, unit weights (Platt's model).
    pub fn one_feature(features: &'a [f64], targets: &'a [f64]) -> Self {
        let features = Features::Dense(features);
        Self { features, n_features: 1, targets, intercept: true, l2: 0.0, weights: None }
    }
}

impl LogisticProblem<'_> {
    fn dim(&self) -> usize {
        self.n_features + usize::from(self.intercept)
    }

    /// `x_i` extended with 1 for the intercept, dotted with `w`.
    fn linear(&self, x: &[f64], w: &[f64]) -> f64 {
        let z: f64 = x.iter().zip(w).map(|(a, b)| a * b).sum();
        if self.intercept { z + w[self.n_features] } else { z }
    }

    /// Loss terms, residuals `v (s - t)` and curvatures `v s (1 - s)` of rows
    /// `start..start + z.len()` at their `z`, into `out` (`[3][len]`): one branch-free loop,
    /// compiled for AVX2 where the CPU has it, so `exp` and `ln` vectorise.
    pub(crate) fn terms(&self, start: usize, z: &[f64], out: &mut [Vec<f64>; 3]) {
        let n = z.len();
        let t = &self.targets[start..start + n];
        let v = self.weights.map(|v| &v[start..start + n]);
        let [loss, r, u] = out;
        let (loss, r, u) = (&mut loss[..n], &mut r[..n], &mut u[..n]);
        // `for` loops over zipped slices: they vectorise where index loops keep their bounds
        // checks, and `for_each`'s `fold` is not always inlined into the AVX2 copy.
        dispatch(
            #[inline(always)]
            || {
                let outs = loss.iter_mut().zip(r.iter_mut()).zip(u.iter_mut());
                match v {
                    None => {
                        for (((l, r), u), (&z, &t)) in outs.zip(z.iter().zip(t)) {
                            (*l, *r, *u) = terms(z, t, 1.0);
                        }
                    }
                    Some(v) => {
                        for (((l, r), u), ((&z, &t), &v)) in outs.zip(z.iter().zip(t).zip(v)) {
                            (*l, *r, *u) = terms(z, t, v);
                        }
                    }
                }
            },
        );
    }

    /// The mean loss at `w`.
    pub fn loss(&self, w: &[f64]) -> f64 {
        self.evaluate_with(w, false).loss
    }

    /// Loss, gradient and Hessian at `w`.
    fn evaluate(&self, w: &[f64]) -> Eval {
        self.evaluate_with(w, true)
    }

    /// Loss, gradient and Hessian (row-major `[m, m]`) at `w` in one pass over the rows, the
    /// rows shared out over the cores in blocks of [`BLOCK_ROWS`] summed in block order (the
    /// same bits at every thread count): `X' v r` and `X' diag(v s (1 - s)) X` (a matrix
    /// product per block when `m` is large), plus the penalty.
    fn evaluate_with(&self, w: &[f64], derivatives: bool) -> Eval {
        let (d, m, n) = (self.n_features, self.dim(), self.targets.len());
        let starts: Vec<usize> = (0..n).step_by(BLOCK_ROWS).collect();
        let parts: Vec<Eval> = if starts.len() <= 1 {
            vec![self.evaluate_rows(w, 0..n, derivatives)]
        } else {
            calib_kernels::in_order(&starts, |&start| {
                self.evaluate_rows(w, start..n.min(start + BLOCK_ROWS), derivatives)
            })
        };
        let mut total = Eval { loss: 0.0, g: vec![0.0; m], h: vec![0.0; m * m] };
        for part in parts {
            total.loss += part.loss;
            total.g.iter_mut().zip(&part.g).for_each(|(a, b)| *a += b);
            total.h.iter_mut().zip(&part.h).for_each(|(a, b)| *a += b);
        }
        let inv = 1.0 / n as f64;
        total.loss = total.loss * inv + 0.5 * self.l2 * w[..d].iter().map(|v| v * v).sum::<f64>();
        for a in 0..m {
            total.g[a] = total.g[a] * inv + if a < d { self.l2 * w[a] } else { 0.0 };
            for b in 0..m {
                let ridge = if a == b && a < d { self.l2 } else { 0.0 };
                total.h[a * m + b] = total.h[a * m + b] * inv + ridge;
            }
        }
        total
    }

    /// Unscaled sums of rows `rows`.
    fn evaluate_rows(&self, w: &[f64], rows: std::ops::Range<usize>, derivatives: bool) -> Eval {
        let features = match self.features {
            Features::Dense(x) => x,
            Features::Local(local) => {
                debug_assert!(!self.intercept && local.n_features() == self.n_features);
                let sums =
                    local.sums(&local.gamma(w), rows, derivatives, |s, z, t| self.terms(s, z, t));
                let m = self.dim();
                let (g, h) =
                    if derivatives { local.lift(&sums) } else { (vec![0.0; m], vec![0.0; m * m]) };
                return Eval { loss: sums.loss, g, h };
            }
        };
        let (d, m) = (self.n_features, self.dim());
        if m <= 4 {
            return dispatch(
                #[inline(always)]
                || self.few_parameter_sums(features, w, rows, derivatives),
            );
        }
        let mut out = Eval { loss: 0.0, g: vec![0.0; m], h: vec![0.0; m * m] };
        // Many parameters: the Hessian of the block as one matrix product.
        let cap = if derivatives { rows.len() * m } else { 0 };
        let (mut x, mut scaled) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        let mut row = vec![1.0; m];
        let (mut z, mut terms) =
            (Vec::with_capacity(CHUNK), [vec![0.0; CHUNK], vec![0.0; CHUNK], vec![0.0; CHUNK]]);
        for i in rows.clone() {
            let j = (i - rows.start) % CHUNK;
            if j == 0 {
                let end = (i + CHUNK).min(rows.end);
                z.clear();
                z.extend((i..end).map(|k| self.linear(&features[k * d..(k + 1) * d], w)));
                self.terms(i, &z, &mut terms);
            }
            row[..d].copy_from_slice(&features[i * d..(i + 1) * d]);
            let (loss, r, c) = (terms[0][j], terms[1][j], terms[2][j]);
            out.loss += loss;
            if !derivatives {
                continue;
            }
            for a in 0..m {
                out.g[a] += r * row[a];
            }
            x.extend_from_slice(&row);
            scaled.extend(row.iter().map(|a| c * a));
        }
        if derivatives {
            let len = rows.len();
            let xm = MatRef::row_major(&x, len, m);
            gemm(xm.t(), MatRef::row_major(&scaled, len, m), 0.0, &mut out.h);
        }
        out
    }

    /// [`Self::evaluate_rows`] with at most four parameters, a chunk of rows at a time: the
    /// features copied into columns (the intercept's a column of ones), `z` column by column,
    /// then every gradient and Hessian entry of the chunk as a lane sum (vectorised, where
    /// row-by-row updates of the `m + m^2` sums could not be).
    #[inline(always)]
    fn few_parameter_sums(
        &self,
        x: &[f64],
        w: &[f64],
        rows: std::ops::Range<usize>,
        derivatives: bool,
    ) -> Eval {
        let (d, m) = (self.n_features, self.dim());
        let mut out = Eval { loss: 0.0, g: vec![0.0; m], h: vec![0.0; m * m] };
        let mut z = vec![0.0; CHUNK];
        let mut terms = [vec![0.0; CHUNK], vec![0.0; CHUNK], vec![0.0; CHUNK]];
        let mut columns = vec![vec![1.0; CHUNK]; m];
        let mut weighted = vec![0.0; CHUNK];
        for start in rows.clone().step_by(CHUNK) {
            let len = (start + CHUNK).min(rows.end) - start;
            let block = &x[start * d..(start + len) * d];
            for (a, column) in columns.iter_mut().take(d).enumerate() {
                column[..len]
                    .iter_mut()
                    .zip(block.iter().skip(a).step_by(d))
                    .for_each(|(c, &v)| *c = v);
            }
            // The same sum, in the same order, as `linear`.
            let z = &mut z[..len];
            z.fill(0.0);
            for (a, column) in columns.iter().take(d).enumerate() {
                z.iter_mut().zip(&column[..len]).for_each(|(z, &v)| *z += v * w[a]);
            }
            if self.intercept {
                z.iter_mut().for_each(|z| *z += w[d]);
            }
            self.terms(start, z, &mut terms);
            out.loss += lane_sum(&terms[0][..len]);
            if !derivatives {
                continue;
            }
            let (r, u) = (&terms[1][..len], &terms[2][..len]);
            for a in 0..m {
                out.g[a] += lane_dot(r, &columns[a][..len]);
                let weighted = &mut weighted[..len];
                weighted
                    .iter_mut()
                    .zip(u)
                    .zip(&columns[a][..len])
                    .for_each(|((o, &u), &v)| *o = u * v);
                for b in a..m {
                    let v = lane_dot(&weighted[..len], &columns[b][..len]);
                    out.h[a * m + b] += v;
                    if b != a {
                        out.h[b * m + a] += v;
                    }
                }
            }
        }
        out
    }

    /// Newton's method from `w0`.
    pub fn fit(&self, w0: Vec<f64>) -> LogisticFit {
        let mut w = w0;
        let mut at = self.evaluate(&w);
        let fit = |w: Vec<f64>, iterations, converged, separable| LogisticFit {
            weights: w,
            iterations,
            converged,
            separable,
        };
        for iteration in 0..MAX_ITER {
            let grad_norm = at.g.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            if grad_norm <= TOL_GRAD {
                return fit(w, iteration, true, false);
            }
            if self.diverging(&w, at.loss) {
                return fit(w, iteration, false, true);
            }
            let step = newton_step(&at.h, &at.g);
            // The Newton decrement -g.d: twice what the quadratic model can still gain, a
            // stopping rule that ignores the features' scale (spline bases reach 1e5).
            let decrement = -step.iter().zip(&at.g).map(|(a, b)| a * b).sum::<f64>();
            if decrement <= 1e-18 {
                return fit(w, iteration, true, false);
            }
            match self.backtrack(&w, &step, &at) {
                Some((next, next_at)) => {
                    let stalled =
                        (at.loss - next_at.loss).abs() <= 1e-16 * at.loss.abs().max(1e-300);
                    (w, at) = (next, next_at);
                    if stalled {
                        return fit(w, iteration + 1, decrement <= 1e-10, false);
                    }
                }
                None => return fit(w, iteration, decrement <= 1e-10, false),
            }
        }
        fit(w, MAX_ITER, false, false)
    }

    /// Loss near 0 with unpenalised weights growing: no finite optimum.
    fn diverging(&self, w: &[f64], loss: f64) -> bool {
        self.l2 == 0.0 && (loss < 1e-9 || w.iter().any(|v| v.abs() > WEIGHT_LIMIT))
    }

    /// The first of `w + step / 2^j` (j < 40) whose loss satisfies Armijo's condition, with
    /// its full evaluation (trials cost a loss pass only).
    fn backtrack(&self, w: &[f64], step: &[f64], at: &Eval) -> Option<(Vec<f64>, Eval)> {
        let slope: f64 = step.iter().zip(&at.g).map(|(a, b)| a * b).sum();
        if -slope <= 1e-13 * at.loss.abs() {
            // The gain the step promises is below the rounding of a sum over the rows, so
            // Armijo's test cannot see it (and would halve the step 40 times): take the step
            // when it shrinks the gradient.
            let next: Vec<f64> = w.iter().zip(step).map(|(a, b)| a + b).collect();
            let next_at = self.evaluate(&next);
            let norm = |g: &[f64]| g.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            return (norm(&next_at.g) < norm(&at.g)).then_some((next, next_at));
        }
        let mut t = 1.0;
        for _ in 0..40 {
            let next: Vec<f64> = w.iter().zip(step).map(|(a, b)| a + t * b).collect();
            // With a few features or local rows the derivatives cost little beside the exp, so
            // a trial is evaluated whole; with many dense features trials take a loss pass only.
            let cheap = self.dim() <= 4 || matches!(self.features, Features::Local(_));
            let trial = if cheap { Some(self.evaluate(&next)) } else { None };
            let loss = trial.as_ref().map_or_else(|| self.loss(&next), |e| e.loss);
            if loss <= at.loss + 1e-4 * t * slope.min(0.0) {
                let next_at = trial.unwrap_or_else(|| self.evaluate(&next));
                return Some((next, next_at));
            }
            t *= 0.5;
        }
        None
    }
}

/// One row's loss term, residual and curvature at `z` (target `t`, weight `v`).
#[inline(always)]
fn terms(z: f64, t: f64, v: f64) -> (f64, f64, f64) {
    // One exp serves both: e = exp(-|z|), softplus(z) = max(z, 0) + ln(1 + e).
    let e = exp_nonpositive(-z.abs());
    let s = (if z >= 0.0 { 1.0 } else { e }) / (1.0 + e);
    (v * (z.max(0.0) + ln_1p_unit(e) - t * z), v * (s - t), v * s * (1.0 - s))
}

/// Loss, gradient and Hessian at one point.
struct Eval {
    loss: f64,
    g: Vec<f64>,
    h: Vec<f64>,
}

/// `-H^{-1} g` by Cholesky; steepest descent where `H` is not positive definite.
pub(crate) fn newton_step(h: &[f64], g: &[f64]) -> Vec<f64> {
    let m = g.len();
    let mut l = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..=i {
            let s: f64 = h[i * m + j] - (0..j).map(|k| l[i * m + k] * l[j * m + k]).sum::<f64>();
            if i == j {
                if s <= 1e-300 {
                    return g.iter().map(|v| -v).collect();
                }
                l[i * m + i] = s.sqrt();
            } else {
                l[i * m + j] = s / l[j * m + j];
            }
        }
    }
    let mut y = vec![0.0; m];
    for i in 0..m {
        y[i] = (-g[i] - (0..i).map(|k| l[i * m + k] * y[k]).sum::<f64>()) / l[i * m + i];
    }
    let mut x = vec![0.0; m];
    for i in (0..m).rev() {
        x[i] = (y[i] - (i + 1..m).map(|k| l[k * m + i] * x[k]).sum::<f64>()) / l[i * m + i];
    }
    x
}

/// [`sigmoid`] from the vectorised `exp` (`e = exp(-|z|)`, branch-free), within a few ulp.
#[inline(always)]
pub(crate) fn sigmoid_fast(z: f64) -> f64 {
    let e = exp_nonpositive(-z.abs());
    (if z >= 0.0 { 1.0 } else { e }) / (1.0 + e)
}

/// `1 / (1 + e^-z)` without overflow. The C library's `exp`: a fitted map's outputs stay what
/// they were when it was saved (a binned map's bin can hang on the last bit of its input).
pub(crate) fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two overlapping classes: the optimum has a zero gradient, checked by finite
    /// differences of the loss.
    #[test]
    fn reaches_a_stationary_point() {
        let x = [-2.0, -1.0, -0.5, 0.0, 0.3, 0.8, 1.0, 2.0];
        let t = [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0];
        let p = LogisticProblem::one_feature(&x, &t);
        let fit = p.fit(vec![0.0, 0.0]);
        assert!(fit.converged && !fit.separable, "{fit:?}");
        for k in 0..2 {
            let mut hi = fit.weights.clone();
            let mut lo = fit.weights.clone();
            hi[k] += 1e-5;
            lo[k] -= 1e-5;
            let fd = (p.loss(&hi) - p.loss(&lo)) / 2e-5;
            assert!(fd.abs() < 1e-8, "d loss / d w{k} = {fd}");
        }
    }

    /// More rows than a block: the blocks are fixed, so one thread and two give the same bits.
    #[test]
    fn the_fit_does_not_depend_on_the_thread_count() {
        let n = 2 * BLOCK_ROWS + 1234;
        let x: Vec<f64> = (0..2 * n).map(|i| ((i * 7919) % 1000) as f64 / 250.0 - 2.0).collect();
        let t: Vec<f64> = (0..n).map(|i| f64::from(u8::from((i * 31) % 7 < 3))).collect();
        let problem = LogisticProblem {
            features: Features::Dense(&x),
            n_features: 2,
            targets: &t,
            intercept: true,
            l2: 0.0,
            weights: None,
        };
        calib_kernels::set_threads(1);
        let one = problem.fit(vec![0.0; 3]);
        calib_kernels::set_threads(2);
        let two = problem.fit(vec![0.0; 3]);
        calib_kernels::set_threads(0);
        assert_eq!(one.weights, two.weights);
        assert!(one.converged);
    }

    #[test]
    fn separable_data_stop_quickly() {
        let x = [-2.0, -1.0, 1.0, 2.0];
        let t = [0.0, 0.0, 1.0, 1.0];
        let p = LogisticProblem::one_feature(&x, &t);
        let fit = p.fit(vec![0.0, 0.0]);
        assert!(fit.separable && !fit.converged && fit.iterations < 60, "{fit:?}");
    }
}
