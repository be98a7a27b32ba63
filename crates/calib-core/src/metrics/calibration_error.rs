//! The general calibration error (Nixon et al. 2019, "Measuring Calibration in Deep Learning",
//! GCE): one configuration that every binned metric is a preset of.
//!
//! ```text
//! pairs     (s, o): top-label (max_k p, argmax == y) or every class (p[:,k], y == k),
//!           optionally only s > eps (threshold, strict)
//! groups    g: the whole set, or per class (class-conditional: the column k for all-classes
//!           scores, the predicted class for top-label scores)
//! bins      b: even, custom edges (right-closed) or adaptive equal-mass ranges
//! d_bg      = conf_bg - acc_bg                      (non-empty bins only)
//! w_bg      = n_bg / N_g (mass) or 1 / B (uniform; empty bins count in B)
//! E_g  (L1) = sum_b w_bg |d_bg|
//! E_g² (L2) = sum_b w_bg (d_bg² - [debias] acc_bg (1 - acc_bg) / (n_bg - 1)), n_bg >= 2
//! E_g (max) = max_b |d_bg|
//! total     = sum_g ω_g E_g  (L1, max),  sqrt(max(sum_g ω_g E_g², 0))  (L2)
//! ω_g       = 1 (one group), 1 / K (per class column), N_g / N (per predicted class)
//! ```
//! Binning and tie rules are docs/conventions.md's ("Bins"); the named metrics are in
//! [`crate::metrics::Metric`]. With binning {even, adaptive} × scores {top-label, all} ×
//! class-conditional {yes, no} × threshold {yes, no} × norm {L1, L2} this reaches the 32
//! variants of the paper's appendix.

use burn::config::Config;
use serde::{Deserialize, Serialize};

use crate::binning::Binning;
use crate::error::{CalibError, Result};
use crate::stats::{BinLayout, BinStats};

/// Which (score, outcome) pairs are binned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ScoreSet {
    /// One pair per sample: `(max_k p, argmax == y)`; argmax ties go to the lowest class.
    TopLabel,
    /// K pairs per sample: `(p[i,k], y == k)`.
    AllClasses,
}

/// How bin errors are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Norm {
    /// Weighted mean absolute gap.
    L1,
    /// Root of the weighted mean squared gap.
    L2,
    /// Largest gap over non-empty bins.
    Max,
}

/// How bins are weighted within a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BinWeighting {
    /// `n_b / N_g`: the usual ECE weighting.
    Mass,
    /// `1 / B`: every bin alike, empty ones included (ACE, TACE).
    Uniform,
}

/// A calibration error, configured; see the module docs for the formula.
#[derive(Config, Debug, PartialEq)]
pub struct CalibrationErrorConfig {
    /// Bins.
    #[config(default = "Binning::Even { n_bins: 15 }")]
    pub binning: Binning,
    /// Pairs.
    #[config(default = "ScoreSet::TopLabel")]
    pub scores: ScoreSet,
    /// Per-class groups.
    #[config(default = false)]
    pub class_conditional: bool,
    /// Keep only pairs with score `> eps`; `None`: all.
    pub threshold: Option<f64>,
    /// Norm.
    #[config(default = "Norm::L1")]
    pub norm: Norm,
    /// Subtract the bias of the squared gap (Kumar et al. 2019); L2 only.
    #[config(default = false)]
    pub debias: bool,
    /// Bin weights.
    #[config(default = "BinWeighting::Mass")]
    pub bin_weighting: BinWeighting,
}

impl Default for CalibrationErrorConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The value of one calibration error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CalibrationErrorValue {
    /// The metric.
    pub value: f64,
    /// `E_g` per group (per class for class-conditional configurations), else empty.
    pub per_group: Vec<f64>,
}

