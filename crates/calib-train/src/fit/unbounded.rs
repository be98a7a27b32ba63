//! Detecting a fit with no finite optimum: the parameters walk out along a direction on which
//! the loss keeps falling.
//!
//! Two signals must agree at a checkpoint (iterations 16, 32, 64, ... of an unpenalised fit):
//! 1. **Growth without convergence**: the parameter norm grew by half or more since the previous
//!    checkpoint while the gradient max-norm fell less than 100-fold.
//! 2. **A receding ray**: along the last stretch of the path, `d = x_k - x_{k/2}`, the loss is
//!    non-increasing at `x_k + t d` for `t = 1, 2, 4, ..., 64`. A convex loss with a finite
//!    optimum (and so bounded level sets up to the softmax's constant shift, which `d` does not
//!    follow) rises far enough along every direction; one with a recession direction does not.
//!
//! The first signal alone is what Newton-type fits need; it is wrong for L-BFGS, which can
//! cross a long flat valley slowly: burn's L-BFGS on DenseNet-40 CIFAR-10 matrix scaling (a
//! finite optimum; Newton-CG converges in 7 iterations) grows the norm 1.52 -> 3.12 -> 5.47 at
//! iterations 32/64/128 with the gradient falling only 10x, then converges at 237. The ray
//! test rejects that case: the loss along the path rises far enough out.
//!
//! Directions along which the loss is exactly flat (logits that span fewer dimensions than
//! the map has inputs) are not unbounded; the host solvers keep their steps off them
//! (`host::span`), so growth along them never reaches this test.

use super::point::Point;

/// First iteration at which a checkpoint compares; it compares again at each doubling.
const FIRST_CHECKPOINT: usize = 16;

/// Multiples of the last stretch at which the ray test evaluates the loss.
const RAY: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// The state kept between checkpoints: the gradient max-norm and the parameters.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    last: Option<(f64, Vec<f64>)>,
}

impl Checkpoints {
    /// At a checkpoint iteration, whether the fit at `x` (reached at `last`) is unbounded;
    /// `loss_at` evaluates the objective at other parameters (only called when the first
    /// signal holds: at most seven evaluations a checkpoint).
    pub fn unbounded(
        &mut self,
        iteration: usize,
        last: Point,
        x: &[f64],
        loss_at: impl FnMut(&[f64]) -> f64,
    ) -> bool {
        if iteration < FIRST_CHECKPOINT || !iteration.is_power_of_two() {
            return false;
        }
        let previous = self.last.replace((last.grad_norm, x.to_vec()));
        let Some((grad_before, before)) = previous else { return false };
        let growing = last.unpenalised()
            && norm(x) >= 1.5 * norm(&before)
            && last.grad_norm > grad_before / 100.0;
        growing && recedes(x, &before, last.loss, loss_at)
    }
}

/// Whether the loss is non-increasing along `x + t (x - before)` for every `t` of [`RAY`],
/// starting from `loss` at `x`. A non-finite value (overflow far out) counts as rising.
fn recedes(x: &[f64], before: &[f64], loss: f64, mut loss_at: impl FnMut(&[f64]) -> f64) -> bool {
    let mut previous = loss;
    let mut point = vec![0.0; x.len()];
    for t in RAY {
        point.iter_mut().zip(x.iter().zip(before)).for_each(|(p, (x, b))| *p = x + t * (x - b));
        let value = loss_at(&point);
        // Rounding at the scale of the loss must not count as a rise.
        if value.is_nan() || value > previous + 1e-12 * previous.abs() {
            return false;
        }
        previous = value;
    }
    true
}

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(loss: f64, grad_norm: f64) -> Point {
        Point { loss, nll: loss, grad_norm }
    }

    /// A quadratic bowl (finite optimum at 10): the path grows, the ray rises far out.
    #[test]
    fn a_finite_optimum_is_not_unbounded() {
        let bowl = |x: &[f64]| (x[0] - 10.0).powi(2);
        let mut c = Checkpoints::default();
        assert!(!c.unbounded(16, point(bowl(&[1.0]), 1.0), &[1.0], bowl));
        assert!(!c.unbounded(32, point(bowl(&[2.0]), 0.9), &[2.0], bowl));
    }

    /// `log(1 + exp(-x))` (separable logistic loss): falls for ever along +x.
    #[test]
    fn a_receding_loss_is_unbounded() {
        let soft = |x: &[f64]| (-x[0]).exp().ln_1p();
        let mut c = Checkpoints::default();
        assert!(!c.unbounded(16, point(soft(&[1.0]), 0.3), &[1.0], soft));
        assert!(c.unbounded(32, point(soft(&[2.0]), 0.1), &[2.0], soft));
        assert!(!c.unbounded(48, point(soft(&[4.0]), 0.1), &[4.0], soft), "not a checkpoint");
    }

    /// The penalised objective always has a finite optimum: never tested.
    #[test]
    fn penalised_fits_are_never_unbounded() {
        let soft = |x: &[f64]| (-x[0]).exp().ln_1p();
        let mut c = Checkpoints::default();
        let penalised = |loss| Point { loss: loss + 1.0, nll: loss, grad_norm: 0.3 };
        assert!(!c.unbounded(16, penalised(soft(&[1.0])), &[1.0], soft));
        assert!(!c.unbounded(32, penalised(soft(&[2.0])), &[2.0], soft));
    }
}
