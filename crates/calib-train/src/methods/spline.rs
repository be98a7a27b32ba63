//! Spline calibration (Lucena 2018, "Spline-based probability calibration"), the model of
//! `ml_insights.SplineCalib`.
//!
//! ```text
//! x = logit(clip(s, eps, 1 - eps))
//! P(y = 1 | s) = sigmoid(beta . B(x)),  B = natural cubic spline basis on knots t_0 < ... < t_{K-1}:
//!   [1, x, H_1(x), ..., H_{K-2}(x)],  H_k = d_k - d_{K-1},
//!   d_k(x) = ((x - t_{k-1})_+^3 - (x - t_{K-1})_+^3) / (t_{K-1} - t_{k-1})
//! minimise (1/M) sum_i v_i logloss_i + lambda |beta|^2 / K
//!   over the calibration pairs (v = 1) and a "unity prior": 135 synthetic points on y = x with
//!   total weight 20 (ml_insights' defaults)
//! lambda from {1e-4, 10^-3.5, ..., 1e4} by the held-out NLL of stratified 5-fold splits (every
//!   fold; the first only with `fast = true`, ml_insights' default "fast" search)
//! ```
//!
//! Knots: `n_knots` evenly spaced positions among the sorted unique calibration scores (ends
//! included) and ml_insights' extra knots 0.1, ..., 0.9, on the probability scale, then clipped
//! and mapped to log-odds. `eps` is ml_insights' automatic choice (from the scores and the prior
//! grid). Differences from ml_insights 1.1.0, all deliberate: its knots are a random sample of
//! the scores (Python's `random`), calib takes quantiles; its folds shuffle with numpy's
//! generator and stratify the prior points too, calib's are seeded and stratified by outcome
//! with the prior always in training; its final fit uses the scored fold's training rows only,
//! calib refits on all rows;
//! calib solves each penalised fit by Newton to a gradient of 1e-11 where it stops L-BFGS at
//! 1e-4. Host, f64. Sample weights: each row's `v_i = w_i`, the folds deal rows whole with
//! their weights; whole-number weights give the repeated rows' map at a given penalty.

use std::collections::BTreeMap;

use burn::config::Config;
use calib_core::synthetic::SplitMix64;

use super::spline_basis::{Rows, natural_spline_basis};
use crate::api::{Method, SavedTensor};
use crate::binary::{
    BinaryFit, BinaryFitted, BinaryMap, LogisticProblem, MapCalibrator, Reduction, sigmoid,
};
use crate::error::{FitError, Result};

/// A fitted spline map: knots on the log-odds scale, coefficients, and the clip `eps`.
#[derive(Debug, Clone, PartialEq)]
pub struct SplineMap {
    knots: Vec<f64>,
    coefficients: Vec<f64>,
    eps: f64,
}

/// Spline calibration as a calibrator ([`MapCalibrator`] of [`SplineMap`]s).
pub type SplineCalibration = MapCalibrator<SplineMap>;

impl SplineMap {
    /// Knots (log-odds scale), coefficients `[K]` and the clip `eps`.
    pub fn parts(&self) -> (&[f64], &[f64], f64) {
        (&self.knots, &self.coefficients, self.eps)
    }

    fn feature(&self, s: f64) -> f64 {
        let s = s.clamp(self.eps, 1.0 - self.eps);
        (s / (1.0 - s)).ln()
    }
}

impl BinaryMap for SplineMap {
    const METHOD: Method = Method::Spline;

    fn predict(&self, s: f64) -> f64 {
        if self.coefficients.is_empty() {
            return s;
        }
        let mut b = vec![0.0; self.knots.len()];
        natural_spline_basis(self.feature(s), &self.knots, &mut b);
        sigmoid(b.iter().zip(&self.coefficients).map(|(a, c)| a * c).sum())
    }

    /// No coefficients: the score itself.
    fn identity() -> Self {
        Self { knots: Vec::new(), coefficients: Vec::new(), eps: 1e-16 }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "knots", self.knots.clone());
        crate::binary::put(out, prefix, "coefficients", self.coefficients.clone());
        crate::binary::put(out, prefix, "eps", vec![self.eps]);
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let knots = crate::binary::table(parameters, prefix, "knots")?.to_vec();
        let coefficients = crate::binary::table(parameters, prefix, "coefficients")?.to_vec();
        let eps = match crate::binary::table(parameters, prefix, "eps")? {
            &[e] if e > 0.0 && e < 0.5 => e,
            _ => {
                return Err(FitError::Format(format!(
                    "spline map `{prefix}eps` needs one value in (0, 0.5)"
                )));
            }
        };
        let identity = knots.is_empty() && coefficients.is_empty();
        if !identity
            && (knots.len() < 3
                || knots.len() != coefficients.len()
                || knots.windows(2).any(|w| w[0] >= w[1]))
        {
            return Err(FitError::Format(format!(
                "spline map `{prefix}` needs K >= 3 increasing knots, K coefficients"
            )));
        }
        Ok(Self { knots, coefficients, eps })
    }
}

