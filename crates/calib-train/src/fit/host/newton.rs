//! Newton-CG (truncated Newton; Nocedal & Wright, *Numerical Optimization*, 2nd ed., Alg. 7.1)
//! for the full affine maps on the host: each iteration solves `H d = -g` approximately by
//! conjugate gradients on Hessian-vector products ([`super::hessian`]), preconditioned by the
//! Hessian's per-class diagonal blocks, to a relative residual `eta = min(0.5, sqrt |g|)`
//! (superlinear convergence), then takes a strong-Wolfe step from `t = 1`.
//!
//! Why: L-BFGS needs hundreds to a thousand iterations on Dirichlet calibration at K = 100
//! (10,100 parameters, curvature spread over orders of magnitude by confident rows); Newton-CG
//! with the block preconditioner needs a few dozen products in all (docs/benchmarks.md).
//! Each product costs about an evaluation's two matrix
//! products (in f32 for maps wide enough for low-rank blocks: [`super::narrow_products`]); an
//! evaluation whose point the line search accepts keeps its probabilities for the next
//! products, so a unit step costs one evaluation.
//!
//! A step along which the line search finds no decrease is retried once along `-g`; a second
//! failure is a standstill ([`StopReason::at_standstill`]), as in the host L-BFGS.

use std::time::Instant;

use super::affine::{AffineObjective, Value};
use super::hessian::project_out_shift;
use super::line_search::{
    Trial, check_start, descent_or_steepest, dot, max_abs, search_along, standstill_after_step,
    step,
};
use super::narrow_products::NarrowRows;
use super::preconditioner::{Preconditioner, takes_low_rank};
use crate::error::Result;
use crate::fit::FitContext;
use crate::fit::record::{FitRecord, Solver, StopReason};

/// Most classes Newton-CG takes on: its preconditioner holds `K (K+1)^2` values (135 MB at
/// 256) and costs `K^3`-order work to factor; wider maps go to L-BFGS.
pub(crate) const MAX_CLASSES: usize = 256;

/// Most `N x K` values a wider map (low-rank blocks) takes Newton-CG with: it holds two
/// `N x K` probability buffers and an f32 copy of the features (2.5 GiB at this size) where
/// L-BFGS holds none.
pub(crate) const MAX_WIDE_VALUES: usize = 1 << 27;

/// Newton iterations between rebuilds of the block preconditioner. Measured on Dirichlet
/// cross-validation at 10,000 x 100: rebuilding every second iteration saved ~15% of the
/// time against every iteration at a few more products.
const PRECONDITIONER_REFRESH: usize = 2;
/// Conjugate-gradient iterations allowed per Newton step.
const MAX_CG: usize = 100;

/// Minimises the full-map `objective` from `x0`; returns the parameters and the record.
pub(crate) fn minimise_newton(
    objective: &AffineObjective<'_>,
    x0: Vec<f64>,
    ctx: &mut FitContext<'_>,
) -> Result<(Vec<f64>, FitRecord)> {
    let start = Instant::now();
    let mut at = NewtonPoint::start(objective, x0)?;
    // Maps wide enough for low-rank blocks take their Hessian products in f32: products are
    // most of their fit, and conjugate gradients need them only close (`narrow_products`).
    let narrow = takes_low_rank(objective).then(|| objective.narrow_rows());
    let (mut iterations, mut products, mut evaluations) = (0usize, 0usize, 1usize);
    let mut pre = None;
    let mut steepest = false;
    let stop = loop {
        let grad_norm = max_abs(&at.g);
        if let Some(stop) = ctx.stop_before(iterations, at.value.at(grad_norm)) {
            break stop;
        }
        if ctx
            .checkpoints
            .unbounded(iterations, at.value.at(grad_norm), &at.x, |p| objective.nll(p))
        {
            break StopReason::Unbounded;
        }
        if pre.is_none() || iterations.is_multiple_of(PRECONDITIONER_REFRESH) {
            pre = Some(Preconditioner::at(objective, &at.probs));
        }
        let (d, used) = if steepest {
            (at.g.iter().map(|v| -v).collect(), 0)
        } else {
            let products = Products { objective, probs: &at.probs, narrow: narrow.as_ref() };
            newton_direction(&products, pre.as_ref().expect("built"), &at.g)
        };
        products += used;
        let (d, gtd, _) = descent_or_steepest(&at.g, d);
        let (trial, last_t, used) = at.search(objective, &d, gtd);
        evaluations += used;
        iterations += 1;
        if trial.f.is_nan() || trial.f >= at.value.objective {
            if !steepest {
                // A poor Newton direction (rare: the model is strictly convex with a penalty):
                // try steepest descent once before calling it a standstill.
                steepest = true;
                continue;
            }
            break ctx.standstill(iterations, at.value.at(grad_norm));
        }
        steepest = false;
        let previous = at.value.objective;
        evaluations += at.accept(objective, &d, trial, last_t);
        if let Some(stop) = standstill_after_step(ctx, iterations, previous, at.value, &at.g) {
            break stop;
        }
    };
    let point = at.value.at(max_abs(&at.g));
    let mut record = ctx.record(Solver::NewtonCg, iterations, evaluations, point, stop, start);
    record.hessian_products = products;
    Ok((at.x, record))
}

