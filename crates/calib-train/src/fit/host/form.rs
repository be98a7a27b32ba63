//! [`HostForm`]: the affine family ([`AffineShape`]) and penalty of a map, as the host
//! objective and the penalty terms see it.

use crate::fit::Regularisation;

/// Which affine family the parameters describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AffineShape {
    /// `w ⊙ x + b`: parameters `[w (K), b (K)]`.
    Diagonal,
    /// `x W^T + b`: parameters `[W (K x K, row-major), b (K)]`.
    Full,
}

impl AffineShape {
    /// Number of parameters for K classes.
    pub fn n_params(self, k: usize) -> usize {
        match self {
            Self::Diagonal => 2 * k,
            Self::Full => k * k + k,
        }
    }
}

/// An affine map's form as the host objective sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct HostForm {
    /// The family.
    pub shape: AffineShape,
    /// Its penalty (only [`AffineShape::Full`] maps carry one).
    pub penalty: Regularisation,
}