/// Settings of spline calibration.
#[derive(Config, Debug, PartialEq)]
pub struct SplineCalibrationConfig {
    /// Knots taken at quantiles of the unique scores (ml_insights' `knot_sample_size`).
    #[config(default = 30)]
    pub n_knots: usize,
    /// Folds of the penalty search.
    #[config(default = 5)]
    pub folds: usize,
    /// Seed of the folds.
    #[config(default = 42)]
    pub seed: u64,
    /// Score the penalties on the first fold only (ml_insights' default "fast" search, five
    /// times cheaper but noisier: on the test dump its test NLL is 0.8 % above the full
    /// search's); false (the default) scores every fold.
    #[config(default = false)]
    pub fast: bool,
    /// A fixed penalty `lambda` instead of the cross-validated search.
    pub penalty: Option<f64>,
    /// Total weight of the unity prior (0: none).
    #[config(default = 20.0)]
    pub prior_weight: f64,
    /// One-vs-rest or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

/// ml_insights' penalty grid: 17 values from 1e-4 to 1e4, evenly spaced in log10.
fn penalty_grid() -> Vec<f64> {
    (0..17).map(|i| 10f64.powf(-4.0 + 0.5 * i as f64)).collect()
}

/// The unity prior: grid points (their own targets) and weights summing to `total`.
fn unity_prior(total: f64) -> (Vec<f64>, Vec<f64>) {
    let a1: Vec<f64> = (0..19).map(|i| 10f64.powf(-8.0 + 6.0 * i as f64 / 18.0)).collect();
    let mut grid: Vec<f64> = a1.to_vec();
    grid.extend((0..99).map(|i| 0.01 + 0.98 * i as f64 / 98.0));
    grid.extend(a1.iter().map(|a| 1.0 - a));
    grid.sort_by(f64::total_cmp);
    grid.dedup_by(|a, b| (*a - *b).abs() < 1e-15);
    let w: Vec<f64> = grid
        .iter()
        .map(|&g| if (0.01 - 1e-12..=0.99 + 1e-12).contains(&g) { 1.0 } else { 1.0 / 18.0 })
        .collect();
    let scale = total / w.iter().sum::<f64>();
    (grid, w.into_iter().map(|v| v * scale).collect())
}

/// ml_insights' automatic clip: `clamp(2^(round(log2 m) - 1), 1e-16, 1e-4)` with `m` the
/// smallest value in (0, 1). (ml_insights means the smaller distance to 0 or to 1, but its
/// `min(closest_to_zero, closest_to_one)` compares the smallest value with the largest, so the
/// distance to 1 never counts; calib does the same, to fit the same model.)
fn logodds_eps(values: &[f64]) -> f64 {
    let m = values.iter().filter(|&&v| v > 0.0 && v < 1.0).fold(f64::INFINITY, |a, &v| a.min(v));
    if !m.is_finite() {
        return 1e-4;
    }
    2f64.powf(m.log2().round() - 1.0).clamp(1e-16, 1e-4)
}

impl SplineCalibrationConfig {
    /// Knots on the probability scale: quantiles of the unique scores, plus 0.1, ..., 0.9.
    fn knots(&self, scores: &[f64]) -> Result<Vec<f64>> {
        let mut unique = scores.to_vec();
        unique.sort_by(f64::total_cmp);
        unique.dedup();
        if unique.len() < 3 {
            return Err(FitError::UnsuitableInput {
                method: Method::Spline.name().into(),
                reason: format!("{} distinct scores; a spline needs at least 3", unique.len()),
            });
        }
        let m = self.n_knots.min(unique.len());
        let mut knots: Vec<f64> = (0..m)
            .map(|j| unique[(j * (unique.len() - 1) + (m - 1) / 2) / (m - 1).max(1)])
            .collect();
        knots.extend((1..10).map(|j| j as f64 / 10.0));
        knots.sort_by(f64::total_cmp);
        knots.dedup();
        Ok(knots)
    }
}

/// The penalised problem's rows, targets and weights.
#[derive(Clone)]
struct Design {
    k: usize,
    rows: Rows,
    t: Vec<f64>,
    v: Vec<f64>,
    /// M, what the loss is divided by: the rows of the repeated set (each prior point one
    /// row, each calibration row its weight).
    m: f64,
}

impl Design {
    /// Appends row `i` of `all` with outcome `target` at weight `v`.
    fn push_row_of(&mut self, all: &Rows, i: usize, target: bool, v: f64) {
        self.rows.push_row_of(all, i, self.k);
        self.t.push(f64::from(u8::from(target)));
        self.v.push(v);
        self.m += v;
    }