/// The current point of a Newton-CG run, with its value, gradient and the probabilities the
/// Hessian products need, and a second probability buffer for line-search trials.
struct NewtonPoint {
    x: Vec<f64>,
    value: Value,
    g: Vec<f64>,
    probs: Vec<f64>,
    trial_probs: Vec<f64>,
}

impl NewtonPoint {
    /// Evaluates `x0`, which must be finite.
    fn start(objective: &AffineObjective<'_>, x0: Vec<f64>) -> Result<Self> {
        let size = objective.rows.n * objective.rows.k;
        let (mut probs, trial_probs) = (vec![0.0; size], vec![0.0; size]);
        let mut g = vec![0.0; x0.len()];
        let value = objective.evaluate_keeping(&x0, &mut g, Some(&mut probs));
        check_start(value.objective, &g)?;
        Ok(Self { x: x0, value, g, probs, trial_probs })
    }

    /// The strong-Wolfe search along `d` from step 1; returns the accepted trial, the step of
    /// the search's last evaluation, and the evaluations used.
    fn search(
        &mut self,
        objective: &AffineObjective<'_>,
        d: &[f64],
        gtd: f64,
    ) -> (Trial, f64, usize) {
        let (n_params, trial_probs) = (self.x.len(), &mut self.trial_probs);
        let mut last_t = f64::NAN;
        let (trial, used) =
            search_along(&self.x, d, (self.value, &self.g, gtd), 1.0, |t, point| {
                last_t = t;
                let mut g = vec![0.0; n_params];
                let v = objective.evaluate_keeping(point, &mut g, Some(&mut *trial_probs));
                (v, g)
            });
        (trial, last_t, used)
    }

    /// Moves to the accepted `trial` along `d`; returns the evaluations it took (0 when the
    /// search's last evaluation was at the accepted point, whose values are then kept).
    fn accept(
        &mut self,
        objective: &AffineObjective<'_>,
        d: &[f64],
        trial: Trial,
        last_t: f64,
    ) -> usize {
        let next = step(&self.x, d, trial.t);
        let used = if trial.t == last_t {
            std::mem::swap(&mut self.probs, &mut self.trial_probs);
            self.g = trial.g;
            self.value = Value { objective: trial.f, nll: trial.nll };
            0
        } else {
            self.value = objective.evaluate_keeping(&next, &mut self.g, Some(&mut self.probs));
            1
        };
        self.x = next;
        used
    }
}

/// An approximate Newton step: preconditioned conjugate gradients on `H d = -g` from `d = 0`,
/// stopped at relative residual `eta = min(0.5, sqrt |g|)` (N&W Alg. 7.1), at the first
/// direction of non-positive curvature, or after [`MAX_CG`] products. Works in the complement
/// of the shift invariance's null space where the objective has one, so `H` is positive
/// definite. Returns the step and
/// the number of Hessian-vector products.
fn newton_direction(
    products: &Products<'_, '_>,
    pre: &Preconditioner,
    g: &[f64],
) -> (Vec<f64>, usize) {
    let objective = products.objective;
    let k = objective.rows.k;
    let g_norm = dot(g, g).sqrt();
    let eta = 0.5f64.min(g_norm.sqrt());
    let mut d = vec![0.0; g.len()];
    let mut r: Vec<f64> = g.iter().map(|v| -v).collect();
    if objective.terms.is_shift_invariant() {
        project_out_shift(&mut r, k);
    }
    let mut z = pre.apply(&r);
    objective.terms.keep_in_span(&mut z);
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    let mut hp = vec![0.0; g.len()];
    for i in 0..MAX_CG {
        products.apply(&p, &mut hp);
        let php = dot(&p, &hp);
        if php.is_nan() || php <= 0.0 {
            // No curvature along p: the preconditioned gradient on the first pass, else the
            // step so far.
            return (if i == 0 { z } else { d }, i + 1);
        }
        let alpha = rz / php;
        d.iter_mut().zip(&p).for_each(|(d, p)| *d += alpha * p);
        r.iter_mut().zip(&hp).for_each(|(r, h)| *r -= alpha * h);
        if dot(&r, &r).sqrt() <= eta * g_norm {
            return (d, i + 1);
        }
        z = pre.apply(&r);
        objective.terms.keep_in_span(&mut z);
        let rz_next = dot(&r, &z);
        let beta = rz_next / rz;
        rz = rz_next;
        p.iter_mut().zip(&z).for_each(|(p, z)| *p = z + beta * *p);
    }
    (d, MAX_CG)
}

/// The Hessian products at one point: in f64, or with their matrix products in f32 on
/// `narrow`.
struct Products<'o, 'r> {
    objective: &'o AffineObjective<'r>,
    probs: &'o [f64],
    narrow: Option<&'o NarrowRows>,
}

impl Products<'_, '_> {
    /// `out = H v`.
    fn apply(&self, v: &[f64], out: &mut [f64]) {
        match self.narrow {
            Some(narrow) => self.objective.narrow_hessian_product(narrow, self.probs, v, out),
            None => self.objective.hessian_product(self.probs, v, out),
        }
    }
}
