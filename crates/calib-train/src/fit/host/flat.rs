//! [`FlatObjective`]: an objective over flat f64 parameter vectors, as the host optimisers
//! drive it. The fused host pass ([`super::AffineObjective`]) and the device passes
//! ([`crate::fit::device::DeviceObjective`]) both implement it, so one L-BFGS serves both.

use super::affine::Value;

/// The calls the host L-BFGS makes on an objective.
pub(crate) trait FlatObjective {
    /// Objective and mean NLL at `params`, the gradient written into `grad` (same length).
    /// A non-finite value marks a point the line search rejects.
    fn evaluate(&self, params: &[f64], grad: &mut [f64]) -> Value;

    /// [`Self::evaluate`], with the Hessian diagonal too where one pass gives both (the
    /// device passes: one synchronisation instead of two); `None` leaves it to
    /// [`Self::hessian_diagonal`].
    fn evaluate_with_diagonal(
        &self,
        params: &[f64],
        grad: &mut [f64],
    ) -> (Value, Option<Vec<f64>>) {
        (self.evaluate(params, grad), None)
    }

    /// The mean NLL alone at `params`.
    fn nll(&self, params: &[f64]) -> f64;

    /// The diagonal of the objective's Hessian at `params` (the Jacobi preconditioner).
    fn hessian_diagonal(&self, params: &[f64]) -> Vec<f64>;

    /// Removes from `step` its components along directions the objective cannot see.
    fn keep_in_span(&self, step: &mut [f64]);
}

impl FlatObjective for super::AffineObjective<'_> {
    fn evaluate(&self, params: &[f64], grad: &mut [f64]) -> Value {
        Self::evaluate(self, params, grad)
    }

    fn nll(&self, params: &[f64]) -> f64 {
        Self::nll(self, params)
    }

    fn hessian_diagonal(&self, params: &[f64]) -> Vec<f64> {
        Self::hessian_diagonal(self, params)
    }

    fn keep_in_span(&self, step: &mut [f64]) {
        self.terms.keep_in_span(step);
    }
}
