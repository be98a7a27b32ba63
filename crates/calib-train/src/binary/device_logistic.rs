//! [`DeviceLogistic`]: a logistic map's fit (Platt, affine and quadratic on the logit) on rows
//! that live on a GPU, every problem at once: the sums of each evaluation come from the
//! device ([`calib_core::engine::LogisticRows`], one synchronisation), Newton's steps are taken
//! on the host, three parameters a problem.
//!
//! ```text
//! v = c_0 + c_1 u_1 + c_2 u_2,   loss(c) = (1/N) sum_i [softplus(v_i) - t_i v_i] + (l2 / 2) (c_1^2 + c_2^2)
//! ```
//!
//! The same objective as the host fit ([`super::LogisticProblem`]) from the same start (the
//! identity: `c_1 = 1`), with the sums in f32: a step is taken unless the loss clearly rises
//! (by more than f32 sums resolve, 1e-6 relative; then it is halved), and a problem stops when
//! Newton's decrement `-g . d` falls to [`DECREMENT`] (a loss within about that of its
//! minimum), when without a ridge its loss falls below 1e-9 or a coefficient passes 1e6 (the
//! host's test for separable outcomes, which have no finite optimum), or after
//! [`MAX_ITERATIONS`].

use calib_core::engine::{LogisticRows, LogisticSpec, LogisticSums};
use calib_core::input::Predictions;

use super::device_fit::DeviceFit;
use super::newton_step;
use crate::error::Result;

/// A problem stops when Newton's decrement is at or below this.
const DECREMENT: f64 = 1e-10;
/// Evaluations at most.
const MAX_ITERATIONS: usize = 100;
/// Halvings of one step at most.
const MAX_HALVINGS: u32 = 30;

/// How a logistic map is fitted on the device: its features, which coefficients are free,
/// its targets and ridge, and the map its coefficients make.
#[derive(Debug, Clone, Copy)]
pub struct DeviceLogistic<M> {
    /// The features `u_1, u_2` of the score.
    pub spec: LogisticSpec,
    /// Free coefficients after the intercept: 1 (`c_2 = 0`) or 2.
    pub degree: usize,
    /// Platt's targets `(N+ + 1)/(N+ + 2)` and `1/(N- + 2)` instead of 1 and 0.
    pub soft_targets: bool,
    /// The ridge `l2` on `c_1, c_2`.
    pub ridge: f64,
    /// The map of coefficients `[c_0, c_1, c_2]`.
    pub map: fn([f64; 3]) -> M,
}

/// One problem's Newton state.
#[derive(Debug, Clone, Copy)]
struct Problem {
    /// Where the last step started, its objective and direction, and the step's fraction.
    base: [f64; 3],
    objective: f64,
    direction: [f64; 3],
    fraction: f64,
    halvings: u32,
    done: bool,
    converged: bool,
    separable: bool,
}

