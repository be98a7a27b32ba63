//! How the reliability curve's bandwidth is chosen when none is given: Silverman's rule on the
//! scores, or the bandwidth whose leave-one-out curve predicts the outcomes best.
//!
//! ```text
//! silverman:      h = 0.9 min(sd, IQR / 1.34) N^(-1/5)                  (sd alone when IQR = 0)
//! leave-one-out:  h = argmin_h (1/m) sum_{i in I} -[y_i ln r_i + (1 - y_i) ln(1 - r_i)],
//!                 r_i = RC_{-i}(s_i) clamped to [1e-12, 1 - 1e-12]   (the score where no other
//!                 pair is in reach), I = m <= 2048 pairs evenly spread over the sorted scores,
//!                 h over 25 points log-even on [1e-3 sd, 10^0.5 sd] of the positions, then a
//!                 golden-section search on ln h between the best point's neighbours
//! ```
//!
//! Leave-one-out likelihood cross-validation of a Nadaraya-Watson regression (Härdle, Hall &
//! Marron 1988) picks the smoothing that generalises to unseen pairs. Silverman's rule is a
//! density rule: on scores piled up at 0 and 1 its IQR is tiny, and the curve becomes a near
//! nearest-neighbour map of 0/1 outcomes (docs/conventions.md, "Reliability curve / LCE").

use serde::{Deserialize, Serialize};

use super::smoother::{Kernel, KernelSmoother, Prior, Scale};
use crate::bootstrap::quantile;

/// The rule that picks the bandwidth when none is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum BandwidthRule {
    /// Silverman's rule of thumb on the positions ([`silverman_bandwidth`]).
    Silverman,
    /// The leave-one-out log-likelihood's minimiser ([`leave_one_out_bandwidth`]).
    LeaveOneOut,
}

impl BandwidthRule {
    /// The bandwidth of pairs at sorted `positions` on `scale` (the curve's `prior` added),
    /// or `None` when the rule has none (constant positions).
    pub fn bandwidth(
        self,
        positions: &[f64],
        outcomes: &[f64],
        kernel: Kernel,
        scale: Scale,
        prior: Option<Prior>,
    ) -> Option<f64> {
        match self {
            Self::Silverman => Some(silverman_bandwidth(positions)).filter(|&h| h > 0.0),
            Self::LeaveOneOut => leave_one_out_bandwidth(positions, outcomes, kernel, scale, prior),
        }
    }

    /// Parses `silverman` or `loo` (`leave-one-out`).
    ///
    /// # Errors
    /// [`crate::CalibError::InvalidConfig`] for other names.
    pub fn from_name(name: &str) -> crate::Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "silverman" => Ok(Self::Silverman),
            "loo" | "leave-one-out" => Ok(Self::LeaveOneOut),
            other => Err(crate::CalibError::InvalidConfig(format!(
                "unknown bandwidth rule `{other}`; known: silverman, loo"
            ))),
        }
    }
}

/// Silverman's rule on `scores`: `0.9 min(sd, IQR / 1.34) N^(-1/5)`, sd alone when the IQR
/// is 0 (sample sd; IQR by linear-interpolation percentiles, numpy's default). 0 when the
/// scores are constant.
///
/// ```
/// let h = calib_core::curve::silverman_bandwidth(&[0.1, 0.2, 0.3, 0.4, 0.5]);
/// assert!((h - 0.9 * (0.2f64 / 1.34) * 5f64.powf(-0.2)).abs() < 1e-12);
/// ```
pub fn silverman_bandwidth(scores: &[f64]) -> f64 {
    let n = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let sd = sample_sd(scores, mean);
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.first() == sorted.last() {
        return 0.0;
    }
    let iqr = quantile(&sorted, 0.75) - quantile(&sorted, 0.25);
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    0.9 * spread * n.powf(-0.2)
}

