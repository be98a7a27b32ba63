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
use crate::binning::weighted_range_start;
use crate::bootstrap::quantile;
use crate::input::SampleWeights;

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
        weights: Option<&[f64]>,
        kernel: Kernel,
        scale: Scale,
        prior: Option<Prior>,
    ) -> Option<f64> {
        match self {
            Self::Silverman => {
                Some(weighted_silverman_bandwidth(positions, weights)).filter(|&h| h > 0.0)
            }
            Self::LeaveOneOut => {
                let problem = LooProblem { positions, outcomes, weights, prior };
                pooled_leave_one_out_bandwidth(&[problem], kernel, scale)
            }
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

/// [`silverman_bandwidth`] of scores with sample weights (`None`: each 1): N = W, the
/// weighted mean and standard deviation (divisor `W - 1`), and the quartiles of the repeated
/// scores (numpy's linear interpolation at `q (W - 1)` along the running weights), so
/// whole-number weights give the repeated scores' bandwidth.
pub fn weighted_silverman_bandwidth(scores: &[f64], weights: Option<&[f64]>) -> f64 {
    let Some(weights) = weights else { return silverman_bandwidth(scores) };
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let sorted: Vec<f64> = order.iter().map(|&i| scores[i]).collect();
    if sorted.first() == sorted.last() {
        return 0.0;
    }
    let w: Vec<f64> = order.iter().map(|&i| weights[i]).collect();
    let total: f64 = w.iter().sum();
    let sd = weighted_sd(|| sorted.iter().copied().zip(w.iter().copied()));
    let running = Running::new(&w);
    let quantile = |q: f64| {
        let position = q * (total - 1.0);
        let below = position.floor();
        let (a, b) = (sorted[running.row(below)], sorted[running.row(below + 1.0)]);
        a + (position - below) * (b - a)
    };
    let iqr = quantile(0.75) - quantile(0.25);
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    0.9 * spread * total.powf(-0.2)
}

/// Running sums of weights: which row holds a position of the repeated rows.
struct Running(Vec<f64>);

impl Running {
    fn new(weights: &[f64]) -> Self {
        let mut sum = 0.0;
        Self(
            weights
                .iter()
                .map(|w| {
                    sum += w;
                    sum
                })
                .collect(),
        )
    }

    /// The row holding position `p` (0-based; row `i` holds `[C_{i-1}, C_i)`), the last
    /// for positions past the end.
    fn row(&self, p: f64) -> usize {
        self.0.partition_point(|&c| c <= p).min(self.0.len() - 1)
    }
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
    let problem = LooProblem { positions, outcomes, weights: None, prior };
    pooled_leave_one_out_bandwidth(&[problem], kernel, scale)
}

/// One problem of [`pooled_leave_one_out_bandwidth`]: sorted positions, their outcomes and
/// sample weights (`None`: each 1), and the prior of its curve.
#[derive(Debug, Clone, Copy)]
pub struct LooProblem<'a> {
    /// Positions on the smoother's scale, ascending.
    pub positions: &'a [f64],
    /// The outcomes, in the positions' order.
    pub outcomes: &'a [f64],
    /// Sample weights, in the positions' order.
    pub weights: Option<&'a [f64]>,
    /// The curve's prior pseudo-pair.
    pub prior: Option<Prior>,
}

/// One bandwidth for several curves (the K problems of one-vs-rest calibration): the
/// minimiser of the sum of their leave-one-out log losses (each the mean over its scored
/// pairs), the grid spanning the pooled positions' sd. `None` when no problem has 2 pairs
/// and some spread.
pub fn pooled_leave_one_out_bandwidth(
    problems: &[LooProblem<'_>],
    kernel: Kernel,
    scale: Scale,
) -> Option<f64> {
    let sd = pooled_sd(problems);
    let usable: Vec<_> = problems
        .iter()
        .filter(|p| p.positions.len() >= 2 && p.positions.first() != p.positions.last())
        .collect();
    if usable.is_empty() || !(sd > 0.0 && sd.is_finite()) {
        return None;
    }
    let loss = |ln_h: f64| -> f64 {
        usable.iter().map(|p| problem_loss(p, kernel, scale, ln_h.exp())).sum()
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
/// The sample standard deviation of every problem's positions (weighted: divisor `W - 1`).
fn pooled_sd(problems: &[LooProblem<'_>]) -> f64 {
    if problems.iter().all(|p| p.weights.is_none()) {
        let all: Vec<f64> = problems.iter().flat_map(|p| p.positions.iter().copied()).collect();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        return sample_sd(&all, mean);
    }
    weighted_sd(|| {
        problems.iter().flat_map(|p| {
            let w = move |i: usize| p.weights.map_or(1.0, |w| w[i]);
            p.positions.iter().enumerate().map(move |(i, &x)| (x, w(i)))
        })
    })
}

/// The weighted sample standard deviation of `(value, weight)` points (divisor `W - 1`, the
/// repeated values' for whole-number weights); `points` gives them afresh for each sum.
fn weighted_sd<I: Iterator<Item = (f64, f64)>>(points: impl Fn() -> I) -> f64 {
    let total: f64 = points().map(|(_, w)| w).sum();
    let mean = points().map(|(x, w)| w * x).sum::<f64>() / total;
    let ss: f64 = points().map(|(x, w)| w * (x - mean).powi(2)).sum();
    (ss / (total - 1.0).max(1.0)).sqrt()
}

/// The mean leave-one-out log loss of one problem at bandwidth `h`, over `m = min(N, 2048)`
/// pairs evenly spread over the sorted (repeated) pairs: positions `(2k + 1) N / (2m)`,
/// integer for whole-number weights (each row then as many times as its copies are picked).
fn problem_loss(problem: &LooProblem<'_>, kernel: Kernel, scale: Scale, h: f64) -> f64 {
    let LooProblem { positions, outcomes, weights, prior } = *problem;
    let n = positions.len();
    let (x, y, w) = (positions.to_vec(), outcomes.to_vec(), weights.map(<[f64]>::to_vec));
    let mut smoother = KernelSmoother::weighted_on_scale(x, y, w, h, kernel, scale);
    if let Some(prior) = prior {
        smoother = smoother.with_prior(prior);
    }
    let (count, pick): (usize, Box<dyn Fn(usize, usize) -> usize>) = match weights {
        None => (n, Box::new(move |k, m| (2 * k + 1) * n / (2 * m))),
        Some(w) => {
            let running = Running::new(w);
            let total: f64 = w.iter().sum();
            let whole = SampleWeights::whole_numbers(w);
            let count = total.floor().max(1.0) as usize;
            // The midpoint of the k-th of `m` equal shares of the running weight.
            let at = move |k: usize, m: usize| {
                running.row(weighted_range_start(2 * k + 1, total, 2 * m, whole))
            };
            (count, Box::new(at))
        }
    };
    let m = count.min(SCORED);
    let total: f64 = (0..m)
        .map(|k| {
            let i = pick(k, m);
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

    /// Whole-number weights: the repeated scores' Silverman bandwidth; a constant weight: the
    /// unweighted leave-one-out bandwidth (rows left out with all their weight).
    #[test]
    fn whole_weights_choose_the_repeated_bandwidths() {
        let mut rng = crate::synthetic::SplitMix64(5);
        let mut x: Vec<f64> = (0..300).map(|_| 6.0 * rng.uniform() - 3.0).collect();
        x.sort_by(f64::total_cmp);
        let y: Vec<f64> = x
            .iter()
            .map(|&v| f64::from(u8::from(rng.uniform() < 1.0 / (1.0 + (-v).exp()))))
            .collect();
        let w: Vec<f64> = (0..300).map(|i| (i % 4) as f64 + 1.0).collect();
        let (mut rx, mut ry) = (Vec::new(), Vec::new());
        for i in 0..300 {
            rx.extend(std::iter::repeat_n(x[i], w[i] as usize));
            ry.extend(std::iter::repeat_n(y[i], w[i] as usize));
        }
        let (a, b) = (weighted_silverman_bandwidth(&x, Some(&w)), silverman_bandwidth(&rx));
        assert!((a - b).abs() <= 1e-12 * b, "{a} vs {b}");
        let (g, l) = (Kernel::Gaussian, Scale::Logit);
        let threes = vec![3.0; 300];
        let weighted =
            LooProblem { positions: &x, outcomes: &y, weights: Some(&threes), prior: None };
        let a = pooled_leave_one_out_bandwidth(&[weighted], g, l).unwrap();
        let b = leave_one_out_bandwidth(&x, &y, g, l, None).unwrap();
        // The search's grid follows the weighted sd (divisor W - 1, not N - 1): 0.1 % apart.
        assert!((a - b).abs() <= 1e-2 * b, "{a} vs {b}");
        let (x1, y1) = (&rx[..], &ry[..]);
        let repeated = leave_one_out_bandwidth(x1, y1, g, l, None).unwrap();
        assert!(repeated < 0.5 * b, "repeated rows: their copies choose {repeated} (vs {b})");
    }

    #[test]
    fn leave_one_out_needs_spread() {
        let (g, l) = (Kernel::Gaussian, Scale::Logit);
        assert_eq!(leave_one_out_bandwidth(&[0.3; 5], &[1.0; 5], g, l, None), None);
        assert_eq!(leave_one_out_bandwidth(&[0.3], &[1.0], g, l, None), None);
    }
}