    /// Newton from `w0` at penalty `lambda |beta|^2 / K` (l2 = 2 lambda / K) on the loss
    /// divided by `M`; the logistic problem divides by its row count, so the penalty is
    /// scaled by `M / rows` (1 without weights).
    fn fit(&self, lambda: f64, w0: Vec<f64>) -> crate::binary::LogisticFit {
        let scale = self.m / self.t.len() as f64;
        let problem = LogisticProblem {
            features: self.rows.features(),
            n_features: self.k,
            targets: crate::binary::Targets::Values(&self.t),
            intercept: false,
            l2: 2.0 * lambda / self.k as f64 * scale,
            weights: Some(&self.v),
        };
        problem.fit(w0)
    }
}

/// Stratified folds as each row's held-out weight in each fold (`[fold][row]`): each outcome's
/// rows shuffled (seeded) and dealt round-robin, each row whole with its weight (see
/// `select_by_cross_validation` for why not its copies).
fn stratified_folds(outcomes: &[bool], weights: &[f64], folds: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = SplitMix64(seed);
    let mut held = vec![vec![0.0; outcomes.len()]; folds];
    for class in [false, true] {
        let mut rows: Vec<usize> = (0..outcomes.len()).filter(|&i| outcomes[i] == class).collect();
        for i in (1..rows.len()).rev() {
            rows.swap(i, rng.below(i + 1));
        }
        for (j, &i) in rows.iter().enumerate() {
            held[j % folds][i] = weights[i];
        }
    }
    held
}

impl SplineCalibrationConfig {
    /// Cross-validated NLL of every penalty on the grid (held-out rows of every fold).
    fn search(
        &self,
        all: &Rows,
        outcomes: &[bool],
        weights: &[f64],
        prior: &Design,
    ) -> (f64, usize) {
        let k = prior.k;
        let held = stratified_folds(outcomes, weights, self.folds, self.seed);
        let scored = if self.fast { 1 } else { self.folds };
        let trains: Vec<Design> = (0..scored)
            .map(|f| {
                let mut train = prior.clone();
                for i in 0..outcomes.len() {
                    let v = weights[i] - held[f][i];
                    if v > 0.0 {
                        train.push_row_of(all, i, outcomes[i], v);
                    }
                }
                train
            })
            .collect();
        let mut warm: Vec<Vec<f64>> = vec![vec![0.0; k]; scored];
        let (mut best, mut best_score, mut iterations) = (0.0, f64::INFINITY, 0);
        let held_out: f64 = held[..scored].iter().flatten().sum::<f64>().max(1.0);
        for lambda in penalty_grid() {
            let mut total = 0.0;
            for (f, train) in trains.iter().enumerate() {
                let fit = train.fit(lambda, warm[f].clone());
                iterations += fit.iterations;
                let z = all.linear(&fit.weights);
                for i in (0..outcomes.len()).filter(|&i| held[f][i] > 0.0) {
                    let p = sigmoid(z[i]).clamp(1e-16, 1.0 - 1e-16);
                    total -= held[f][i] * if outcomes[i] { p.ln() } else { (1.0 - p).ln() };
                }
                warm[f] = fit.weights;
            }
            // ml_insights rounds the held-out NLL to 4 decimals; ties go to the first.
            let score = (total / held_out * 1e4).round() / 1e4;
            if score < best_score {
                (best, best_score) = (lambda, score);
            }
        }
        (best, iterations)
    }
}

impl BinaryFit for SplineCalibrationConfig {
    type Map = SplineMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        let penalty_ok = self.penalty.is_none_or(|l| l >= 0.0 && l.is_finite());
        if self.n_knots < 3
            || self.folds < 2
            || self.prior_weight.is_nan()
            || self.prior_weight < 0.0
            || !penalty_ok
        {
            return Err(FitError::InvalidConfig(format!(
                "spline: n_knots >= 3, folds >= 2, prior_weight >= 0, penalty >= 0 (got {}, {}, \
                 {}, {:?})",
                self.n_knots, self.folds, self.prior_weight, self.penalty
            )));
        }
        Ok(())
    }