fn sample_sd(values: &[f64], mean: f64) -> f64 {
    let n = values.len() as f64;
    (values.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt()
}

/// Points of the coarse grid, and its span in decades below and above the positions' sd.
const GRID: usize = 25;
const DECADES: (f64, f64) = (-3.0, 0.5);
/// Most pairs whose leave-one-out prediction is scored.
const SCORED: usize = 2048;
/// Golden-section steps after the grid (each shrinks the bracket by 0.618).
const REFINE: usize = 12;

/// The bandwidth minimising the leave-one-out log loss of the curve (with `prior`, if any)
/// over pairs at sorted `positions` (module doc), or `None` for fewer than 2 pairs or
/// constant positions.
///
/// ```
/// use calib_core::curve::{Kernel, Scale, leave_one_out_bandwidth};
/// let x: Vec<f64> = (0..400).map(|i| i as f64 / 40.0 - 5.0).collect();
/// let y: Vec<f64> = x.iter().map(|&v| f64::from(u8::from((v * 7.3).sin() < v / 5.0))).collect();
/// let h = leave_one_out_bandwidth(&x, &y, Kernel::Gaussian, Scale::Logit, None).unwrap();
/// assert!(h > 0.0 && h < 3.0 * 2.9);
/// ```
pub fn leave_one_out_bandwidth(
    positions: &[f64],
    outcomes: &[f64],
    kernel: Kernel,
    scale: Scale,
    prior: Option<Prior>,
) -> Option<f64> {
    pooled_leave_one_out_bandwidth(&[(positions, outcomes, prior)], kernel, scale)
}

/// One bandwidth for several curves (the K problems of one-vs-rest calibration): the
/// minimiser of the sum of their leave-one-out log losses (each the mean over its scored
/// pairs), the grid spanning the pooled positions' sd. `None` when no problem has 2 pairs
/// and some spread.
pub fn pooled_leave_one_out_bandwidth(
    problems: &[(&[f64], &[f64], Option<Prior>)],
    kernel: Kernel,
    scale: Scale,
) -> Option<f64> {
    let all: Vec<f64> = problems.iter().flat_map(|p| p.0.iter().copied()).collect();
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    let sd = sample_sd(&all, mean);
    let usable: Vec<_> =
        problems.iter().filter(|p| p.0.len() >= 2 && p.0.first() != p.0.last()).collect();
    if usable.is_empty() || !(sd > 0.0 && sd.is_finite()) {
        return None;
    }
    let loss = |ln_h: f64| -> f64 {
        usable
            .iter()
            .map(|&&(x, y, prior)| problem_loss(x, y, prior, kernel, scale, ln_h.exp()))
            .sum()
    };
    let step = (DECADES.1 - DECADES.0) / (GRID - 1) as f64 * std::f64::consts::LN_10;
    let grid: Vec<f64> = (0..GRID)
        .map(|j| sd.ln() + DECADES.0 * std::f64::consts::LN_10 + j as f64 * step)
        .collect();
    let losses: Vec<f64> = grid.iter().map(|&g| loss(g)).collect();
    // The best point; among equal losses the widest (the smoother curve).
    let best = (0..GRID).fold(0, |b, j| if losses[j] <= losses[b] { j } else { b });
    let (lo, hi) = (grid[best.saturating_sub(1)], grid[(best + 1).min(GRID - 1)]);
    Some(golden_section(loss, lo, hi, (grid[best], losses[best])).exp())
}

/// The mean leave-one-out log loss of one curve at bandwidth `h` over its scored pairs.
fn problem_loss(
    positions: &[f64],
    outcomes: &[f64],
    prior: Option<Prior>,
    kernel: Kernel,
    scale: Scale,
    h: f64,
) -> f64 {
    let n = positions.len();
    let m = n.min(SCORED);
    let mut smoother =
        KernelSmoother::on_scale(positions.to_vec(), outcomes.to_vec(), h, kernel, scale);
    if let Some(prior) = prior {
        smoother = smoother.with_prior(prior);
    }
    let total: f64 = (0..m)
        .map(|k| {
            let i = (2 * k + 1) * n / (2 * m);
            let r = smoother.leave_one_out(i).unwrap_or_else(|| scale.score(positions[i]));
            let r = r.clamp(1e-12, 1.0 - 1e-12);
            -(outcomes[i] * r.ln() + (1.0 - outcomes[i]) * (1.0 - r).ln())
        })
        .sum();
    total / m as f64
}

/// The minimiser of `f` on `[a, b]` by golden-section search, or `start` when that is lower.
fn golden_section(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64, start: (f64, f64)) -> f64 {
    const INV_PHI: f64 = 0.618_033_988_749_894_9;
    let (mut c, mut d) = (b - INV_PHI * (b - a), a + INV_PHI * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..REFINE {
        if fc <= fd {
            (b, d, fd) = (d, c, fc);
            c = b - INV_PHI * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + INV_PHI * (b - a);
            fd = f(d);
        }
    }
    let (x, fx) = if fc <= fd { (c, fc) } else { (d, fd) };
    if fx < start.1 { x } else { start.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scores piled up at 0 and 1 (a confident model's class column): Silverman's bandwidth
    /// is tiny, the leave-one-out one is not, and its curve predicts held-out outcomes better.
    #[test]
    fn leave_one_out_beats_silverman_on_piled_up_scores() {
        let mut rng = crate::synthetic::SplitMix64(11);
        let draw = |rng: &mut crate::synthetic::SplitMix64| {
            let z = 8.0 * (rng.uniform() - 0.5) + if rng.uniform() < 0.2 { 9.0 } else { -7.0 };
            let s = 1.0 / (1.0 + (-z).exp());
            // Overconfident: the true log-odds are half the stated ones.
            let y = f64::from(u8::from(rng.uniform() < 1.0 / (1.0 + (-z / 2.0).exp())));
            (s, y)
        };
        let mut fit: Vec<(f64, f64)> = (0..3000).map(|_| draw(&mut rng)).collect();
        fit.sort_by(|a, b| a.0.total_cmp(&b.0));
        let test: Vec<(f64, f64)> = (0..3000).map(|_| draw(&mut rng)).collect();
        let (s, y): (Vec<f64>, Vec<f64>) = fit.into_iter().unzip();
        let log_loss = |smoother: &KernelSmoother| {
            test.iter()
                .map(|&(t, o)| {
                    let r = smoother.at(t).clamp(1e-12, 1.0 - 1e-12);
                    -(o * r.ln() + (1.0 - o) * (1.0 - r).ln())
                })
                .sum::<f64>()
                / test.len() as f64
        };
        let silverman = silverman_bandwidth(&s);
        let plain = KernelSmoother::from_sorted(s.clone(), y.clone(), silverman, Kernel::Gaussian);
        let x: Vec<f64> = s.iter().map(|&v| Scale::Logit.position(v)).collect();
        let h = leave_one_out_bandwidth(&x, &y, Kernel::Gaussian, Scale::Logit, None).unwrap();
        let loo = KernelSmoother::on_scale(x, y, h, Kernel::Gaussian, Scale::Logit);
        let (a, b) = (log_loss(&loo), log_loss(&plain));
        assert!(a < b, "leave-one-out {a} vs silverman {b}");
        let direct: f64 =
            test.iter().map(|&(t, o)| -(o * t.ln() + (1.0 - o) * (1.0 - t).ln())).sum::<f64>();
        assert!(a < direct / test.len() as f64);
    }

    #[test]
    fn leave_one_out_needs_spread() {
        let (g, l) = (Kernel::Gaussian, Scale::Logit);
        assert_eq!(leave_one_out_bandwidth(&[0.3; 5], &[1.0; 5], g, l, None), None);
        assert_eq!(leave_one_out_bandwidth(&[0.3], &[1.0], g, l, None), None);
    }
}
