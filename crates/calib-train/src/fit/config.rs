//! [`FitConfig`]: how a calibrator's parameters are optimised.

use burn::config::Config;
use burn::tensor::{DType, Device};
use calib_core::{Engine, Precision};
use serde::{Deserialize, Serialize};

use crate::error::{FitError, Result};

/// The optimiser that minimises the mean NLL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum Optimizer {
    /// Full-batch and second order, the method chosen per map: the default.
    ///
    /// - Matrix scaling and Dirichlet calibration on the host engine
    ///   ([`crate::FitConfig::engine`]; CPU devices in f64 by default): Newton-CG with
    ///   Hessian-vector products, preconditioned by the Hessian's per-class blocks (at K = 100
    ///   a few dozen products where L-BFGS needs hundreds to a thousand iterations), up to
    ///   K = 256 (the preconditioner's blocks grow as K^3); L-BFGS beyond.
    /// - Temperature scaling on CPU: its one-dimensional Newton solver
    ///   ([`crate::TemperatureSolver`]).
    /// - Everything else, and every fit on the device passes ([`crate::FitEngine::Device`]):
    ///   L-BFGS as [`Self::lbfgs`].
    #[default]
    Auto,
    /// Full-batch L-BFGS with a strong-Wolfe line search (burn's `LBFGS` under autodiff, the
    /// host L-BFGS on the host engine).
    Lbfgs {
        /// Number of (s, y) pairs kept. Default 100 (as burn and PyTorch); the calibration maps are
        /// ill-conditioned enough that short memories (10-20) converge several times slower.
        history_size: usize,
    },
    /// Mini-batch Adam (burn's `Adam`): for inputs beyond memory and training loops.
    ///
    /// Mini-batches are drawn by a seeded shuffle, so runs are deterministic.
    Adam {
        /// Step size. Default 0.01.
        learning_rate: f64,
        /// Rows per mini-batch. Default 1024.
        batch_size: usize,
        /// Passes over the data. Default 50.
        epochs: usize,
        /// Seed of the shuffle. Default 0.
        seed: u64,
    },
}

impl Optimizer {
    /// History of [`Self::lbfgs`] (and of the L-BFGS [`Self::Auto`] runs).
    pub const LBFGS_HISTORY: usize = 100;

    /// L-BFGS with the default history.
    pub fn lbfgs() -> Self {
        Self::Lbfgs { history_size: Self::LBFGS_HISTORY }
    }

    /// Whether this optimiser works on the full batch (not mini-batches).
    pub fn is_full_batch(self) -> bool {
        !matches!(self, Self::Adam { .. })
    }

    /// Adam with the defaults above.
    pub fn adam() -> Self {
        Self::Adam { learning_rate: 0.01, batch_size: 1024, epochs: 50, seed: 0 }
    }
}

/// How to fit: optimiser, stopping rule, precision.
///
/// The stopping rule: the fit has **converged** when the largest absolute gradient entry is at
/// most `tolerance_grad`, or when one iteration changes the loss by at most
/// `tolerance_change * max(1, |loss|)`; it stops unconverged after `max_iter` iterations.
/// A fit that stops unconverged is reported as such in its [`crate::FitRecord`].
///
/// # Example
/// ```
/// use calib_train::{FitConfig, Optimizer};
/// let config = FitConfig::new().with_max_iter(200).with_optimizer(Optimizer::lbfgs());
/// assert_eq!(config.max_iter, 200);
/// ```
#[derive(Config, Debug, PartialEq)]
pub struct FitConfig {
    /// The optimiser.
    #[config(default = "Optimizer::Auto")]
    pub optimizer: Optimizer,
    /// Iteration cap (L-BFGS iterations; Adam counts epochs against `epochs` instead).
    #[config(default = 1000)]
    pub max_iter: usize,
    /// Gradient tolerance (max-norm); `None`: 1e-7 in f64, 1e-5 in f32 (Adam: 1e-3).
    pub tolerance_grad: Option<f64>,
    /// Relative loss-change tolerance; `None`: 1e-12 in f64, 1e-9 in f32 (the loss is summed
    /// in f64 on the host) (Adam: 1e-6).
    pub tolerance_change: Option<f64>,
    /// Float precision on the device (`Auto`: f64 on CPU, f32 on GPU).
    #[config(default = "Precision::Auto")]
    pub precision: Precision,
    /// Where the objective of vector, matrix and Dirichlet fits is computed. Default
    /// [`Engine::Auto`]: on a CPU device in f64, a fused host pass over the rows (objective
    /// and gradient together, no autodiff graph; several times faster); elsewhere (GPU
    /// devices, or f32) hand-written objective, gradient and Hessian-diagonal passes as tensor
    /// ops on the device, driven by the host L-BFGS ([`crate::FitEngine::Device`]: only the
    /// parameters and `K x K + K` sums cross). [`Engine::Kernels`] asks for those device
    /// passes; [`Engine::Tensor`] always uses burn autodiff (the reference); [`Engine::Fused`]
    /// always the host pass (in f64, reading the rows back once). Mini-batch Adam and soft
    /// targets always use autodiff. Temperature scaling has its own Newton solver and Platt
    /// scaling always uses autodiff.
    #[config(default = "Engine::Auto")]
    pub engine: Engine,
}

impl Default for FitConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl FitConfig {
    /// Checks the settings once.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(FitError::InvalidConfig(what.to_string()));
        if self.max_iter == 0 {
            return bad("max_iter must be at least 1");
        }
        if let Err(calib_core::CalibError::InvalidConfig(why)) = self.engine.check(self.precision) {
            return bad(&why);
        }
        for t in [self.tolerance_grad, self.tolerance_change].into_iter().flatten() {
            if !(t >= 0.0 && t.is_finite()) {
                return bad("tolerances must be finite and >= 0");
            }
        }
        match self.optimizer {
            Optimizer::Lbfgs { history_size: 0 } => bad("L-BFGS history_size must be >= 1"),
            Optimizer::Adam { learning_rate, batch_size, epochs, .. } => {
                if !(learning_rate > 0.0 && learning_rate.is_finite()) {
                    bad("Adam learning_rate must be > 0")
                } else if batch_size == 0 || epochs == 0 {
                    bad("Adam batch_size and epochs must be >= 1")
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    /// The dtype of the fit on `device`.
    pub(crate) fn dtype(&self, device: &Device) -> DType {
        self.precision.dtype(device)
    }

    /// Gradient and change tolerances for `dtype` (and the optimiser: mini-batch Adam cannot
    /// reach L-BFGS's tolerances, so its defaults are 1e-3 and 1e-6).
    pub(crate) fn tolerances(&self, dtype: DType) -> (f64, f64) {
        let double = dtype == DType::F64;
        let (g, c) = match self.optimizer {
            Optimizer::Adam { .. } => (1e-3, 1e-6),
            Optimizer::Lbfgs { .. } | Optimizer::Auto if double => (1e-7, 1e-12),
            Optimizer::Lbfgs { .. } | Optimizer::Auto => (1e-5, 1e-9),
        };
        (self.tolerance_grad.unwrap_or(g), self.tolerance_change.unwrap_or(c))
    }
}
