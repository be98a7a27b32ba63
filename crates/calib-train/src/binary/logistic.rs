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
//! decrement `-grad . d <= 1e-18` (converged), or when a step changes nothing; a separable
//! problem (the loss falling towards 0 while `|w|` grows without bound) is detected and stopped
//! within a few steps, `separable = true`. A step from a decrement of at most 1e-12 is the last,
//! taken without a pass to confirm it: Newton's quadratic convergence leaves about `C 1e-24`
//! after it, `C` of order 1 here (at 10^6 beta-calibration scores the decrements run 3e-5,
//! 3e-10, 3e-19).
//!
//! A problem of 2^17 rows or more with dense or computed features first fits a sample of its
//! rows (1/16, from every block) to a loose tolerance and starts the full fit there: at 10^6
//! scores, three passes over the rows instead of six.

use std::ops::Range;

use calib_kernels::{
    LANES, dispatch, exp_nonpositive, lane_dot, lane_sum, ln_1p_unit, ln_positive,
};

use super::local_rows::CHUNK;
use super::logistic_rows::{Features, NLL_CAP, Targets, stored_rows};
use crate::fit::host::gemm::{MatRef, gemm};

/// One logistic-regression problem: features `[N, d]` (row-major), targets `[N]` in `[0, 1]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogisticProblem<'a> {
    /// The rows `x_i`, `[N, d]`.
    pub features: Features<'a>,
    /// d.
    pub n_features: usize,
    /// `[N]`.
    pub targets: Targets<'a>,
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
    /// The mean NLL of the rows at their outcomes at `weights` (each capped at `-ln 1e-15`),
    /// for unweighted problems whose targets come from outcomes: after a last step taken
    /// unconfirmed, the NLL before it plus the step's change by the quadratic model (to
    /// `O(decrement^1.5)`, below 1e-18; taken only where no row is capped).
    pub nll: Option<f64>,
}

/// Rows a core sums at a time in one evaluation.
const BLOCK_ROWS: usize = 32_768;

/// Rows from which a fit starts from its fit on a sample ([`LogisticProblem::warm_start`]).
const SAMPLE_FROM: usize = 1 << 17;
/// The sample reads `1 / SAMPLE_SHARE` of the rows.
const SAMPLE_SHARE: usize = 16;

/// The rows a Newton run reads.
#[derive(Debug, Clone, Copy)]
enum Rows {
    All,
    /// The first `BLOCK_ROWS / SAMPLE_SHARE` rows of each block: spread over the whole of rows
    /// that may be sorted, each block's read in one run.
    Sample,
}

impl Rows {
    /// The rows read of the block from `start` (of `n` rows).
    fn of_block(self, start: usize, n: usize) -> Range<usize> {
        let len = match self {
            Self::All => BLOCK_ROWS,
            Self::Sample => BLOCK_ROWS / SAMPLE_SHARE,
        };
        start..n.min(start + len)
    }

    /// The Newton decrement at which a run stops, converged: the full fit's, or, for a warm
    /// start, well below what the sample's noise (about `d / rows`) leaves of it.
    fn decrement_tolerance(self) -> f64 {
        match self {
            Self::All => 1e-18,
            Self::Sample => 1e-6,
        }
    }
}

/// The Newton decrement below which the last step is taken unconfirmed.
const LAST_STEP_DECREMENT: f64 = 1e-12;

const MAX_ITER: usize = 200;
const TOL_GRAD: f64 = 1e-11;
const WEIGHT_LIMIT: f64 = 1e6;

impl<'a> LogisticProblem<'a> {
    /// `sigmoid(w x + b)` on one feature: intercept, no penalty, unit weights (Platt's model).
    pub fn one_feature(features: Features<'a>, targets: Targets<'a>) -> Self {
        Self { features, n_features: 1, targets, intercept: true, l2: 0.0, weights: None }
    }
}