impl CalibrationErrorConfig {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        self.binning.validate()?;
        if let Some(eps) = self.threshold
            && !(0.0..1.0).contains(&eps)
        {
            return Err(CalibError::InvalidConfig(format!("threshold {eps} outside [0, 1)")));
        }
        if self.debias && self.norm != Norm::L2 {
            return Err(CalibError::InvalidConfig("debiasing applies to the L2 norm only".into()));
        }
        Ok(())
    }

    /// Reduces statistics computed for this configuration to the metric.
    ///
    /// `stats` holds one group per class (class-conditional) or a single group; static-bin
    /// statistics with several groups are pooled here when the configuration is not
    /// class-conditional.
    pub fn reduce(&self, stats: &BinStats) -> CalibrationErrorValue {
        let pooled;
        let stats = if !self.class_conditional && stats.n_groups > 1 {
            debug_assert!(matches!(stats.layout, BinLayout::Edges(_)));
            pooled = stats.pooled();
            &pooled
        } else {
            stats
        };
        let n_bins = stats.n_bins();
        let n_groups = stats.n_groups;
        let total: f64 = stats.count.iter().sum();
        let mut per_group = Vec::with_capacity(n_groups);
        let mut acc = 0.0;
        for g in 0..n_groups {
            let n_g = stats.group_count(g);
            let mut e = 0.0f64;
            for b in 0..n_bins {
                let i = g * n_bins + b;
                let n = stats.count[i];
                if n == 0.0 {
                    continue;
                }
                let conf = stats.sum_score[i] / n;
                let accuracy = stats.sum_outcome[i] / n;
                let d = conf - accuracy;
                let w = match self.bin_weighting {
                    BinWeighting::Mass => n / n_g,
                    BinWeighting::Uniform => 1.0 / n_bins as f64,
                };
                match self.norm {
                    Norm::L1 => e += w * d.abs(),
                    Norm::L2 => {
                        let correction = if self.debias && n >= 2.0 {
                            accuracy * (1.0 - accuracy) / (n - 1.0)
                        } else {
                            0.0
                        };
                        e += w * (d * d - correction);
                    }
                    Norm::Max => e = e.max(d.abs()),
                }
            }
            let weight = if n_groups == 1 {
                1.0
            } else if self.scores == ScoreSet::AllClasses {
                1.0 / n_groups as f64
            } else if total > 0.0 {
                n_g / total
            } else {
                0.0
            };
            acc += weight * e;
            per_group.push(if self.norm == Norm::L2 { e.max(0.0).sqrt() } else { e });
        }
        let value = if self.norm == Norm::L2 { acc.max(0.0).sqrt() } else { acc };
        if !self.class_conditional {
            per_group.clear();
        }
        CalibrationErrorValue { value, per_group }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binning::{bin_of, even_edges};

    /// McCaffrey's worked example (docs/conventions.md): 10 binary items, 3 even bins, CE = 0.241.
    #[test]
    fn mccaffrey_worked_example() {
        let s = [0.61, 0.39, 0.31, 0.76, 0.22, 0.59, 0.92, 0.83, 0.57, 0.41];
        let y = [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0];
        let edges = even_edges(3);
        let mut st = BinStats::zeros(BinLayout::Edges(edges.clone()), 1);
        s.iter().zip(y).for_each(|(&s, y)| st.add(0, bin_of(s, &edges), s, y));
        let cfg = CalibrationErrorConfig::new().with_binning(Binning::Even { n_bins: 3 });
        // By hand: .2*|.265-.5| + .5*|.514-.8| + .3*|.8367-.6667| = .047 + .143 + .051
        assert!((cfg.reduce(&st).value - 0.241).abs() < 5e-4);
    }

    #[test]
    fn debias_subtracts_binomial_variance() {
        // One bin of 4 pairs, conf 0.5, acc 0.5: plug-in 0, debiased 0 - 0.25/3 -> clamped to 0.
        let mut st = BinStats::zeros(BinLayout::Adaptive { n_ranges: 1 }, 1);
        for o in [1.0, 0.0, 1.0, 0.0] {
            st.add(0, 0, 0.5, o);
        }
        let cfg = CalibrationErrorConfig::new().with_norm(Norm::L2).with_debias(true);
        assert_eq!(cfg.reduce(&st).value, 0.0);
    }

    #[test]
    fn rejects_nonsense() {
        assert!(CalibrationErrorConfig::new().with_debias(true).validate().is_err());
        assert!(CalibrationErrorConfig::new().with_threshold(Some(1.5)).validate().is_err());
        let zero = CalibrationErrorConfig::new().with_binning(Binning::Even { n_bins: 0 });
        assert!(zero.validate().is_err());
    }
}
