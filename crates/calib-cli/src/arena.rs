//! [`Arena`]: a calibration benchmark over many experiments, as CalArena (Berta, Holzmüller,
//! Bach & Jordan 2026) scores one: every method fitted and measured on every experiment, each
//! method's mean win rate with a bootstrap interval over experiments, and its mean improvement
//! over the uncalibrated model.
//!
//! ```text
//! win_e(m)   = #{m' != m run on e: value_e(m') strictly worse than value_e(m)} / (M_e - 1)
//!              (on the first metric; a method that failed on e is worse than every other)
//! win_rate(m) = mean_e win_e(m) over the experiments m ran on
//! interval    = percentiles of win_rate over B resamples of the experiments (seeded)
//! improvement = mean_e (value_e(uncalibrated) - value_e(m))   (accuracy: m minus uncalibrated)
//! ```
//! The uncalibrated model takes part as a method of its own. An experiment that cannot be read
//! or whose uncalibrated scores cannot be measured is a row with its error; a method that cannot
//! be fitted is an entry with its error, never the end of the run.

use calib_core::input::Predictions;
use calib_core::synthetic::SplitMix64;
use calib_core::{EvaluationConfig, Metric};
use calib_train::{Method, Reduction};

use crate::comparison::fit_and_apply;
use crate::error::CliError;
use crate::top_label;

/// The name of the uncalibrated model among the methods.
pub const UNCALIBRATED: &str = "uncalibrated";

/// One method's values on one experiment.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `uncalibrated` or the method's name.
    pub method: String,
    /// The metrics in the arena's order (`None` when the method failed).
    pub values: Option<Vec<f64>>,
    /// Why the method failed.
    pub error: Option<String>,
    /// Its fit time in seconds.
    pub fit_seconds: Option<f64>,
}

/// One experiment: a val/test dump.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Its name (the file).
    pub name: String,
    /// `(N, K)` of its test split, when read.
    pub shape: Option<(usize, usize)>,
    /// Each method's values (empty when the experiment failed).
    pub entries: Vec<Entry>,
    /// Why the experiment could not be run.
    pub error: Option<String>,
}

impl Experiment {
    /// Fits `methods` on `fit`, measures them on `test` with `eval` (the arena's metrics): the
    /// values alone, without `calib compare`'s diagnostics (noise ECE, the fit split's ECE).
    pub fn run(
        name: &str,
        fit: &Predictions,
        test: &Predictions,
        methods: &[Method],
        eval: &EvaluationConfig,
        reduction: Reduction,
    ) -> Self {
        let values = |r: &calib_core::Report| -> Vec<f64> {
            eval.metrics.iter().map(|&m| r.get(m).unwrap_or(f64::NAN)).collect()
        };
        let uncalibrated = match eval.evaluate(test) {
            Ok(report) => report,
            Err(e) => return Self::failed(name, CliError::core("evaluation", e).to_string()),
        };
        let mut entries = vec![Entry {
            method: UNCALIBRATED.into(),
            values: Some(values(&uncalibrated)),
            error: None,
            fit_seconds: None,
        }];
        for &method in methods {
            let outcome = fit_and_apply(fit, test, method, reduction).and_then(|f| {
                let top = f.top_label.as_ref();
                let report =
                    top_label::evaluate(eval, &f.calibrated, top, test.device(), method.name())?;
                Ok((values(&report), f.seconds))
            });
            entries.push(match outcome {
                Ok((v, seconds)) => Entry {
                    method: method.name().into(),
                    values: Some(v),
                    error: None,
                    fit_seconds: Some(seconds),
                },
                Err(e) => Entry {
                    method: method.name().into(),
                    values: None,
                    error: Some(e.to_string()),
                    fit_seconds: None,
                },
            });
        }
        Self {
            name: name.into(),
            shape: Some((test.n_samples(), test.n_classes())),
            entries,
            error: None,
        }
    }

    /// An experiment that could not be run.
    pub fn failed(name: &str, error: String) -> Self {
        Self { name: name.into(), shape: None, entries: Vec::new(), error: Some(error) }
    }

    /// The entry of `method`.
    pub fn entry(&self, method: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.method == method)
    }

    /// `win_e(m)` on metric `metric` (index) for every entry, in entry order.
    fn win_fractions(&self, metric: usize, higher_is_better: bool) -> Vec<f64> {
        // Failed (or NaN) values are worse than every finite one.
        let score = |e: &Entry| {
            let v = e.values.as_ref().map_or(f64::NAN, |v| v[metric]);
            match (v.is_nan(), higher_is_better) {
                (true, _) => f64::INFINITY,
                (false, true) => -v,
                (false, false) => v,
            }
        };
        let scores: Vec<f64> = self.entries.iter().map(score).collect();
        let others = (scores.len().max(2) - 1) as f64;
        scores.iter().map(|&s| scores.iter().filter(|&&o| o > s).count() as f64 / others).collect()
    }
}

/// A method's summary over the experiments.
#[derive(Debug, Clone)]
pub struct Standing {
    /// The method.
    pub method: String,
    /// Mean win rate on the first metric.
    pub win_rate: f64,
    /// Its bootstrap interval over experiments.
    pub interval: (f64, f64),
    /// Mean improvement over the uncalibrated model, per metric.
    pub improvement: Vec<f64>,
    /// Experiments it ran on (failures included) and failed on.
    pub runs: usize,
    /// Experiments where it failed.
    pub failures: usize,
}

