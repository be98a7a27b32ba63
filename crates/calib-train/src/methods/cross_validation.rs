//! k-fold cross-validation of regularisation strengths by held-out NLL.

use calib_core::synthetic::SplitMix64;
use serde::{Deserialize, Serialize};

use crate::error::{FitError, Result};
use crate::fit::Regularisation;
use crate::fit::params::read_all;
use crate::fit::{
    CvScore, FitConfig, FitData, HostObjectiveMap, host_nll, minimise_affine_on, objective,
};

/// The search: ODIR strengths on a grid, scored by mean held-out NLL over `folds` folds.
///
/// Folds are a seeded shuffle of the rows dealt round-robin, so they are deterministic and
/// differ in size by at most one. Grid points are fitted from the strongest penalty to the
/// weakest (strong penalties are the well-conditioned, cheap fits), each fold's fit starting
/// from its fit at the previous point (warm start). On a one-axis grid the walk stops once
/// [`Self::patience`] points in a row have not improved on the best held-out NLL: held-out
/// NLL against a decade grid of strengths is U-shaped in practice, and the weak end, where
/// Dirichlet calibration overfits, is also where fits are slowest. `patience: None` fits every
/// point.
///
/// Fold fits only rank grid points, which needs their held-out NLL to about 1e-4, not the
/// final fit's gradient tolerance: they stop at [`Self::max_iter`] iterations, a gradient
/// max-norm of [`Self::tolerance_grad`] or a relative loss change of
/// [`Self::tolerance_change`], whichever comes first (with the fit's own tolerances when
/// those are looser). The refit on all rows at the chosen strengths uses the fit's settings
/// unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossValidation {
    /// Off-diagonal strengths `lambda`. Default the decades `1e-4, 1e-3, ..., 1e6`, as the
    /// widest grid of Kull et al.'s experiment code (`10^i`, `i` up to 6). The strong end
    /// matters: on the validation rows of the repository's `data/` dumps, DenseNet-40
    /// (CIFAR-10) scores best at `1e4` and ResNet-110 (CIFAR-10-LT) at `10`; as `lambda`
    /// grows, `W` tends to a diagonal map.
    pub lambdas: Vec<f64>,
    /// Intercept strengths `mu`; `None` ties `mu = lambda` (one grid axis). Default `None`.
    pub mus: Option<Vec<f64>>,
    /// Number of folds. Default 5.
    pub folds: usize,
    /// Seed of the shuffle. Default 0.
    pub seed: u64,
    /// Iteration cap of each fold fit. Default 150.
    #[serde(default = "default_max_iter")]
    pub max_iter: usize,
    /// Relative loss-change tolerance of each fold fit. Default 1e-7.
    #[serde(default = "default_tolerance_change")]
    pub tolerance_change: f64,
    /// Gradient tolerance (max-norm) of each fold fit. Default 1e-5: on 10,000 x 100 it
    /// moved held-out NLLs by ~1e-6 against 1e-7 and saved a Newton iteration per fold fit.
    #[serde(default = "default_tolerance_grad")]
    pub tolerance_grad: f64,
    /// Stop walking the grid once this many points in a row have not improved on the best
    /// held-out NLL (one-axis grids only); `None` fits every point. Default 2.
    #[serde(default = "default_patience")]
    pub patience: Option<usize>,
}

fn default_patience() -> Option<usize> {
    Some(2)
}

fn default_tolerance_grad() -> f64 {
    1e-5
}

fn default_max_iter() -> usize {
    150
}

fn default_tolerance_change() -> f64 {
    1e-7
}

impl Default for CrossValidation {
    fn default() -> Self {
        Self {
            lambdas: vec![1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 1e2, 1e3, 1e4, 1e5, 1e6],
            mus: None,
            folds: 5,
            seed: 0,
            max_iter: default_max_iter(),
            tolerance_change: default_tolerance_change(),
            tolerance_grad: default_tolerance_grad(),
            patience: default_patience(),
        }
    }
}

impl CrossValidation {
    /// The grid of `(lambda, mu)` pairs, strongest first.
    fn grid(&self) -> Vec<(f64, f64)> {
        let mut grid: Vec<(f64, f64)> = match &self.mus {
            None => self.lambdas.iter().map(|&l| (l, l)).collect(),
            Some(mus) => {
                self.lambdas.iter().flat_map(|&l| mus.iter().map(move |&m| (l, m))).collect()
            }
        };
        grid.sort_by(|a, b| (b.0 + b.1).total_cmp(&(a.0 + a.1)));
        grid
    }

    /// Checks the grid, folds and fold-fit settings that do not depend on the data.
    pub(crate) fn check(&self) -> Result<()> {
        let values = self.lambdas.iter().chain(self.mus.iter().flatten());
        if self.lambdas.is_empty() || self.mus.as_ref().is_some_and(Vec::is_empty) {
            return Err(FitError::InvalidConfig("cross-validation grid is empty".into()));
        }
        if values.clone().any(|v| !(*v >= 0.0 && v.is_finite())) {
            return Err(FitError::InvalidConfig("grid strengths must be finite and >= 0".into()));
        }
        let tolerance_ok = |t: f64| t >= 0.0 && t.is_finite();
        if self.max_iter == 0
            || !tolerance_ok(self.tolerance_change)
            || !tolerance_ok(self.tolerance_grad)
        {
            return Err(FitError::InvalidConfig(
                "cross-validation max_iter must be >= 1 and its tolerances finite and >= 0".into(),
            ));
        }
        if self.folds < 2 {
            return Err(FitError::InvalidConfig(format!(
                "cross-validation needs at least 2 folds, got {}",
                self.folds
            )));
        }
        Ok(())
    }

