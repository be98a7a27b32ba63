//! The calibration and refinement parts of a proper loss (Berta, Holzmüller, Jordan & Bach
//! 2025, "Rethinking early stopping: refine, then calibrate"): what a post-hoc
//! temperature-and-mixture fit removes from the loss, and what remains.
//!
//! ```text
//! x_i = log-probabilities of row i (logits: log-softmax; probabilities: ln max(p, 1e-30);
//!       binary scores s: ln max(1 - s, 1e-30), ln max(s, 1e-30))
//! g(x) = (1 - e) softmax(x / T) + e / K,  T the NLL minimiser on the fitting rows,
//!        e = 1 / (W + 1), W their total weight (their count without weights)
//! refinement_L  = L(g o f)
//! calibration_L = L(f) - L(g o f)
//! L = the mean NLL (probabilities floored at 1e-30) or the mean Brier score
//! ```
//!
//! In-sample, `g` is fitted on the evaluated rows. With `folds = F` it is cross-fitted: row `i`
//! is in fold `i mod F`, and each fold's rows are mapped by the `g` fitted on the other folds;
//! the cross-fitted calibration part can then be negative. Per-row weights (bootstrap
//! multiplicities among them) weight every mean and the temperature fit. Host, f64.

use crate::error::{CalibError, Result};
use crate::input::{Predictions, ScoreKind};
use crate::stats::newton_in_bracket;

/// The floor of a probability before its logarithm.
const FLOOR: f64 = 1e-30;

/// A proper loss whose calibration part is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProperLoss {
    /// Mean negative log-likelihood.
    Nll,
    /// Mean Brier score.
    Brier,
}

/// Which part of the loss a metric reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossPart {
    /// `L(f) - L(g o f)`.
    Calibration,
    /// `L(g o f)`.
    Refinement,
}

/// Log-probabilities `[n, K]` (row-major) with labels.
#[derive(Debug, Clone)]
pub struct LogProbabilities {
    values: Vec<f64>,
    labels: Vec<usize>,
    k: usize,
}

impl LogProbabilities {
    /// The rows of `preds` as log-probabilities.
    ///
    /// # Errors
    /// [`CalibError::Backend`] when the rows cannot be read back.
    pub fn of(preds: &Predictions) -> Result<Self> {
        let (values, labels) = preds.host_rows()?;
        let values: Vec<f64> = values.into_f64();
        let labels = labels.iter().map(|&l| l as usize).collect();
        let k = preds.n_classes();
        let values = match preds.kind() {
            ScoreKind::Logits => values.chunks_exact(k).flat_map(log_softmax).collect(),
            ScoreKind::Probabilities => values.iter().map(|p| p.max(FLOOR).ln()).collect(),
            ScoreKind::Binary => {
                values.iter().flat_map(|s| [(1.0 - s).max(FLOOR).ln(), s.max(FLOOR).ln()]).collect()
            }
        };
        Ok(Self { values, labels, k })
    }

    fn n(&self) -> usize {
        self.labels.len()
    }

    fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.k..(i + 1) * self.k]
    }
}

fn log_softmax(row: &[f64]) -> Vec<f64> {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
    row.iter().map(|v| v - lse).collect()
}

/// The losses before and after the refit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefinementSplit {
    /// `(L(f), L(g o f))` for the NLL.
    pub nll: (f64, f64),
    /// `(L(f), L(g o f))` for the Brier score.
    pub brier: (f64, f64),
}

