//! [`RidgeStrengths`]: how strongly structured matrix and vector scaling shrink towards their
//! temperature-and-mixture start (Berta et al. 2025; probmetrics' `SMSCalibrator` and
//! `SVSCalibrator` defaults).
//!
//! ```text
//! l_b = lambda_intercept    K^rho / N^tau            (intercepts b)
//! l_d = lambda_diagonal     K^rho / N^tau            (diagonal weights, towards 1)
//! l_o = lambda_off_diagonal (K (K - 1))^rho / N^tau  (off-diagonal weights; SMS only)
//! ```
//! With the default `rho = tau = 1` the penalty fades as `1 / N`: a large calibration set
//! speaks for itself, a small one (even `N < K`) stays near temperature scaling.

use burn::config::Config;

use crate::error::{FitError, Result};
use crate::fit::Regularisation;

/// The multipliers and exponents of the structured-scaling ridge.
#[derive(Config, Debug, PartialEq)]
pub struct RidgeStrengths {
    /// `lambda_intercept`.
    #[config(default = 1.0)]
    pub intercept: f64,
    /// `lambda_diagonal`.
    #[config(default = 1.0)]
    pub diagonal: f64,
    /// `lambda_off_diagonal` (SMS only).
    #[config(default = 1.0)]
    pub off_diagonal: f64,
    /// `rho`, the exponent of the class count.
    #[config(default = 1.0)]
    pub rho: f64,
    /// `tau`, the exponent of the sample count.
    #[config(default = 1.0)]
    pub tau: f64,
}

impl RidgeStrengths {
    /// Checks every value is finite and the multipliers non-negative.
    pub(crate) fn check(&self) -> Result<()> {
        let multipliers = [self.intercept, self.diagonal, self.off_diagonal];
        let finite = multipliers.iter().chain([&self.rho, &self.tau]).all(|v| v.is_finite());
        if finite && multipliers.iter().all(|&v| v >= 0.0) {
            Ok(())
        } else {
            Err(FitError::InvalidConfig(format!(
                "ridge strengths must be finite and >= 0, exponents finite: {self:?}"
            )))
        }
    }

    /// The penalty for `n` rows (their total weight) of `k` classes; `full` keeps the off-diagonal strength (SMS).
    pub(crate) fn regularisation(&self, n: f64, k: usize, full: bool) -> Regularisation {
        let k = k as f64;
        let scale = |pairs: f64| pairs.powf(self.rho) / n.powf(self.tau);
        let off_diagonal = if full { self.off_diagonal * scale(k * (k - 1.0)) } else { 0.0 };
        Regularisation::Ridge {
            intercept: self.intercept * scale(k),
            diagonal: self.diagonal * scale(k),
            off_diagonal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_k_over_n_and_k_k_minus_one_over_n() {
        let r = RidgeStrengths::new().regularisation(500.0, 10, true);
        assert_eq!(
            r,
            Regularisation::Ridge { intercept: 0.02, diagonal: 0.02, off_diagonal: 0.18 }
        );
        let v = RidgeStrengths::new().regularisation(500.0, 10, false);
        assert_eq!(v, Regularisation::Ridge { intercept: 0.02, diagonal: 0.02, off_diagonal: 0.0 });
        assert!(RidgeStrengths::new().with_tau(f64::NAN).check().is_err());
        assert!(RidgeStrengths::new().with_diagonal(-1.0).check().is_err());
    }
}