    /// At most one fold per row of the `n` rows (the rest is [`Self::check`], which the fit
    /// has already run).
    fn check_folds_fit(&self, n: usize) -> Result<()> {
        if self.folds > n {
            return Err(FitError::InvalidConfig(format!(
                "cross-validation needs 2 <= folds <= N, got {} folds for N = {n}",
                self.folds
            )));
        }
        Ok(())
    }
}

/// A warning when the chosen strength lies on the edge of the grid: the held-out NLL may keep
/// improving beyond it (seen on CIFAR-100 logits, where the strongest default `lambda = 10`
/// won).
pub(crate) fn edge_warning(cv: &CrossValidation, chosen: Regularisation) -> Option<String> {
    let Regularisation::Odir { lambda, mu } = chosen else { return None };
    let axis = |values: &[f64], v: f64, name: &str| -> Option<String> {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let side = if lo == hi {
            return None;
        } else if v == hi {
            "strongest"
        } else if v == lo {
            "weakest"
        } else {
            return None;
        };
        Some(format!(
            "cross-validation chose the {side} {name} of its grid ({v:e}); the held-out NLL may \
             improve beyond it: extend the grid"
        ))
    };
    let by_lambda = axis(&cv.lambdas, lambda, "lambda");
    match &cv.mus {
        None => by_lambda,
        Some(mus) => match (by_lambda, axis(mus, mu, "mu")) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        },
    }
}

/// A seeded Fisher-Yates shuffle of `0..n`.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = SplitMix64(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    order
}

/// (training, held-out) rows of each fold: the rows shuffled, position `p` held out in fold
/// `p mod folds`, each row whole with its weight. (Dealing a whole-number weight's copies
/// into different folds, as the repeated rows would be, lets a row's copies in training
/// predict it held out, and the search then picks the weakest penalty.)
fn row_splits(cv: &CrossValidation, data: &FitData) -> Vec<(FitData, FitData)> {
    let order = shuffled(data.n_samples, cv.seed);
    (0..cv.folds)
        .map(|f| {
            let (mut train, mut held) = (Vec::new(), Vec::new());
            for (pos, &i) in order.iter().enumerate() {
                if pos % cv.folds == f { held.push(i) } else { train.push(i) }
            }
            train.sort_unstable();
            held.sort_unstable();
            (data.select(&train), data.select(&held))
        })
        .collect()
}

/// Chooses ODIR strengths for maps made by `make(reg, warm_start)` on `data`.
pub(crate) fn select_by_cross_validation<M: HostObjectiveMap>(
    cv: &CrossValidation,
    data: &FitData,
    fit: &FitConfig,
    make: &dyn Fn(Regularisation, Option<&M>) -> M,
) -> Result<(Regularisation, Vec<CvScore>)> {
    let n = data.n_samples;
    cv.check_folds_fit(n)?;
    let splits = row_splits(cv, data);
    let total_weight = data.weights.as_deref().map_or(n as f64, |w| w.iter().sum());
    let (grad, change) = fit.tolerances(data.features.dtype());
    let fold_fit = fit
        .clone()
        .with_max_iter(fit.max_iter.min(cv.max_iter))
        .with_tolerance_change(Some(change.max(cv.tolerance_change)))
        .with_tolerance_grad(Some(grad.max(cv.tolerance_grad)));
    let mut warm: Vec<Option<M>> = (0..cv.folds).map(|_| None).collect();
    let mut scores = Vec::new();
    let mut best: Option<usize> = None;
    for (lambda, mu) in cv.grid() {
        let reg = Regularisation::Odir { lambda, mu };
        let mut total = 0.0;
        for (f, (train, held)) in splits.iter().enumerate() {
            let (map, _) =
                minimise_affine_on(make(reg, warm[f].as_ref()), train, &fold_fit, &mut |_| {})?;
            let nll = match host_nll(&map, held)? {
                Some(nll) => nll,
                None => read_all(vec![objective(&map, held).1.detach()])?[0][0],
            };
            total +=
                nll * held.weights.as_deref().map_or(held.n_samples as f64, |w| w.iter().sum());
            warm[f] = Some(map);
        }
        scores.push(CvScore { lambda, mu, held_out_nll: total / total_weight });
        let here = scores.len() - 1;
        let best_at = *best.get_or_insert(here);
        if scores[here].held_out_nll < scores[best_at].held_out_nll {
            best = Some(here);
        } else if cv.mus.is_none() && cv.patience.is_some_and(|p| here - best_at >= p) {
            break;
        }
    }
    let chosen = &scores[best.expect("grid is not empty")];
    Ok((Regularisation::Odir { lambda: chosen.lambda, mu: chosen.mu }, scores))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_on_the_grid_edge_are_flagged() {
        let cv = CrossValidation::default();
        let at = |l: f64| edge_warning(&cv, Regularisation::Odir { lambda: l, mu: l });
        assert!(at(1e6).unwrap().contains("strongest lambda"));
        assert!(at(1e-4).unwrap().contains("weakest lambda"));
        assert_eq!(at(1e-2), None);
        let single = CrossValidation { lambdas: vec![0.1], ..CrossValidation::default() };
        assert_eq!(edge_warning(&single, Regularisation::Odir { lambda: 0.1, mu: 0.1 }), None);
        let both = CrossValidation { mus: Some(vec![1e-3, 1.0]), ..CrossValidation::default() };
        let w = edge_warning(&both, Regularisation::Odir { lambda: 1e-2, mu: 1.0 }).unwrap();
        assert!(w.contains("strongest mu") && !w.contains("lambda of"), "{w}");
    }
}