impl RefinementSplit {
    /// The split of `rows`, with optional per-row `weights` (non-negative, some positive) and
    /// `folds` for cross-fitting (`None`: in-sample).
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for fewer than 2 folds or more folds than rows.
    pub fn of(
        rows: &LogProbabilities,
        weights: Option<&[f64]>,
        folds: Option<usize>,
    ) -> Result<Self> {
        let n = rows.n();
        let weight = |i: usize| weights.map_or(1.0, |w| w[i]);
        let mut sums = [0.0; 4];
        let mut total = 0.0;
        let mut p = vec![0.0; rows.k];
        let mut add = |i: usize, fit: &Refit| {
            let w = weight(i);
            if w == 0.0 {
                return;
            }
            let (nll, brier) = losses(rows.row(i), rows.labels[i], None, &mut p);
            let (nll_g, brier_g) = losses(rows.row(i), rows.labels[i], Some(fit), &mut p);
            for (s, v) in sums.iter_mut().zip([nll, nll_g, brier, brier_g]) {
                *s += w * v;
            }
            total += w;
        };
        match folds {
            None => {
                let fit = Refit::on(rows, weight);
                (0..n).for_each(|i| add(i, &fit));
            }
            Some(f) if f < 2 || f > n => {
                return Err(CalibError::InvalidConfig(format!(
                    "{f} folds for {n} rows: cross-fitting needs 2 to N"
                )));
            }
            Some(f) => {
                for fold in 0..f {
                    let fit = Refit::on(rows, |i| if i % f == fold { 0.0 } else { weight(i) });
                    (fold..n).step_by(f).for_each(|i| add(i, &fit));
                }
            }
        }
        let mean = |s: f64| s / total;
        Ok(Self { nll: (mean(sums[0]), mean(sums[1])), brier: (mean(sums[2]), mean(sums[3])) })
    }

    /// The value of `part` of `loss`.
    pub fn value(&self, loss: ProperLoss, part: LossPart) -> f64 {
        let (before, after) = match loss {
            ProperLoss::Nll => self.nll,
            ProperLoss::Brier => self.brier,
        };
        match part {
            LossPart::Calibration => before - after,
            LossPart::Refinement => after,
        }
    }
}

/// A fitted temperature (as its inverse `u`) and mixture weight.
#[derive(Debug, Clone, Copy)]
struct Refit {
    u: f64,
    e: f64,
    k: usize,
}

impl Refit {
    /// Fits `u` by the weighted NLL of `softmax(u x)` on the rows of positive weight.
    fn on(rows: &LogProbabilities, weight: impl Fn(usize) -> f64) -> Self {
        let total: f64 = (0..rows.n()).map(&weight).sum();
        let u = fit_inverse_temperature(rows, &weight);
        Self { u, e: 1.0 / (total + 1.0), k: rows.k }
    }

    /// `g(x)` of one row into `out`.
    fn apply(&self, x: &[f64], out: &mut [f64]) {
        let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        out.iter_mut().zip(x).for_each(|(o, v)| *o = (self.u * (v - max)).exp());
        let total: f64 = out.iter().sum();
        let uniform = self.e / self.k as f64;
        out.iter_mut().for_each(|o| *o = (1.0 - self.e) * *o / total + uniform);
    }
}

/// `(NLL, Brier)` of one row, through `fit` when given; `p` (K) holds its probabilities.
fn losses(x: &[f64], y: usize, fit: Option<&Refit>, p: &mut [f64]) -> (f64, f64) {
    match fit {
        Some(fit) => fit.apply(x, p),
        None => p.iter_mut().zip(x).for_each(|(p, v)| *p = v.exp()),
    }
    let nll = -p[y].max(FLOOR).ln();
    let brier = p.iter().enumerate().map(|(k, &q)| (q - f64::from(u8::from(k == y))).powi(2)).sum();
    (nll, brier)
}