impl<M> DeviceLogistic<M> {
    /// Every problem's map fitted on `preds` (rows on a GPU, unweighted, one-vs-rest or
    /// binary).
    ///
    /// # Errors
    /// [`crate::FitError::Input`] when the device cannot take the rows or read the sums back.
    pub(crate) fn fit(&self, preds: &Predictions) -> Result<DeviceFit<M>> {
        let rows = LogisticRows::new(preds, self.spec)?;
        let (c, n) = (rows.n_problems(), rows.n_rows() as f64);
        let mut params = vec![[0.0, 1.0, 0.0]; c];
        let hard = vec![[1.0, 0.0]; c];
        let mut at = rows.sums(&params, &hard)?;
        let positives: Vec<usize> = at.iter().map(|s| s.positives).collect();
        let targets = match self.soft_targets {
            true => positives.iter().map(|&p| platt_targets(p as f64, n)).collect(),
            false => hard,
        };
        if self.soft_targets {
            at = rows.sums(&params, &targets)?;
        }
        let start = Problem {
            base: [0.0, 1.0, 0.0],
            objective: f64::INFINITY,
            direction: [0.0; 3],
            fraction: 1.0,
            halvings: 0,
            done: false,
            converged: false,
            separable: false,
        };
        let mut problems = vec![start; c];
        // A problem with one outcome only keeps the identity (`degenerate`): not fitted.
        for (problem, &p) in problems.iter_mut().zip(&positives) {
            problem.done = p == 0 || p as f64 == n;
        }
        let mut iterations = 0;
        while iterations < MAX_ITERATIONS {
            let mut stepped = false;
            for ((problem, p), sums) in problems.iter_mut().zip(&mut params).zip(&at) {
                if !problem.done {
                    stepped |= self.advance(problem, p, sums, n);
                }
            }
            if !stepped {
                break;
            }
            at = rows.sums(&params, &targets)?;
            iterations += 1;
        }
        let converged = problems.iter().all(|p| p.converged);
        let separable = problems.iter().filter(|p| p.separable).count();
        let maps = params.iter().map(|&p| (self.map)(p)).collect();
        let mut warnings = Vec::new();
        if separable > 0 {
            warnings.push(format!(
                "the scores separate the outcomes of {separable} problem(s): their coefficients \
                 have no finite optimum without a ridge; their fits stopped early"
            ));
        }
        Ok(DeviceFit { maps, positives, nll: None, iterations, converged, warnings })
    }

    /// One problem's next trial point from its sums at `params` (the trial point of its
    /// last step, or its start): the step halved where the objective clearly rose, else a
    /// Newton step from here. Whether it moved.
    fn advance(
        &self,
        problem: &mut Problem,
        params: &mut [f64; 3],
        sums: &LogisticSums,
        n: f64,
    ) -> bool {
        let free = self.degree + 1;
        let objective = sums.loss / n
            + 0.5 * self.ridge * (1..free).map(|j| params[j] * params[j]).sum::<f64>();
        if objective > problem.objective + 1e-6 * problem.objective.abs() {
            if problem.halvings >= MAX_HALVINGS {
                *params = problem.base;
                problem.done = true;
                return false;
            }
            problem.halvings += 1;
            problem.fraction *= 0.5;
            for j in 0..3 {
                params[j] = problem.base[j] + problem.fraction * problem.direction[j];
            }
            return true;
        }
        let mut g = vec![0.0; free];
        let mut h = vec![0.0; free * free];
        for j in 0..free {
            g[j] = sums.gradient[j] / n + if j > 0 { self.ridge * params[j] } else { 0.0 };
            for k in 0..free {
                h[j * free + k] =
                    sums.hessian[j][k] / n + if j == k && j > 0 { self.ridge } else { 0.0 };
            }
        }
        // Separable outcomes (as the host's fit tells them): the loss falling to nothing or
        // the coefficients growing without bound, where no ridge holds them.
        let largest = params.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if self.ridge == 0.0 && (objective < 1e-9 || largest > 1e6) {
            (problem.done, problem.separable) = (true, true);
            return false;
        }
        let d = newton_step(&h, &g);
        let decrement: f64 = -g.iter().zip(&d).map(|(a, b)| a * b).sum::<f64>();
        if decrement <= DECREMENT {
            (problem.done, problem.converged) = (true, true);
            return false;
        }
        problem.base = *params;
        problem.objective = objective;
        problem.direction = [0.0; 3];
        problem.direction[..free].copy_from_slice(&d);
        problem.fraction = 1.0;
        problem.halvings = 0;
        for j in 0..free {
            params[j] += d[j];
        }
        true
    }
}

/// Platt's targets `[(N+ + 1)/(N+ + 2), 1/(N- + 2)]` of a problem with `positives` of `n`.
fn platt_targets(positives: f64, n: f64) -> [f64; 2] {
    [(positives + 1.0) / (positives + 2.0), 1.0 / (n - positives + 2.0)]
}
