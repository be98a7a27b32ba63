//! [`Point`]: what a fit knows of one point of its descent.

/// Objective, mean NLL and gradient max-norm at one point (what a record reports).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    pub loss: f64,
    pub nll: f64,
    pub grad_norm: f64,
}

impl Point {
    /// The objective is the NLL alone (no penalty term).
    pub(crate) fn unpenalised(&self) -> bool {
        (self.loss - self.nll).abs() <= 1e-12 * self.loss.abs().max(1e-300)
    }
}
