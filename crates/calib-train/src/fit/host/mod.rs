//! The fused host path for the affine maps (vector, matrix, Dirichlet): one pass over the
//! rows gives the objective and its gradient (no autodiff graph), minimised by Newton-CG on
//! Hessian-vector products (full maps under [`crate::Optimizer::Auto`]) or a host L-BFGS
//! (vector scaling, or when L-BFGS is asked for). Used on CPU devices in f64 ([`calib_core::Engine::Auto`]) or on request
//! ([`calib_core::Engine::Fused`]); the autodiff path stays the reference the tests compare
//! it with.

mod affine;
mod flat;
mod form;
pub(crate) mod gemm;
mod hessian;
mod lbfgs;
mod line_search;
mod low_rank_blocks;
mod narrow_products;
mod newton;
mod penalty;
mod preconditioner;
mod shift_balance;
mod span;

use burn::tensor::DType;

pub(crate) use affine::{AffineObjective, Value};
pub(crate) use flat::FlatObjective;
pub(crate) use form::{AffineShape, HostForm};
pub(crate) use lbfgs::minimise_host as minimise_flat;
pub(crate) use penalty::AffineTerms;
pub(crate) use span::{FeatureSpan, RANK_TOLERANCE, add_augmented_gram};

use super::config::{FitConfig, Optimizer};
use super::context::{FitContext, Progress};
use super::data::FitData;
use super::map::CalibrationMap;
use super::params::{flat_params, load_flat};
use crate::error::Result;
use crate::fit::objective::Evaluation;
use crate::fit::record::{FitEngine, FitRecord};

/// A calibration map the fused host objective can evaluate.
pub(crate) trait HostObjectiveMap: CalibrationMap {
    /// Its affine family and penalty; parameters in visit order are `[weight, bias]`.
    fn host_form(&self) -> HostForm;
}

/// Whether `config` sends a fit on `data` through the host path.
pub(crate) fn use_host(data: &FitData, config: &FitConfig) -> bool {
    config.optimizer.is_full_batch()
        && data.targets.is_none()
        && config.engine.uses_host(&data.features.device(), config.precision)
}

/// `data` with its host rows read when `config` sends fits through the host path (so that
/// folds and refits share one read-back).
pub(crate) fn with_host_rows_for(data: FitData, config: &FitConfig) -> Result<FitData> {
    if use_host(&data, config) { data.with_host_rows() } else { Ok(data) }
}

