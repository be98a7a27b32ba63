//! The named metrics of docs/conventions.md, as presets of the one configuration.

use serde::{Deserialize, Serialize};

use super::calibration_error::{BinWeighting, CalibrationErrorConfig, Norm, ScoreSet};
use crate::binning::Binning;
use crate::error::{CalibError, Result};

/// A metric calib computes, by its docs/conventions.md name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Metric {
    /// Top-label expected calibration error, even bins: `sum_b (n_b/N) |acc_b - conf_b|`.
    Ece,
    /// Maximum calibration error: `max` over non-empty even bins of `|acc_b - conf_b|`.
    Mce,
    /// Root-mean-square calibration error, top-label, adaptive ranges, mass-weighted.
    Rmsce,
    /// Static (class-wise) calibration error: `(1/K) sum_k sum_b (n_bk/N) |acc_bk - conf_bk|`.
    Sce,
    /// Adaptive calibration error: `(1/(K R)) sum_k sum_r |acc_rk - conf_rk|`.
    Ace,
    /// Thresholded ACE: as ACE over the scores `p > eps` (eps = 0.01) of each class.
    Tace,
    /// Top-label ECE per predicted class (Gupta & Ramdas): `sum_c (N_c/N) ECE_c`.
    ToplabelEce,
    /// Debiased L2 calibration error (Kumar et al. 2019), top-label, adaptive R = 15.
    DebiasedL2,
    /// The plug-in L2 calibration error: the same sum without the bias correction.
    PluginL2,
    /// Mean negative log-likelihood `-log p[i, y]` from log-softmax.
    Nll,
    /// Mean Brier score `sum_k (p[i,k] - 1[y = k])^2` (binary input: `(p - y)^2`).
    Brier,
    /// Murphy's decomposition of the Brier score over even class-wise bins.
    BrierDecomposition,
    /// Fraction of samples whose argmax equals the label.
    Accuracy,
    /// Kolmogorov-Smirnov statistic of the cumulative differences (top-label or binary).
    Ks,
    /// Its p-value.
    KsPvalue,
    /// Kuiper statistic of the cumulative differences (top-label or binary).
    Kuiper,
    /// Its p-value.
    KuiperPvalue,
    /// Spiegelhalter's z (top-label or binary).
    Spiegelhalter,
    /// Its two-sided p-value.
    SpiegelhalterPvalue,
    /// Smooth ECE (Błasiok & Nakkiran 2023, relplot's definition, exact kernel), top-label or
    /// binary.
    Smece,
    /// LCE-based ECE (Posocco & Bonnefoy): `(1/N) sum_i |RC(s_i) - s_i|`, the kernel
    /// reliability curve at each score, top-label or binary.
    LceEce,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 21] = [
        Self::Ece,
        Self::Mce,
        Self::Rmsce,
        Self::Sce,
        Self::Ace,
        Self::Tace,
        Self::ToplabelEce,
        Self::DebiasedL2,
        Self::PluginL2,
        Self::Nll,
        Self::Brier,
        Self::BrierDecomposition,
        Self::Accuracy,
        Self::Ks,
        Self::KsPvalue,
        Self::Kuiper,
        Self::KuiperPvalue,
        Self::Spiegelhalter,
        Self::SpiegelhalterPvalue,
        Self::Smece,
        Self::LceEce,
    ];

    /// The default set: the binned errors, NLL, Brier and accuracy (not the Brier
    /// decomposition, not the binning-free tests).
    pub fn defaults() -> Vec<Metric> {
        Self::ALL[..13].iter().copied().filter(|m| *m != Self::BrierDecomposition).collect()
    }

    /// Whether the metric sorts or smooths the (score, outcome) pairs instead of binning them
    /// ([`crate::metrics::BinningFreeTests`], [`crate::metrics::SmoothEce`]): it needs every
    /// row at once.
    pub fn uses_pairs(self) -> bool {
        matches!(
            self,
            Self::Ks
                | Self::KsPvalue
                | Self::Kuiper
                | Self::KuiperPvalue
                | Self::Spiegelhalter
                | Self::SpiegelhalterPvalue
                | Self::Smece
                | Self::LceEce
        )
    }

    /// Whether the metric reads a K-class row only through its argmax and largest probability
    /// (the top-label prediction and confidence): the top-label errors, accuracy and the
    /// binning-free tests. SCE, ACE, TACE, NLL and Brier read every class.
    pub fn is_top_label(self) -> bool {
        matches!(
            self,
            Self::Ece
                | Self::Mce
                | Self::Rmsce
                | Self::ToplabelEce
                | Self::DebiasedL2
                | Self::PluginL2
                | Self::Accuracy
        ) || self.uses_pairs()
    }

    /// The docs/conventions.md name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ece => "ece",
            Self::Mce => "mce",
            Self::Rmsce => "rmsce",
            Self::Sce => "sce",
            Self::Ace => "ace",
            Self::Tace => "tace",
            Self::ToplabelEce => "toplabel_ece",
            Self::DebiasedL2 => "debiased_l2",
            Self::PluginL2 => "plugin_l2",
            Self::Nll => "nll",
            Self::Brier => "brier",
            Self::BrierDecomposition => "brier_decomposition",
            Self::Accuracy => "accuracy",
            Self::Ks => "ks",
            Self::KsPvalue => "ks_pvalue",
            Self::Kuiper => "kuiper",
            Self::KuiperPvalue => "kuiper_pvalue",
            Self::Spiegelhalter => "spiegelhalter",
            Self::SpiegelhalterPvalue => "spiegelhalter_pvalue",
            Self::Smece => "smece",
            Self::LceEce => "lce_ece",
        }
    }

    /// Parses a docs/conventions.md name (`classwise_ece` is accepted for `sce`).
    pub fn from_name(name: &str) -> Result<Self> {
        let name = name.trim().to_ascii_lowercase();
        if name == "classwise_ece" {
            return Ok(Self::Sce);
        }
        Self::ALL.into_iter().find(|m| m.name() == name).ok_or_else(|| {
            let known: Vec<_> = Self::ALL.iter().map(|m| m.name()).collect();
            CalibError::InvalidConfig(format!(
                "unknown metric `{name}`; known: {}",
                known.join(", ")
            ))
        })
    }

    /// The binned configuration of this metric, `None` for NLL, Brier and accuracy.
    ///
    /// `n_bins` is B of the even-bin metrics, `n_ranges` R of the adaptive ones and
    /// `tace_threshold` the eps of TACE.
    pub fn calibration_error(
        self,
        n_bins: usize,
        n_ranges: usize,
        tace_threshold: f64,
    ) -> Option<CalibrationErrorConfig> {
        let even = Binning::Even { n_bins };
        let adaptive = Binning::Adaptive { n_ranges };
        let base = CalibrationErrorConfig::new();
        Some(match self {
            Self::Ece => base.with_binning(even),
            Self::Mce => base.with_binning(even).with_norm(Norm::Max),
            Self::Rmsce | Self::PluginL2 => base.with_binning(adaptive).with_norm(Norm::L2),
            Self::DebiasedL2 => base.with_binning(adaptive).with_norm(Norm::L2).with_debias(true),
            Self::Sce => base
                .with_binning(even)
                .with_scores(ScoreSet::AllClasses)
                .with_class_conditional(true),
            Self::Ace => base
                .with_binning(adaptive)
                .with_scores(ScoreSet::AllClasses)
                .with_class_conditional(true)
                .with_bin_weighting(BinWeighting::Uniform),
            Self::Tace => base
                .with_binning(adaptive)
                .with_scores(ScoreSet::AllClasses)
                .with_class_conditional(true)
                .with_threshold(Some(tace_threshold))
                .with_bin_weighting(BinWeighting::Uniform),
            Self::ToplabelEce => base.with_binning(even).with_class_conditional(true),
            Self::BrierDecomposition => base
                .with_binning(even)
                .with_scores(ScoreSet::AllClasses)
                .with_class_conditional(true)
                .with_norm(Norm::L2),
            Self::Nll
            | Self::Brier
            | Self::Accuracy
            | Self::Ks
            | Self::KsPvalue
            | Self::Kuiper
            | Self::KuiperPvalue
            | Self::Spiegelhalter
            | Self::SpiegelhalterPvalue
            | Self::Smece
            | Self::LceEce => return None,
        })
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Metric {
    type Err = CalibError;
    fn from_str(s: &str) -> Result<Self> {
        Self::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()).unwrap(), m);
        }
        assert!(Metric::from_name("ecee").is_err());
    }
}
