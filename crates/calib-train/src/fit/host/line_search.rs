//! Strong-Wolfe line search (Nocedal & Wright, *Numerical Optimization*, 2nd ed., Alg. 3.5
//! and 3.6, with cubic interpolation), in the form of PyTorch's `_strong_wolfe`, which
//! burn's `LBFGS` also ports.

use super::affine::Value;
use crate::error::{FitError, Result};
use crate::fit::{FitContext, StopReason};

/// One trial point of a line search along `d` from `x`.
#[derive(Debug, Clone)]
pub(crate) struct Trial {
    /// Step length.
    pub t: f64,
    /// Objective at `x + t d`.
    pub f: f64,
    /// Mean NLL at `x + t d` (the objective without its penalty).
    pub nll: f64,
    /// Gradient at `x + t d`.
    pub g: Vec<f64>,
    /// Directional derivative `g · d`.
    pub gtd: f64,
}

/// Evaluations allowed per line search.
const MAX_LINE_SEARCH: usize = 25;

/// `x + t d`.
pub(super) fn step(x: &[f64], d: &[f64], t: f64) -> Vec<f64> {
    x.iter().zip(d).map(|(x, d)| x + t * d).collect()
}

/// [`strong_wolfe`] from `x` (objective `value`, gradient `g`) along the descent direction `d`
/// (slope `gtd = g · d`), trying step `first_step` first, with the host optimisers' bounds;
/// `evaluate(t, x + t d)` gives the value and gradient at a trial point. Returns the accepted
/// trial and the number of evaluations.
pub(super) fn search_along(
    x: &[f64],
    d: &[f64],
    (value, g, gtd): (Value, &[f64], f64),
    first_step: f64,
    mut evaluate: impl FnMut(f64, &[f64]) -> (Value, Vec<f64>),
) -> (Trial, usize) {
    let here = Trial { t: 0.0, f: value.objective, nll: value.nll, g: g.to_vec(), gtd };
    let trial = |t: f64| {
        let (v, g) = evaluate(t, &step(x, d, t));
        let gtd = dot(&g, d);
        Trial { t, f: v.objective, nll: v.nll, g, gtd }
    };
    strong_wolfe(trial, here, first_step, max_abs(d), 1e-16, MAX_LINE_SEARCH)
}

/// `a · b`.
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The max-norm of `v`.
pub(super) fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// `d` with its slope `g · d` when that is a descent direction; else steepest descent `-g`
/// (the `bool` says the direction was replaced).
pub(super) fn descent_or_steepest(g: &[f64], d: Vec<f64>) -> (Vec<f64>, f64, bool) {
    let gtd = dot(g, &d);
    if gtd.is_nan() || gtd >= 0.0 {
        (g.iter().map(|v| -v).collect(), -dot(g, g), true)
    } else {
        (d, gtd, false)
    }
}

/// After an accepted step from `previous` to `value` (gradient `g`): the standstill when the
/// loss barely changed and the gradient is above tolerance, else `None` (a small gradient is
/// reported and stopped at the top of the optimiser's loop).
pub(super) fn standstill_after_step(
    ctx: &mut FitContext<'_>,
    iteration: usize,
    previous: f64,
    value: Value,
    g: &[f64],
) -> Option<StopReason> {
    let grad_norm = max_abs(g);
    if grad_norm <= ctx.tolerance_grad {
        return None;
    }
    let change = (previous - value.objective).abs();
    (change <= ctx.tolerance_change * value.objective.abs().max(1.0))
        .then(|| ctx.standstill(iteration, value.at(grad_norm)))
}

/// An error unless the starting point's objective and gradient are finite.
pub(super) fn check_start(objective: f64, g: &[f64]) -> Result<()> {
    if objective.is_finite() && g.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(FitError::NonFinite { what: "loss".into(), iteration: 0, value: objective })
    }
}