/// Minimises an affine map's objective on `data`'s host rows (read back when `data` has none)
/// with the host solvers: Newton-CG for full maps under [`Optimizer::Auto`], L-BFGS otherwise.
pub(crate) fn minimise_on_host<M: HostObjectiveMap>(
    map: M,
    data: &FitData,
    config: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<(M, FitRecord)> {
    let rows = match &data.host {
        Some(rows) => rows.clone(),
        None => data.clone().with_host_rows()?.host.expect("host rows were just read"),
    };
    let mut ctx =
        FitContext::new(config, &data.features.device(), DType::F64, FitEngine::Host, progress);
    let objective = AffineObjective::new(&rows, map.host_form());
    let x0 = Evaluation::params_of(flat_params(&map))?;
    let (x, mut record) = match (config.optimizer, objective.terms.form.shape) {
        (Optimizer::Auto, AffineShape::Full)
            if rows.k <= newton::MAX_CLASSES
                || (preconditioner::takes_low_rank(&objective)
                    && rows.n * rows.k <= newton::MAX_WIDE_VALUES) =>
        {
            newton::minimise_newton(&objective, x0.clone(), &mut ctx)?
        }
        (Optimizer::Lbfgs { history_size }, _) => {
            lbfgs::minimise_host(&objective, x0.clone(), history_size, &mut ctx)?
        }
        (Optimizer::Auto, _) => {
            lbfgs::minimise_host(&objective, x0.clone(), Optimizer::LBFGS_HISTORY, &mut ctx)?
        }
        (Optimizer::Adam { .. }, _) => unreachable!("use_host admits full-batch optimisers only"),
    };
    let x = objective.terms.canonical(x, &x0);
    record.n_samples = data.n_samples;
    record.n_classes = data.n_classes;
    Ok((load_flat(&map, &x), record))
}

/// Mean NLL of `map` on `data` through the host objective (`None` when `data` has no host
/// rows).
pub(crate) fn host_nll<M: HostObjectiveMap>(map: &M, data: &FitData) -> Result<Option<f64>> {
    let Some(rows) = &data.host else { return Ok(None) };
    let objective = AffineObjective::new(rows, map.host_form());
    let x = Evaluation::params_of(flat_params(map))?;
    Ok(Some(objective.nll(&x)))
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use crate::fit::minimise_affine_on;
    use burn::tensor::Device;
    use calib_core::input::{InputConfig, Predictions};
    use calib_core::synthetic::{SplitMix64, overconfident_logits};

    use super::*;
    use crate::fit::Regularisation;
    use crate::fit::Solver;
    use crate::fit::params::read_all;
    use crate::methods::{DirichletCalibration, VectorScaling};

    fn data(n: usize, k: usize) -> FitData {
        let device = Device::flex();
        let (logits, labels) = overconfident_logits(n, k, 0.7, 2.0, 3);
        let preds =
            Predictions::from_host(&logits, k, &labels, InputConfig::default(), &device).unwrap();
        FitData::new(&preds, "test", &device.autodiff(), DType::F64, |z| z)
            .unwrap()
            .with_host_rows()
            .unwrap()
    }

    fn perturbed<M: HostObjectiveMap>(map: &M, seed: u64) -> M {
        let x = Evaluation::params_of(flat_params(map)).unwrap();
        let mut rng = SplitMix64(seed);
        let x: Vec<f64> = x.iter().map(|v| v + 0.3 * rng.normal()).collect();
        load_flat(map, &x)
    }

    /// The host objective and gradient at any parameters equal burn autodiff's at their
    /// canonical form (the reduced penalty is the penalty there; the NLL is unchanged).
    fn agrees_with_autodiff<M: HostObjectiveMap>(map: M, data: &FitData) {
        let rows = data.host.as_ref().unwrap();
        let objective = AffineObjective::new(rows, map.host_form());
        let x = Evaluation::params_of(flat_params(&map)).unwrap();
        let canonical = load_flat(&map, &objective.terms.canonical(x.clone(), &x));
        let reference = Evaluation::of(&canonical, data).unwrap();
        let grads = reference.grads.iter().map(|(_, g)| g.clone()).collect();
        let want: Vec<f64> = read_all(grads).unwrap().concat();
        let mut got = vec![0.0; x.len()];
        let value = objective.evaluate(&x, &mut got);
        assert!((value.objective - reference.loss).abs() < 1e-12, "{value:?} {}", reference.loss);
        assert!((value.nll - reference.nll).abs() < 1e-12);
        // The gradient-free pass sums the same terms in the same order.
        assert_eq!(objective.nll(&x), value.nll);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() < 1e-12, "gradient {i}: {g} vs {w}");
        }
        // And the NLL is the same before and after the shift.
        let at_x = Evaluation::of(&map, data).unwrap();
        assert!((at_x.nll - reference.nll).abs() < 1e-12);
    }

    #[test]
    fn host_objective_matches_autodiff_for_every_affine_family() {
        // 300 rows: several row blocks and (on a multi-core machine) threads.
        let d = data(300, 7);
        let ad = Device::flex().autodiff();
        agrees_with_autodiff(perturbed(&VectorScaling::identity(7, &ad, DType::F64), 1), &d);
        for reg in [
            Regularisation::None,
            Regularisation::Odir { lambda: 0.5, mu: 0.2 },
            Regularisation::L2 { lambda: 0.3 },
            Regularisation::Ridge { intercept: 0.2, diagonal: 0.3, off_diagonal: 0.4 },
        ] {
            let map = DirichletCalibration::identity(7, reg, &ad, DType::F64);
            agrees_with_autodiff(perturbed(&map, 2), &d);
        }
    }

    /// Fits `start` on `d` to a gradient of 1e-10 with Newton-CG (the default for full maps)
    /// and with the host L-BFGS; checks both converged to the same loss (1e-12) and
    /// parameters (`tolerance`), and returns the two records.
    fn newton_and_lbfgs_agree(
        start: &DirichletCalibration,
        d: &FitData,
        tolerance: f64,
    ) -> (FitRecord, FitRecord) {
        let run = |optimizer| {
            let tight = FitConfig::new()
                .with_optimizer(optimizer)
                .with_tolerance_grad(Some(1e-10))
                .with_tolerance_change(Some(0.0))
                .with_max_iter(5000);
            minimise_affine_on(start.clone(), d, &tight, &mut |_| {}).unwrap()
        };
        let (newton, nr) = run(Optimizer::Auto);
        let (lbfgs, lr) = run(Optimizer::lbfgs());
        assert_eq!((nr.optimizer, lr.optimizer), (Solver::NewtonCg, Solver::Lbfgs));
        assert!(nr.converged && lr.converged, "{nr:?} {lr:?}");
        assert!((nr.final_loss - lr.final_loss).abs() <= 1e-12, "{nr:?} {lr:?}");
        let a = Evaluation::params_of(flat_params(&newton)).unwrap();
        let b = Evaluation::params_of(flat_params(&lbfgs)).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= tolerance, "{x} vs {y}");
        }
        (nr, lr)
    }

    /// Newton-CG and the host L-BFGS reach the same optimum, the former in far fewer
    /// iterations.
    #[test]
    fn newton_cg_and_lbfgs_reach_the_same_fit() {
        let d = data(600, 8);
        let ad = Device::flex().autodiff();
        for reg in [
            Regularisation::Odir { lambda: 0.05, mu: 0.05 },
            Regularisation::None,
            Regularisation::Ridge { intercept: 0.01, diagonal: 0.02, off_diagonal: 0.05 },
        ] {
            let start = DirichletCalibration::identity(8, reg, &ad, DType::F64);
            let (nr, lr) = newton_and_lbfgs_agree(&start, &d, 1e-5);
            assert!(nr.hessian_products > 0 && nr.iterations < lr.iterations, "{nr:?} {lr:?}");
        }
    }

    /// A wide map under structured matrix scaling's ridge takes the low-rank blocks with the
    /// shift balancing (also past Newton-CG's exact-block limit) and reaches the same optimum
    /// as L-BFGS, in a few Newton iterations.
    #[test]
    fn wide_ridge_maps_take_low_rank_blocks_to_the_same_fit() {
        for (n, k) in
            [(400, preconditioner::LOW_RANK_MIN_CLASSES + 6), (300, newton::MAX_CLASSES + 4)]
        {
            let d = data(n, k);
            let (kf, nf) = (k as f64, n as f64);
            let penalty = Regularisation::Ridge {
                intercept: kf / nf,
                diagonal: kf / nf,
                off_diagonal: kf * (kf - 1.0) / nf,
            };
            let ad = Device::flex().autodiff();
            let start = DirichletCalibration::identity(k, penalty, &ad, DType::F64);
            let objective = AffineObjective::new(d.host.as_ref().unwrap(), start.host_form());
            assert!(preconditioner::takes_low_rank(&objective));
            let (nr, _) = newton_and_lbfgs_agree(&start, &d, 1e-6);
            assert!(nr.iterations <= 8, "{nr:?}");
        }
    }

    #[test]
    fn load_flat_round_trips_parameters() {
        let ad = Device::flex().autodiff();
        let map = DirichletCalibration::identity(4, Regularisation::None, &ad, DType::F64);
        let x: Vec<f64> = (0..20).map(|i| i as f64 * 0.25 - 1.0).collect();
        let loaded = load_flat(&map, &x);
        assert_eq!(Evaluation::params_of(flat_params(&loaded)).unwrap(), x);
    }
}