impl LogisticProblem<'_> {
    fn dim(&self) -> usize {
        self.n_features + usize::from(self.intercept)
    }

    /// Loss terms, residuals `v (s - t)` and curvatures `v s (1 - s)` of rows
    /// `start..start + z.len()` at their `z`, into `out` (`[3][len]`): one branch-free loop,
    /// compiled for AVX2 where the CPU has it, so `exp` and `ln` vectorise.
    pub(crate) fn terms(&self, start: usize, z: &[f64], out: &mut [Vec<f64>; 3]) {
        self.terms_split(start, z, out, None);
    }

    /// [`Self::terms`]; unweighted with `softplus` given, the loss terms leave out
    /// `ln(1 + e)`, `e = exp(-|z|)`, and `softplus` receives each row's `1 + e` instead (for
    /// [`log_product`]: the rows' `ln` would cost as much as their `exp`).
    fn terms_split(
        &self,
        start: usize,
        z: &[f64],
        out: &mut [Vec<f64>; 3],
        softplus: Option<&mut [f64]>,
    ) {
        let n = z.len();
        let mut buf = [0.0; CHUNK];
        let t = self.targets.chunk(start..start + n, &mut buf);
        let v = self.weights.map(|v| &v[start..start + n]);
        let [loss, r, u] = out;
        let (loss, r, u) = (&mut loss[..n], &mut r[..n], &mut u[..n]);
        // `for` loops over zipped slices: they vectorise where index loops keep their bounds
        // checks, and `for_each`'s `fold` is not always inlined into the AVX2 copy.
        dispatch(
            #[inline(always)]
            || {
                let outs = loss.iter_mut().zip(r.iter_mut()).zip(u.iter_mut());
                match (v, softplus) {
                    (None, Some(one_e)) => {
                        let outs = outs.zip(&mut one_e[..n]);
                        for ((((l, r), u), p), (&z, &t)) in outs.zip(z.iter().zip(t)) {
                            let (e, s) = sigmoid_parts(z);
                            (*l, *r, *u, *p) = (z.max(0.0) - t * z, s - t, s * (1.0 - s), 1.0 + e);
                        }
                    }
                    (None, None) => {
                        for (((l, r), u), (&z, &t)) in outs.zip(z.iter().zip(t)) {
                            (*l, *r, *u) = terms(z, t, 1.0);
                        }
                    }
                    (Some(v), _) => {
                        for (((l, r), u), ((&z, &t), &v)) in outs.zip(z.iter().zip(t).zip(v)) {
                            (*l, *r, *u) = terms(z, t, v);
                        }
                    }
                }
            },
        );
    }

    /// The mean loss at `w`.
    #[cfg(test)]
    pub fn loss(&self, w: &[f64]) -> f64 {
        self.evaluate_with(w, false, Rows::All).loss
    }

    /// Loss, gradient and Hessian at `w` over `rows`.
    fn evaluate(&self, w: &[f64], rows: Rows) -> Eval {
        self.evaluate_with(w, true, rows)
    }

    /// Loss, gradient and Hessian (row-major `[m, m]`) at `w` in one pass over the rows, the
    /// rows shared out over the cores in blocks of [`BLOCK_ROWS`] summed in block order (the
    /// same bits at every thread count): `X' v r` and `X' diag(v s (1 - s)) X` (a matrix
    /// product per block when `m` is large), plus the penalty; over the sample's rows of
    /// each block for [`Rows::Sample`].
    fn evaluate_with(&self, w: &[f64], derivatives: bool, rows: Rows) -> Eval {
        let (d, m, n) = (self.n_features, self.dim(), self.targets.len());
        let starts: Vec<usize> = (0..n).step_by(BLOCK_ROWS).collect();
        let pass = |start| self.evaluate_rows(w, rows.of_block(start, n), derivatives);
        let parts: Vec<Eval> = if starts.len() <= 1 {
            starts.iter().map(|&start| pass(start)).collect()
        } else {
            calib_kernels::in_order(&starts, |&start| pass(start))
        };
        let mut total = Eval::zero(m);
        for part in parts {
            total.loss += part.loss;
            total.nll += part.nll;
            total.capped += part.capped;
            total.offsets.iter_mut().zip(&part.offsets).for_each(|(a, b)| *a += b);
            total.g.iter_mut().zip(&part.g).for_each(|(a, b)| *a += b);
            total.h.iter_mut().zip(&part.h).for_each(|(a, b)| *a += b);
        }
        let read: usize = starts.iter().map(|&start| rows.of_block(start, n).len()).sum();
        let inv = 1.0 / read as f64;
        total.loss = total.loss * inv + 0.5 * self.l2 * w[..d].iter().map(|v| v * v).sum::<f64>();
        total.nll *= inv;
        total.capped *= inv;
        total.offsets.iter_mut().for_each(|c| *c *= inv);
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
    fn evaluate_rows(&self, w: &[f64], rows: Range<usize>, derivatives: bool) -> Eval {
        if let Features::Local(local) = self.features {
            debug_assert!(!self.intercept && local.n_features() == self.n_features);
            let sums =
                local.sums(&local.gamma(w), rows, derivatives, |s, z, t| self.terms(s, z, t));
            let m = self.dim();
            let (g, h) =
                if derivatives { local.lift(&sums) } else { (vec![0.0; m], vec![0.0; m * m]) };
            return Eval { loss: sums.loss, g, h, ..Eval::zero(m) };
        }
        let m = self.dim();
        if m <= 4 {
            return dispatch(
                #[inline(always)]
                || self.few_parameter_sums(w, rows, derivatives),
            );
        }
        let mut out = Eval::zero(m);
        // Many parameters: the Hessian of the block as one matrix product.
        let cap = if derivatives { rows.len() * m } else { 0 };
        let (mut x, mut scaled) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        let mut chunk = Chunk::new(m);
        for start in rows.clone().step_by(CHUNK) {
            let len = (start + CHUNK).min(rows.end) - start;
            self.chunk_terms(w, start, len, &mut chunk, &mut out);
            if !derivatives {
                continue;
            }
            for j in 0..len {
                let (r, c) = (chunk.terms[1][j], chunk.terms[2][j]);
                for (a, g) in out.g.iter_mut().enumerate() {
                    let v = chunk.columns[a][j];
                    *g += r * v;
                    x.push(v);
                    scaled.push(c * v);
                }
            }
        }
        if derivatives {
            let len = rows.len();
            let xm = MatRef::row_major(&x, len, m);
            gemm(xm.t(), MatRef::row_major(&scaled, len, m), 0.0, &mut out.h);
        }
        out
    }

    /// The features of rows `start..start + len` into `chunk`'s columns, `z` from them, and
    /// their loss terms; adds the loss (and the NLL at the outcomes) to `out`.
    #[inline(always)]
    fn chunk_terms(&self, w: &[f64], start: usize, len: usize, chunk: &mut Chunk, out: &mut Eval) {
        let d = self.n_features;
        self.features.columns(d, start..start + len, &mut chunk.columns);
        // Each row's features dotted with `w` in feature order, then the intercept.
        let z = &mut chunk.z[..len];
        z.fill(0.0);
        for (a, column) in chunk.columns.iter().take(d).enumerate() {
            z.iter_mut().zip(&column[..len]).for_each(|(z, &v)| *z += v * w[a]);
        }
        if self.intercept {
            z.iter_mut().for_each(|z| *z += w[d]);
        }
        if self.weights.is_some() {
            self.terms(start, z, &mut chunk.terms);
            out.loss += lane_sum(&chunk.terms[0][..len]);
            return;
        }
        let one_e = &mut chunk.one_e[..len];
        self.terms_split(start, z, &mut chunk.terms, Some(one_e));
        let (linear, one_e) = (&chunk.terms[0][..len], &chunk.one_e[..len]);
        let softplus = log_product(one_e);
        out.loss += lane_sum(linear) + softplus;
        let Some(offsets) = self.targets.offsets(start..start + len, &mut chunk.offsets) else {
            return;
        };
        // Each row's NLL without its softplus, and its excess over the cap: positive only
        // where |z| > 34, so that e < 1e-15 is ln(1 + e) to 1e-30.
        let (raw, excess) = (&mut chunk.scratch[..len], &mut chunk.excess[..len]);
        let rows = raw.iter_mut().zip(excess.iter_mut());
        for ((raw, excess), (((&l, &p), &z), &o)) in
            rows.zip(linear.iter().zip(one_e).zip(z.iter()).zip(offsets))
        {
            *raw = l + o * z;
            *excess = (*raw + (p - 1.0) - NLL_CAP).max(0.0);
        }
        let capped = lane_sum(excess);
        out.nll += lane_sum(raw) + softplus - capped;
        out.capped += capped;
        for (c, column) in out.offsets.iter_mut().zip(&chunk.columns) {
            *c += lane_dot(offsets, &column[..len]);
        }
    }

    /// [`Self::evaluate_rows`] with at most four parameters, a chunk of rows at a time: the
    /// features in columns (the intercept's a column of ones), `z` column by column, then
    /// every gradient and Hessian entry of the chunk as a lane sum (vectorised, where
    /// row-by-row updates of the `m + m^2` sums could not be).
    #[inline(always)]
    fn few_parameter_sums(&self, w: &[f64], rows: Range<usize>, derivatives: bool) -> Eval {
        let m = self.dim();
        let mut out = Eval::zero(m);
        let mut chunk = Chunk::new(m);
        for start in rows.clone().step_by(CHUNK) {
            let len = (start + CHUNK).min(rows.end) - start;
            self.chunk_terms(w, start, len, &mut chunk, &mut out);
            if !derivatives {
                continue;
            }
            let (r, u) = (&chunk.terms[1][..len], &chunk.terms[2][..len]);
            for a in 0..m {
                out.g[a] += lane_dot(r, &chunk.columns[a][..len]);
                let weighted = &mut chunk.scratch[..len];
                weighted
                    .iter_mut()
                    .zip(u)
                    .zip(&chunk.columns[a][..len])
                    .for_each(|((o, &u), &v)| *o = u * v);
                for b in a..m {
                    let v = lane_dot(&weighted[..len], &chunk.columns[b][..len]);
                    out.h[a * m + b] += v;
                    if b != a {
                        out.h[b * m + a] += v;
                    }
                }
            }
        }
        out
    }

    /// Newton's method from `w0`; a problem of many rows with dense or computed features
    /// starts from its fit on a sample of them ([`Self::warm_start`]); computed features of
    /// fewer than [`SAMPLE_FROM`] rows are computed once and stored (a one-vs-rest fit's
    /// buffer is then reused from class to class, where each pass recomputed them).
    pub fn fit(&self, w0: Vec<f64>) -> LogisticFit {
        if let Features::Computed(computed) = self.features
            && self.targets.len() < SAMPLE_FROM
        {
            let rows = stored_rows(computed, self.targets.len(), self.n_features);
            return LogisticProblem { features: Features::Dense(&rows), ..*self }.fit(w0);
        }
        let w0 = self.warm_start(w0);
        self.newton(w0, Rows::All)
    }

    /// Newton's method from `w0` on `rows`.
    fn newton(&self, w0: Vec<f64>, rows: Rows) -> LogisticFit {
        let mut w = w0;
        let mut at = self.evaluate(&w, rows);
        let knows_nll = self.weights.is_none() && matches!(self.targets, Targets::Outcomes { .. });
        let fit = |w: Vec<f64>, at: &Eval, iterations, converged, separable| LogisticFit {
            weights: w,
            iterations,
            converged,
            separable,
            nll: knows_nll.then_some(at.nll),
        };
        for iteration in 0..MAX_ITER {
            let grad_norm = at.g.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            if grad_norm <= TOL_GRAD {
                return fit(w, &at, iteration, true, false);
            }
            if self.diverging(&w, at.loss) {
                return fit(w, &at, iteration, false, true);
            }
            let step = newton_step(&at.h, &at.g);
            // The Newton decrement -g.d: twice what the quadratic model can still gain, a
            // stopping rule that ignores the features' scale (spline bases reach 1e5).
            let decrement = -step.iter().zip(&at.g).map(|(a, b)| a * b).sum::<f64>();
            if decrement <= rows.decrement_tolerance() {
                return fit(w, &at, iteration, true, false);
            }
            if decrement <= LAST_STEP_DECREMENT && (!knows_nll || at.capped == 0.0) {
                // Newton's quadratic convergence leaves a decrement of about C decrement^2
                // after this step (C ~ 1 on calibration problems): below the tolerance
                // unless C > 1e3, so the step is taken without a pass to confirm it.
                let next: Vec<f64> = w.iter().zip(&step).map(|(a, b)| a + b).collect();
                at.nll += self.nll_change(&w, &next, &at, decrement);
                return fit(next, &at, iteration + 1, true, false);
            }
            match self.backtrack(&w, &step, &at, rows) {
                Some((next, next_at)) => {
                    let stalled =
                        (at.loss - next_at.loss).abs() <= 1e-16 * at.loss.abs().max(1e-300);
                    (w, at) = (next, next_at);
                    if stalled {
                        return fit(w, &at, iteration + 1, decrement <= 1e-10, false);
                    }
                }
                None => return fit(w, &at, iteration, decrement <= 1e-10, false),
            }
        }
        fit(w, &at, MAX_ITER, false, false)
    }

    /// The change of the NLL at the outcomes (no row capped) from `w` to `next`, a Newton
    /// step of decrement `decrement`: the NLL is `loss - penalty + offsets . w`, and the
    /// step takes `decrement / 2` off the loss (its quadratic model, to `O(decrement^1.5)`).
    fn nll_change(&self, w: &[f64], next: &[f64], at: &Eval, decrement: f64) -> f64 {
        let d = self.n_features;
        let norm = |w: &[f64]| w[..d].iter().map(|v| v * v).sum::<f64>();
        let penalty = 0.5 * self.l2 * (norm(next) - norm(w));
        let offsets: f64 =
            at.offsets.iter().zip(next.iter().zip(w)).map(|(c, (b, a))| c * (b - a)).sum();
        offsets - 0.5 * decrement - penalty
    }

    /// `w0`, or for a problem of [`SAMPLE_FROM`] rows or more with dense or computed
    /// features, the fit from `w0` on [`Rows::Sample`] where it converges: the full fit then
    /// starts a few Newton steps nearer its optimum, each step saved a pass over every row
    /// (at 10^6 rows, three passes instead of six).
    fn warm_start(&self, w0: Vec<f64>) -> Vec<f64> {
        if self.targets.len() < SAMPLE_FROM || matches!(self.features, Features::Local(_)) {
            return w0;
        }
        let fit = self.newton(w0.clone(), Rows::Sample);
        if fit.converged && !fit.separable { fit.weights } else { w0 }
    }

    /// Loss near 0 with unpenalised weights growing: no finite optimum.
    fn diverging(&self, w: &[f64], loss: f64) -> bool {
        self.l2 == 0.0 && (loss < 1e-9 || w.iter().any(|v| v.abs() > WEIGHT_LIMIT))
    }

    /// The first of `w + step / 2^j` (j < 40) whose loss satisfies Armijo's condition, with
    /// its full evaluation (trials cost a loss pass only).
    fn backtrack(
        &self,
        w: &[f64],
        step: &[f64],
        at: &Eval,
        rows: Rows,
    ) -> Option<(Vec<f64>, Eval)> {
        let slope: f64 = step.iter().zip(&at.g).map(|(a, b)| a * b).sum();
        if -slope <= 1e-13 * at.loss.abs() {
            // The gain the step promises is below the rounding of a sum over the rows, so
            // Armijo's test cannot see it (and would halve the step 40 times): take the step
            // when it shrinks the gradient.
            let next: Vec<f64> = w.iter().zip(step).map(|(a, b)| a + b).collect();
            let next_at = self.evaluate(&next, rows);
            let norm = |g: &[f64]| g.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            return (norm(&next_at.g) < norm(&at.g)).then_some((next, next_at));
        }
        let mut t = 1.0;
        for _ in 0..40 {
            let next: Vec<f64> = w.iter().zip(step).map(|(a, b)| a + t * b).collect();
            // With a few features or local rows the derivatives cost little beside the exp, so
            // a trial is evaluated whole; with many dense features trials take a loss pass only.
            let cheap = self.dim() <= 4 || matches!(self.features, Features::Local(_));
            let trial = if cheap { Some(self.evaluate(&next, rows)) } else { None };
            let loss = trial
                .as_ref()
                .map_or_else(|| self.evaluate_with(&next, false, rows).loss, |e| e.loss);
            if loss <= at.loss + 1e-4 * t * slope.min(0.0) {
                let next_at = trial.unwrap_or_else(|| self.evaluate(&next, rows));
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
    // One exp serves both: softplus(z) = max(z, 0) + ln(1 + e).
    let (e, s) = sigmoid_parts(z);
    (v * (z.max(0.0) + ln_1p_unit(e) - t * z), v * (s - t), v * s * (1.0 - s))
}

/// `e = exp(-|z|)` and `sigmoid(z)` from it.
#[inline(always)]
fn sigmoid_parts(z: f64) -> (f64, f64) {
    let e = exp_nonpositive(-z.abs());
    (e, (if z >= 0.0 { 1.0 } else { e }) / (1.0 + e))
}

/// `sum ln(x)` over at most `32 LANES` values in `[1, 2]` (`1 + e` of a chunk's rows): the
/// logarithm of each lane's product (at most 2^32, no overflow), summed in lane order; within
/// a few ulp of the sum of the logarithms, for `LANES` of them.
#[inline(always)]
fn log_product(values: &[f64]) -> f64 {
    debug_assert!(values.len() <= 32 * LANES);
    let mut lanes = [1.0f64; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (p, &v) in lanes.iter_mut().zip(c) {
            *p *= v;
        }
    }
    for (p, &v) in lanes.iter_mut().zip(tail) {
        *p *= v;
    }
    lanes.iter().fold(0.0, |s, &p| s + ln_positive(p))
}

/// Loss, gradient and Hessian at one point; with outcomes (unweighted), the NLL at them, its
/// excess over the cap, and `offsets = (1/N) sum (t - y) x`: the NLL less its capped rows is
/// `loss - penalty + offsets . w`.
struct Eval {
    loss: f64,
    nll: f64,
    capped: f64,
    offsets: Vec<f64>,
    g: Vec<f64>,
    h: Vec<f64>,
}

impl Eval {
    fn zero(m: usize) -> Self {
        let (g, h, offsets) = (vec![0.0; m], vec![0.0; m * m], vec![0.0; m]);
        Self { loss: 0.0, nll: 0.0, capped: 0.0, offsets, g, h }
    }
}

/// A chunk's working rows: the features in columns (the intercept's a column of ones), `z`,
/// the loss terms, residuals and curvatures, each row's `1 + e`, `t - y` and NLL excess over
/// the cap, and a scratch column.
struct Chunk {
    columns: Vec<Vec<f64>>,
    z: Vec<f64>,
    terms: [Vec<f64>; 3],
    one_e: Vec<f64>,
    offsets: Vec<f64>,
    excess: Vec<f64>,
    scratch: Vec<f64>,
}

impl Chunk {
    fn new(m: usize) -> Self {
        let column = || vec![0.0; CHUNK];
        Self {
            columns: vec![vec![1.0; CHUNK]; m],
            z: column(),
            terms: [column(), column(), column()],
            one_e: column(),
            offsets: column(),
            excess: column(),
            scratch: column(),
        }
    }
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
        let p = LogisticProblem::one_feature(Features::Dense(&x), Targets::Values(&t));
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

    /// `(s, s^2 - 1/3)` of a score, computed where read.
    struct Quadratic<'a>(&'a [f64]);

    impl crate::binary::RowFeatures for Quadratic<'_> {
        fn fill(&self, rows: Range<usize>, columns: &mut [Vec<f64>]) {
            for (i, &s) in self.0[rows].iter().enumerate() {
                (columns[0][i], columns[1][i]) = (s, s * s - 1.0 / 3.0);
            }
        }
    }

    /// Computed features stored once (fewer rows than [`SAMPLE_FROM`]) give the fit of the
    /// features computed at every pass, bit for bit, over several chunks.
    #[test]
    fn stored_features_fit_as_computed() {
        let n = 3 * crate::binary::local_rows::CHUNK + 77;
        let s: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 / 1000.0).collect();
        let y: Vec<bool> =
            (0..n).map(|i| (i * 31 + i / 3) % 1000 < (s[i] * 900.0) as usize).collect();
        let features = Quadratic(&s);
        let problem = LogisticProblem {
            features: Features::Computed(&features),
            n_features: 2,
            targets: Targets::hard(&y),
            intercept: true,
            l2: 0.0,
            weights: None,
        };
        let stored = problem.fit(vec![1.0, 0.0, 0.0]);
        let computed = problem.newton(vec![1.0, 0.0, 0.0], Rows::All);
        let bits = |w: &[f64]| w.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&stored.weights), bits(&computed.weights));
        assert_eq!(stored.nll.map(f64::to_bits), computed.nll.map(f64::to_bits));
        assert!(stored.converged && stored.iterations == computed.iterations);
    }

    /// More rows than a block, and than a warm start needs: the blocks are fixed, so one
    /// thread and two give the same bits.
    #[test]
    fn the_fit_does_not_depend_on_the_thread_count() {
        let n = SAMPLE_FROM + 1234;
        let x: Vec<f64> = (0..2 * n).map(|i| ((i * 7919) % 1000) as f64 / 250.0 - 2.0).collect();
        let t: Vec<f64> = (0..n).map(|i| f64::from(u8::from((i * 31) % 7 < 3))).collect();
        let problem = LogisticProblem {
            features: Features::Dense(&x),
            n_features: 2,
            targets: Targets::Values(&t),
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

    /// A uniform in [0, 1) from `i` (a fixed hash).
    fn uniform(i: usize) -> f64 {
        ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Rows sorted by score, enough for a warm start: the fit from the sample's optimum
    /// reaches the optimum of the fit without it, in fewer passes, and its last, unconfirmed
    /// step lands where the gradient vanishes.
    #[test]
    fn a_warm_start_reaches_the_same_optimum() {
        let n = SAMPLE_FROM + 5000;
        let x: Vec<f64> = (0..n).map(|i| 8.0 * (i as f64 + 0.5) / n as f64 - 4.0).collect();
        let y: Vec<bool> =
            x.iter().enumerate().map(|(i, &x)| uniform(i) < sigmoid(0.7 * x - 0.2)).collect();
        let problem = LogisticProblem::one_feature(Features::Dense(&x), Targets::hard(&y));
        let warm = problem.fit(vec![1.0, 0.0]);
        let cold = problem.newton(vec![1.0, 0.0], Rows::All);
        assert!(warm.converged && cold.converged, "{warm:?} {cold:?}");
        assert!(warm.iterations < cold.iterations, "{warm:?} {cold:?}");
        for (a, b) in warm.weights.iter().zip(&cold.weights) {
            assert!((a - b).abs() < 1e-9, "{warm:?} {cold:?}");
        }
        let g = problem.evaluate(&warm.weights, Rows::All).g;
        assert!(g.iter().all(|g| g.abs() < 1e-10), "{g:?}");
    }

    /// Soft targets and a ridge, with and without rows far on the wrong side (NLL above the
    /// cap): the fit's NLL is the capped NLL of the rows at their outcomes through the fitted
    /// map (whether its last step was confirmed by a pass or not).
    #[test]
    fn the_nll_is_the_capped_nll_at_the_outcomes() {
        let n = 3000;
        for far in [false, true] {
            let mut x: Vec<f64> =
                (0..n).map(|i| 10.0 * (i as f64 + 0.5) / n as f64 - 5.0).collect();
            let mut y: Vec<bool> = (0..n).map(|i| uniform(i) < sigmoid(1.5 * x[i])).collect();
            if far {
                x.extend([90.0, -120.0, 70.0]);
                y.extend([false, true, true]);
            }
            let targets = Targets::Outcomes { outcomes: &y, positive: 0.95, negative: 0.03 };
            let one = LogisticProblem::one_feature(Features::Dense(&x), targets);
            let problem = LogisticProblem { l2: 0.01, ..one };
            let fit = problem.fit(vec![1.0, 0.0]);
            let [a, b] = [fit.weights[0], fit.weights[1]];
            let cap = -(1e-15f64).ln();
            let expected = x
                .iter()
                .zip(&y)
                .map(|(&x, &y)| {
                    let p = sigmoid(a * x + b);
                    (-(if y { p } else { 1.0 - p }).ln()).min(cap)
                })
                .sum::<f64>()
                / x.len() as f64;
            let nll = fit.nll.expect("outcomes without weights");
            assert!(fit.converged && (nll - expected).abs() < 1e-13, "{far}: {nll} vs {expected}");
            if far {
                continue;
            }
            // The NLL an unconfirmed step predicts, from a point near the optimum.
            let w = vec![a + 1e-5, b - 1e-5];
            let at = problem.evaluate(&w, Rows::All);
            let step = newton_step(&at.h, &at.g);
            let decrement = -step.iter().zip(&at.g).map(|(a, b)| a * b).sum::<f64>();
            let next: Vec<f64> = w.iter().zip(&step).map(|(a, b)| a + b).collect();
            let predicted = at.nll + problem.nll_change(&w, &next, &at, decrement);
            let actual = problem.evaluate(&next, Rows::All).nll;
            assert!((actual - at.nll).abs() > 1e-7, "{} -> {actual}", at.nll);
            assert!((predicted - actual).abs() < 1e-15, "{predicted} vs {actual}");
        }
    }

    /// The sum of logarithms by lane products equals the sum of the rows' logarithms.
    #[test]
    fn a_log_product_is_the_sum_of_logs() {
        for len in [0, 1, 7, 8, 9, 100, 255, 256] {
            let v: Vec<f64> = (0..len).map(|i| 1.0 + uniform(i + 17 * len)).collect();
            let direct: f64 = v.iter().map(|v| v.ln()).sum();
            assert!((log_product(&v) - direct).abs() <= 1e-13 * direct.max(1.0), "{len}");
        }
    }

    #[test]
    fn separable_data_stop_quickly() {
        let x = [-2.0, -1.0, 1.0, 2.0];
        let t = [0.0, 0.0, 1.0, 1.0];
        let p = LogisticProblem::one_feature(Features::Dense(&x), Targets::Values(&t));
        let fit = p.fit(vec![0.0, 0.0]);
        assert!(fit.separable && !fit.converged && fit.iterations < 60, "{fit:?}");
    }
}