/// The weighted-NLL minimiser `u > 0` of `softmax(u x)`: Newton on `u` with the derivative
/// `mean(E_p[x] - x_y)` and curvature `mean(Var_p[x])`, bracketed ([`newton_in_bracket`]; the
/// NLL is convex in `u`); `u` at the bracket's end, `[e^-16, e^16]`, when the rows are
/// separable.
fn fit_inverse_temperature(rows: &LogProbabilities, weight: &impl Fn(usize) -> f64) -> f64 {
    let slope_curve = |u: f64| -> (f64, f64) {
        let (mut g, mut h, mut w_total) = (0.0, 0.0, 0.0);
        let mut p = vec![0.0; rows.k];
        for i in 0..rows.n() {
            let w = weight(i);
            if w == 0.0 {
                continue;
            }
            let x = rows.row(i);
            let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            p.iter_mut().zip(x).for_each(|(p, v)| *p = (u * (v - max)).exp());
            let total: f64 = p.iter().sum();
            let mean: f64 = p.iter().zip(x).map(|(p, v)| p * (v - max)).sum::<f64>() / total;
            let var: f64 =
                p.iter().zip(x).map(|(p, v)| p * (v - max - mean).powi(2)).sum::<f64>() / total;
            g += w * (mean - (x[rows.labels[i]] - max));
            h += w * var;
            w_total += w;
        }
        (g / w_total, h / w_total)
    };
    let (lo, hi) = ((-16f64).exp(), 16f64.exp());
    if slope_curve(hi).0 <= 0.0 {
        return hi;
    }
    if slope_curve(lo).0 >= 0.0 {
        return lo;
    }
    newton_in_bracket(slope_curve, (lo, hi), 1.0, 1e-14, 100).0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: Vec<f64>, labels: Vec<usize>, k: usize) -> LogProbabilities {
        let values = values.chunks_exact(k).flat_map(log_softmax).collect();
        LogProbabilities { values, labels, k }
    }

    /// The inverse temperature zeroes the NLL's derivative, computed by differences.
    #[test]
    fn fits_the_nll_temperature() {
        let mut rng = crate::synthetic::SplitMix64(3);
        let (n, k) = (400, 4);
        let labels: Vec<usize> = (0..n).map(|_| rng.below(k)).collect();
        let values: Vec<f64> = (0..n * k)
            .map(|j| 3.0 * rng.normal() + if j % k == labels[j / k] { 2.5 } else { 0.0 })
            .collect();
        let r = rows(values, labels, k);
        let u = fit_inverse_temperature(&r, &|_| 1.0);
        let nll = |u: f64| {
            let fit = Refit { u, e: 0.0, k };
            let mut p = vec![0.0; k];
            (0..n).map(|i| losses(r.row(i), r.labels[i], Some(&fit), &mut p).0).sum::<f64>()
                / n as f64
        };
        let d = (nll(u + 1e-5) - nll(u - 1e-5)) / 2e-5;
        assert!(d.abs() < 1e-7, "{u}: {d}");
    }

    /// Integer weights equal repeated rows; calibration + refinement = the loss.
    #[test]
    fn weights_repeat_rows_and_parts_add_up() {
        let values = vec![2.0, 0.0, 0.1, 0.0, 1.5, 0.2, 0.3, 0.2, 2.2, 1.0, 0.5, 0.0];
        let labels = vec![0, 1, 1, 0];
        let weighted = RefinementSplit::of(
            &rows(values.clone(), labels.clone(), 3),
            Some(&[1.0, 2.0, 1.0, 3.0]),
            None,
        )
        .unwrap();
        let repeat = [0, 1, 1, 2, 3, 3, 3];
        let v: Vec<f64> = repeat.iter().flat_map(|&i| values[i * 3..i * 3 + 3].to_vec()).collect();
        let l: Vec<usize> = repeat.iter().map(|&i| labels[i]).collect();
        let repeated = RefinementSplit::of(&rows(v, l, 3), None, None).unwrap();
        for (a, b) in [(weighted.nll, repeated.nll), (weighted.brier, repeated.brier)] {
            assert!((a.0 - b.0).abs() < 1e-12 && (a.1 - b.1).abs() < 1e-9, "{a:?} {b:?}");
        }
        let s = weighted;
        let sum = s.value(ProperLoss::Nll, LossPart::Calibration)
            + s.value(ProperLoss::Nll, LossPart::Refinement);
        assert!((sum - s.nll.0).abs() < 1e-15);
    }
}
