//! [`Regularisation`]: the penalty of an affine calibration map, part of the objective every
//! optimiser of this layer minimises.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{FitError, Result};

/// Regularisation of an affine calibration map (`docs/conventions.md`, "Calibrators").
///
/// ```text
/// Odir { lambda, mu }:  lambda * sum_{i != j} W_ij^2 / (K (K - 1)) + mu * sum_k b_k^2 / K
/// L2 { lambda }:        lambda * (sum_{i,j} W_ij^2 + sum_k b_k^2) / (K (K + 1))
/// Ridge { intercept, diagonal, off_diagonal }:
///     intercept * sum_k b_k^2 + diagonal * sum_k (W_kk - 1)^2 + off_diagonal * sum_{i != j} W_ij^2
///     (a diagonal map `w ⊙ x + b`: intercept * |b|^2 + diagonal * |w - 1|^2)
/// ```
/// ODIR (off-diagonal and intercept regularisation) is Kull et al. 2019, §4 ("Dirichlet
/// calibration", eq. for ODIR); the L2 form is dirichletcal's `reg_mu = None, reg_norm = True`
/// (all weights toward 0, normalised by the parameter count). The ridge towards the identity is
/// structured matrix and vector scaling's (Berta et al. 2025; its strengths are absolute, not
/// divided by a parameter count). ODIR and L2 leave the NLL's shift invariance in place (the
/// fits minimise them reduced over it); the ridge does not.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum Regularisation {
    /// No penalty.
    #[default]
    None,
    /// Off-diagonal weights and intercepts.
    Odir {
        /// Strength on the off-diagonal weights.
        lambda: f64,
        /// Strength on the intercepts.
        mu: f64,
    },
    /// All weights and intercepts toward zero.
    L2 {
        /// Strength.
        lambda: f64,
    },
    /// Intercepts, diagonal and off-diagonal weights toward the identity map, each with its
    /// own strength.
    Ridge {
        /// Strength on the intercepts `b`.
        intercept: f64,
        /// Strength on the diagonal weights' distance from 1.
        diagonal: f64,
        /// Strength on the off-diagonal weights.
        off_diagonal: f64,
    },
}

impl Regularisation {
    /// Checks strengths are finite and non-negative.
    pub(crate) fn validate(self) -> Result<()> {
        let ok = |v: f64| v >= 0.0 && v.is_finite();
        let fine = match self {
            Self::None => true,
            Self::Odir { lambda, mu } => ok(lambda) && ok(mu),
            Self::L2 { lambda } => ok(lambda),
            Self::Ridge { intercept, diagonal, off_diagonal } => {
                ok(intercept) && ok(diagonal) && ok(off_diagonal)
            }
        };
        if fine {
            Ok(())
        } else {
            Err(FitError::InvalidConfig(format!("regularisation strengths must be >= 0: {self:?}")))
        }
    }

    /// Whether any penalty is active.
    pub fn is_active(self) -> bool {
        match self {
            Self::None => false,
            Self::Odir { lambda, mu } => lambda > 0.0 || mu > 0.0,
            Self::L2 { lambda } => lambda > 0.0,
            Self::Ridge { intercept, diagonal, off_diagonal } => {
                intercept > 0.0 || diagonal > 0.0 || off_diagonal > 0.0
            }
        }
    }

    /// Whether the penalty, like the NLL, is unchanged by the softmax's shift invariance once
    /// reduced over it (ODIR, L2); the ridge towards the identity is not.
    pub(crate) fn is_shift_invariant(self) -> bool {
        !matches!(self, Self::Ridge { .. })
    }

    /// The strengths by name for the saved record: `lambda` and `mu` (0 where the penalty has
    /// none), or the ridge's three.
    pub(crate) fn strengths(self) -> BTreeMap<String, f64> {
        let named = match self {
            Self::None => vec![("lambda", 0.0), ("mu", 0.0)],
            Self::Odir { lambda, mu } => vec![("lambda", lambda), ("mu", mu)],
            Self::L2 { lambda } => vec![("lambda", lambda), ("mu", 0.0)],
            Self::Ridge { intercept, diagonal, off_diagonal } => vec![
                ("intercept", intercept),
                ("diagonal", diagonal),
                ("off_diagonal", off_diagonal),
            ],
        };
        named.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// The penalty a saved file names (none when it names none), checked.
    pub(crate) fn from_saved(saved: Option<Self>) -> Result<Self> {
        let reg = saved.unwrap_or_default();
        reg.validate().map_err(|_| FitError::Format(format!("invalid regularisation {reg:?}")))?;
        Ok(reg)
    }

    /// The penalty a format-1 file coded as `(kind, lambda, mu)`, kind 0 (none), 1 (ODIR) or
    /// 2 (L2).
    pub(crate) fn decode(kind: f64, lambda: f64, mu: f64) -> Result<Self> {
        let reg = match kind {
            0.0 => Self::None,
            1.0 => Self::Odir { lambda, mu },
            2.0 => Self::L2 { lambda },
            other => {
                return Err(FitError::Format(format!(
                    "unknown regularisation kind {other} (expected 0: none, 1: ODIR, 2: L2)"
                )));
            }
        };
        reg.validate().map_err(|_| FitError::Format(format!("invalid regularisation {reg:?}")))?;
        Ok(reg)
    }
}