/// Sufficient-decrease constant.
const C1: f64 = 1e-4;
/// Curvature constant (0.9 for quasi-Newton directions).
const C2: f64 = 0.9;

/// The minimiser of the cubic through `(x1, f1, g1)` and `(x2, f2, g2)`, clamped to `bounds`
/// (default: the interval between the two points).
fn cubic_interpolate(a: (f64, f64, f64), b: (f64, f64, f64), bounds: Option<(f64, f64)>) -> f64 {
    let ((x1, f1, g1), (x2, f2, g2)) = (a, b);
    let (lo, hi) = bounds.unwrap_or(if x1 <= x2 { (x1, x2) } else { (x2, x1) });
    let d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2);
    let d2_square = d1 * d1 - g1 * g2;
    if d2_square >= 0.0 {
        let d2 = d2_square.sqrt();
        let min_pos = if x1 <= x2 {
            x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
        } else {
            x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2))
        };
        if min_pos.is_finite() { min_pos.clamp(lo, hi) } else { (lo + hi) / 2.0 }
    } else {
        (lo + hi) / 2.0
    }
}

/// Searches along `d` from `start` (step 0, slope `start.gtd < 0`), trying step `t` first;
/// `eval(t)` evaluates `x + t d` and `d_norm` is `d`'s max-norm. Returns the accepted trial
/// (`start` itself when no trial was better) and the number of evaluations. A non-finite
/// value at a trial counts as "too far".
pub(crate) fn strong_wolfe(
    eval: impl FnMut(f64) -> Trial,
    start: Trial,
    t: f64,
    d_norm: f64,
    tolerance_change: f64,
    max_evals: usize,
) -> (Trial, usize) {
    let mut search = Search { eval, f0: start.f, gtd0: start.gtd, evals: 0, max_evals };
    let found = match search.bracket(start, t) {
        Bracketed::Accepted(trial) => trial,
        Bracketed::Between(bracket) => search.zoom(bracket, d_norm, tolerance_change),
    };
    (found, search.evals)
}

/// What the bracketing phase ends with.
enum Bracketed {
    /// A trial meeting both Wolfe conditions.
    Accepted(Trial),
    /// Two trials around an acceptable step (or the last two when evaluations ran out).
    Between([Trial; 2]),
}

/// One line search: the objective along the direction and the Wolfe tests at its start.
struct Search<F> {
    eval: F,
    f0: f64,
    gtd0: f64,
    evals: usize,
    max_evals: usize,
}

impl<F: FnMut(f64) -> Trial> Search<F> {
    fn trial(&mut self, t: f64) -> Trial {
        self.evals += 1;
        (self.eval)(t)
    }

    /// Not a sufficient decrease (or not finite) at step `t`.
    fn too_far(&self, trial: &Trial, t: f64) -> bool {
        !trial.f.is_finite() || trial.f > self.f0 + C1 * t * self.gtd0
    }

    /// The strong curvature condition.
    fn flat_enough(&self, trial: &Trial) -> bool {
        trial.gtd.abs() <= -C2 * self.gtd0
    }

    /// Steps outward from `t` (cubic extrapolation) until a step is acceptable or two trials
    /// bracket one.
    fn bracket(&mut self, start: Trial, mut t: f64) -> Bracketed {
        let mut prev = start.clone();
        let mut new = self.trial(t);
        loop {
            if self.too_far(&new, t) || (self.evals > 1 && new.f >= prev.f) {
                return Bracketed::Between([prev, new]);
            }
            if self.flat_enough(&new) {
                return Bracketed::Accepted(new);
            }
            if new.gtd >= 0.0 {
                return Bracketed::Between([prev, new]);
            }
            if self.evals >= self.max_evals {
                return Bracketed::Between([start, new]);
            }
            let (min_step, max_step) = (t + 0.01 * (t - prev.t), t * 10.0);
            let next = cubic_interpolate(
                (prev.t, prev.f, prev.gtd),
                (t, new.f, new.gtd),
                Some((min_step, max_step)),
            );
            prev = new;
            t = next;
            new = self.trial(t);
        }
    }