/// The arena's results.
#[derive(Debug, Clone)]
pub struct Arena {
    /// The metrics, the first ranking the methods.
    pub metrics: Vec<Metric>,
    /// Every experiment, in the order given.
    pub experiments: Vec<Experiment>,
}

/// Whether larger values of `metric` are better.
pub fn higher_is_better(metric: Metric) -> bool {
    matches!(
        metric,
        Metric::Accuracy | Metric::KsPvalue | Metric::KuiperPvalue | Metric::SpiegelhalterPvalue
    )
}

impl Arena {
    /// Every method seen, uncalibrated first, then in first-seen order.
    pub fn methods(&self) -> Vec<String> {
        let mut names: Vec<String> = vec![UNCALIBRATED.into()];
        for e in &self.experiments {
            for entry in &e.entries {
                if !names.contains(&entry.method) {
                    names.push(entry.method.clone());
                }
            }
        }
        names
    }

    /// Each method's standing, with `replicates` bootstrap resamples of the experiments at
    /// coverage `level` (seed `seed`), in [`Self::methods`] order.
    pub fn standings(&self, replicates: usize, level: f64, seed: u64) -> Vec<Standing> {
        let first = self.metrics[0];
        let wins: Vec<Vec<f64>> =
            self.experiments.iter().map(|e| e.win_fractions(0, higher_is_better(first))).collect();
        self.methods()
            .into_iter()
            .map(|method| {
                // Per experiment the method ran on: its win fraction.
                let per: Vec<f64> = self
                    .experiments
                    .iter()
                    .zip(&wins)
                    .filter_map(|(e, w)| {
                        e.entries.iter().position(|x| x.method == method).map(|i| w[i])
                    })
                    .collect();
                let failures = self
                    .experiments
                    .iter()
                    .filter(|e| e.entry(&method).is_some_and(|x| x.values.is_none()))
                    .count();
                Standing {
                    win_rate: mean(&per),
                    interval: bootstrap_interval(&per, replicates, level, seed),
                    improvement: self.improvement(&method),
                    runs: per.len(),
                    failures,
                    method,
                }
            })
            .collect()
    }

    /// Mean improvement of `method` over the uncalibrated model per metric, over the
    /// experiments where both have values.
    fn improvement(&self, method: &str) -> Vec<f64> {
        (0..self.metrics.len())
            .map(|j| {
                let sign = if higher_is_better(self.metrics[j]) { -1.0 } else { 1.0 };
                let gains: Vec<f64> = self
                    .experiments
                    .iter()
                    .filter_map(|e| {
                        let base = e.entry(UNCALIBRATED)?.values.as_ref()?[j];
                        let value = e.entry(method)?.values.as_ref()?[j];
                        // + 0.0: no -0 when a method leaves the value as it is.
                        Some(sign * (base - value) + 0.0).filter(|g| g.is_finite())
                    })
                    .collect();
                mean(&gains)
            })
            .collect()
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 }
}

/// The percentile interval of the mean of `v` over `replicates` resamples.
fn bootstrap_interval(v: &[f64], replicates: usize, level: f64, seed: u64) -> (f64, f64) {
    if v.is_empty() || replicates == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = SplitMix64(seed);
    let mut means: Vec<f64> = (0..replicates)
        .map(|_| (0..v.len()).map(|_| v[rng.below(v.len())]).sum::<f64>() / v.len() as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (replicates - 1) as f64).round() as usize).min(replicates - 1)];
    let tail = (1.0 - level) / 2.0;
    (at(tail), at(1.0 - tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(method: &str, v: Option<f64>) -> Entry {
        Entry { method: method.into(), values: v.map(|v| vec![v]), error: None, fit_seconds: None }
    }

    /// Two experiments by hand: win fractions, means, improvements; a failure loses to all.
    #[test]
    fn win_rates_by_hand() {
        let e1 = Experiment {
            name: "a".into(),
            shape: None,
            entries: vec![
                entry(UNCALIBRATED, Some(0.5)),
                entry("t", Some(0.3)),
                entry("m", Some(0.3)),
            ],
            error: None,
        };
        let e2 = Experiment {
            name: "b".into(),
            shape: None,
            entries: vec![entry(UNCALIBRATED, Some(0.4)), entry("t", Some(0.2)), entry("m", None)],
            error: None,
        };
        let arena = Arena { metrics: vec![Metric::Nll], experiments: vec![e1, e2] };
        let s = arena.standings(200, 0.9, 1);
        let by = |m: &str| s.iter().find(|x| x.method == m).unwrap();
        // e1: t and m tie (each beats uncalibrated only): 1/2; uncalibrated 0. e2: t 1, unc 1/2, m 0.
        assert_eq!(by("t").win_rate, 0.75);
        assert_eq!(by("m").win_rate, 0.25);
        assert_eq!(by(UNCALIBRATED).win_rate, 0.25);
        assert!((by("t").improvement[0] - 0.2).abs() < 1e-15);
        assert_eq!((by("m").runs, by("m").failures), (2, 1));
        let (lo, hi) = by("t").interval;
        assert!(lo >= 0.5 && hi <= 1.0 && lo <= hi);
    }
}