    /// The fit on pairs of sample weights `weights` (each 1 unweighted).
    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<SplineMap>> {
        let ones = vec![1.0; scores.len()];
        let weights = weights.unwrap_or(&ones);
        let knots_p = self.knots(scores)?;
        let (grid, grid_w) = if self.prior_weight > 0.0 {
            unity_prior(self.prior_weight)
        } else {
            (Vec::new(), Vec::new())
        };
        let with_prior: Vec<f64> = scores.iter().chain(&grid).copied().collect();
        let eps = logodds_eps(&with_prior);
        let shape = SplineMap { knots: Vec::new(), coefficients: Vec::new(), eps };
        let mut knots: Vec<f64> = knots_p.iter().map(|&t| shape.feature(t)).collect();
        knots.dedup();
        let k = knots.len();
        let all = Rows::new(&knots, scores.iter().map(|&s| shape.feature(s)));
        let prior_rows = Rows::new(&knots, grid.iter().map(|&g| shape.feature(g)));
        let m = grid.len() as f64;
        let prior = Design { k, rows: prior_rows, t: grid, v: grid_w, m };
        let (lambda, cv_iterations) = match self.penalty {
            Some(lambda) => (lambda, 0),
            None => self.search(&all, outcomes, weights, &prior),
        };
        let mut all_rows = prior;
        for (i, &o) in outcomes.iter().enumerate() {
            all_rows.push_row_of(&all, i, o, weights[i]);
        }
        let fit = all_rows.fit(lambda, vec![0.0; k]);
        let map = SplineMap { knots, coefficients: fit.weights, eps };
        Ok(BinaryFitted {
            map,
            iterations: cv_iterations + fit.iterations,
            converged: fit.converged,
            warnings: Vec::new(),
            training_nll: None,
        })
    }
}

crate::binary::fit_by_maps!(SplineCalibrationConfig, SplineCalibration);

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole-number weights give the repeated rows' map at a given penalty.
    #[test]
    fn whole_weights_fit_the_repeated_rows() {
        let mut rng = SplitMix64(3);
        let scores: Vec<f64> = (0..150).map(|_| rng.uniform()).collect();
        let outcomes: Vec<bool> = scores.iter().map(|&s| rng.uniform() < s * s).collect();
        let weights: Vec<f64> = (0..150).map(|i| (1 + i % 3) as f64).collect();
        let (mut s, mut o) = (Vec::new(), Vec::new());
        for i in 0..150 {
            for _ in 0..weights[i] as usize {
                s.push(scores[i]);
                o.push(outcomes[i]);
            }
        }
        let c = SplineCalibrationConfig::new().with_penalty(Some(0.01));
        let a = c.fit_weighted(&scores, &outcomes, &weights).unwrap().map;
        let b = c.fit_binary(&s, &o).unwrap().map;
        for (x, y) in a.coefficients.iter().zip(&b.coefficients) {
            assert!((x - y).abs() < 1e-7, "{x} vs {y}");
        }
    }

    /// The B-spline rows fit the same model as the dense natural-basis rows.
    #[test]
    fn local_rows_fit_what_dense_rows_fit() {
        let mut rng = SplitMix64(7);
        let xs: Vec<f64> = (0..3000).map(|_| 8.0 * rng.uniform() - 4.0).collect();
        let y: Vec<bool> = xs.iter().map(|&x| rng.uniform() < sigmoid(0.7 * x + 0.3)).collect();
        let knots = [-4.5, -2.0, -1.1, -0.2, 0.0, 0.4, 1.3, 2.9, 3.9];
        let local = Rows::new(&knots, xs.iter().copied());
        assert!(matches!(local, Rows::Local(_)));
        let mut dense = vec![0.0; knots.len()];
        let dense = Rows::Dense(
            xs.iter()
                .flat_map(|&x| {
                    natural_spline_basis(x, &knots, &mut dense);
                    dense.clone()
                })
                .collect(),
        );
        let fit = |rows: &Rows| {
            let k = knots.len();
            let empty = match rows {
                Rows::Dense(_) => Rows::Dense(Vec::new()),
                Rows::Local(l) => Rows::Local(l.empty_like()),
            };
            let mut design = Design { k, rows: empty, t: Vec::new(), v: Vec::new(), m: 0.0 };
            y.iter().enumerate().for_each(|(i, &o)| design.push_row_of(rows, i, o, 1.0));
            design.fit(0.3, vec![0.0; k])
        };
        let (a, b) = (fit(&local), fit(&dense));
        assert!(a.converged && b.converged);
        for (u, v) in a.weights.iter().zip(&b.weights) {
            assert!((u - v).abs() <= 1e-8 * (1.0 + v.abs()), "{u} vs {v}");
        }
    }
}