    /// Shrinks the bracket (its `low` end has the lower value) until a step meets both
    /// conditions, the bracket is below `tolerance_change` along `d`, or evaluations run out;
    /// returns the low end.
    fn zoom(&mut self, mut bracket: [Trial; 2], d_norm: f64, tolerance_change: f64) -> Trial {
        let mut insufficient = false;
        let (mut low, mut high) = lower_first(&bracket);
        while self.evals < self.max_evals {
            if (bracket[1].t - bracket[0].t).abs() * d_norm < tolerance_change {
                break;
            }
            let t = zoom_step(&bracket, &mut insufficient);
            let trial = self.trial(t);
            if self.too_far(&trial, t) || trial.f >= bracket[low].f {
                bracket[high] = trial;
            } else {
                let done = self.flat_enough(&trial);
                if !done && trial.gtd * (bracket[high].t - bracket[low].t) >= 0.0 {
                    bracket.swap(high, low);
                }
                bracket[low] = trial;
                if done {
                    break;
                }
            }
            (low, high) = lower_first(&bracket);
        }
        let [a, b] = bracket;
        if low == 0 { a } else { b }
    }
}

/// Indices `(low, high)` of the bracket's lower and higher value.
fn lower_first(bracket: &[Trial; 2]) -> (usize, usize) {
    if bracket[0].f <= bracket[1].f { (0, 1) } else { (1, 0) }
}

/// The next trial step inside the bracket: the cubic's minimiser (the midpoint when a value
/// is not finite), kept at least a tenth of the bracket from its ends when the previous step
/// was already that close (`insufficient` carries that between steps).
fn zoom_step(bracket: &[Trial; 2], insufficient: &mut bool) -> f64 {
    let (a, b) = (bracket[0].t, bracket[1].t);
    let finite = bracket.iter().all(|p| p.f.is_finite());
    let mut t = if finite {
        cubic_interpolate(
            (a, bracket[0].f, bracket[0].gtd),
            (b, bracket[1].f, bracket[1].gtd),
            None,
        )
    } else {
        (a + b) / 2.0
    };
    let (lo, hi) = (a.min(b), a.max(b));
    let eps = 0.1 * (hi - lo);
    if (hi - t).min(t - lo) < eps {
        if *insufficient || t >= hi || t <= lo {
            t = if (t - hi).abs() < (t - lo).abs() { hi - eps } else { lo + eps };
            *insufficient = false;
        } else {
            *insufficient = true;
        }
    } else {
        *insufficient = false;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_strong_wolfe_point_of_a_quadratic() {
        // f(t) = (t - 3)^2 along d = 1 from x = 0: the exact step is 3.
        let eval = |t: f64| {
            let f = (t - 3.0) * (t - 3.0);
            Trial { t, f, nll: f, g: vec![2.0 * (t - 3.0)], gtd: 2.0 * (t - 3.0) }
        };
        let (trial, evals) = strong_wolfe(eval, eval(0.0), 1.0, 1.0, 1e-12, 25);
        assert!(trial.f <= 9.0 + C1 * trial.t * -6.0);
        assert!(trial.gtd.abs() <= C2 * 6.0);
        assert!(evals <= 4, "{evals} evaluations");
    }

    #[test]
    fn backs_off_from_non_finite_values() {
        // Finite only for t < 2; minimum at t = 1.
        let eval = |t: f64| {
            let f = if t < 2.0 { (t - 1.0) * (t - 1.0) } else { f64::INFINITY };
            Trial { t, f, nll: f, g: vec![2.0 * (t - 1.0)], gtd: 2.0 * (t - 1.0) }
        };
        let (trial, _) = strong_wolfe(eval, eval(0.0), 8.0, 1.0, 1e-12, 25);
        assert!(trial.f.is_finite() && trial.f < 1.0, "{trial:?}");
    }
}
