//! [`GceVariant`]: the 32 variants of the general calibration error in Nixon et al. (2019),
//! Appendix C, numbered as there.
//!
//! ```text
//! number = 16 adaptive + 8 all-classes + 4 marginal + 2 thresholded + l2
//!   adaptive:      0 even bins, 1 adaptive (equal-mass) ranges
//!   all-classes:   0 max probability (top-label), 1 every class's probability
//!   marginal:      0 class-conditional, 1 not
//!   thresholded:   0 every score, 1 only scores > 0.01
//!   l2:            0 L1, 1 L2
//! ```
//! So 0 is top-label ECE per predicted class, 4 ECE, 8 SCE, 21 RMSCE, 24 ACE and 26 TACE.
//! Bins are mass-weighted except in the adaptive class-conditional all-class variants (24-27),
//! weighted uniformly as ACE and TACE define them.

use super::calibration_error::{BinWeighting, CalibrationErrorConfig, Norm, ScoreSet};
use super::metric::Metric;
use crate::binning::Binning;
use crate::error::{CalibError, Result};

/// The threshold of the thresholded variants.
pub const GCE_THRESHOLD: f64 = 0.01;

/// One of the 32 GCE variants (0 to 31).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GceVariant(u8);

/// A property that tells GCE variants apart (Nixon et al. §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GceProperty {
    /// Even bins or adaptive ranges.
    Binning,
    /// Max probability or all probabilities.
    Scores,
    /// Class-conditional or not.
    ClassConditional,
    /// Thresholded or not.
    Threshold,
    /// L1 or L2.
    Norm,
}

impl GceProperty {
    /// Every property, in the order of the variant number's bits (high to low).
    pub const ALL: [Self; 5] =
        [Self::Binning, Self::Scores, Self::ClassConditional, Self::Threshold, Self::Norm];

    /// The property's name: `binning`, `scores`, `class_conditional`, `threshold`, `norm`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Binning => "binning",
            Self::Scores => "scores",
            Self::ClassConditional => "class_conditional",
            Self::Threshold => "threshold",
            Self::Norm => "norm",
        }
    }

    /// The bit of the variant number this property sets.
    fn bit(self) -> u8 {
        match self {
            Self::Binning => 16,
            Self::Scores => 8,
            Self::ClassConditional => 4,
            Self::Threshold => 2,
            Self::Norm => 1,
        }
    }
}

impl GceVariant {
    /// Number of variants.
    pub const COUNT: usize = 32;

    /// Variant `number` (0 to 31).
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] past 31.
    pub fn new(number: usize) -> Result<Self> {
        u8::try_from(number).ok().filter(|&n| n < 32).map(Self).ok_or_else(|| {
            CalibError::InvalidConfig(format!("GCE variants are numbered 0 to 31, got {number}"))
        })
    }

    /// All 32, in the paper's order.
    pub fn all() -> impl Iterator<Item = Self> {
        (0..32).map(Self)
    }

    /// The number (0 to 31).
    pub fn number(self) -> usize {
        usize::from(self.0)
    }

    /// Whether `property` takes its second value (adaptive, all classes, marginal, thresholded,
    /// L2).
    pub fn has(self, property: GceProperty) -> bool {
        self.0 & property.bit() != 0
    }

    /// The variant that differs from this one in `property` only.
    pub fn flipped(self, property: GceProperty) -> Self {
        Self(self.0 ^ property.bit())
    }

    /// The name: the five choices joined by `-`, e.g. `even-maxprob-marginal-all-l1` (ECE).
    pub fn name(self) -> String {
        let pick = |p, a: &'static str, b: &'static str| if self.has(p) { b } else { a };
        [
            pick(GceProperty::Binning, "even", "adaptive"),
            pick(GceProperty::Scores, "maxprob", "allprobs"),
            pick(GceProperty::ClassConditional, "classcond", "marginal"),
            pick(GceProperty::Threshold, "all", "thresh"),
            pick(GceProperty::Norm, "l1", "l2"),
        ]
        .join("-")
    }

    /// The named metric this variant is, where it is one (at the same bin count).
    pub fn preset(self) -> Option<Metric> {
        Some(match self.0 {
            0 => Metric::ToplabelEce,
            4 => Metric::Ece,
            8 => Metric::Sce,
            21 => Metric::Rmsce,
            24 => Metric::Ace,
            26 => Metric::Tace,
            _ => return None,
        })
    }

    /// The configuration at `n_bins` even bins or adaptive ranges.
    pub fn config(self, n_bins: usize) -> CalibrationErrorConfig {
        let adaptive = self.has(GceProperty::Binning);
        let all_classes = self.has(GceProperty::Scores);
        let conditional = !self.has(GceProperty::ClassConditional);
        let uniform = adaptive && all_classes && conditional;
        CalibrationErrorConfig::new()
            .with_binning(if adaptive {
                Binning::Adaptive { n_ranges: n_bins }
            } else {
                Binning::Even { n_bins }
            })
            .with_scores(if all_classes { ScoreSet::AllClasses } else { ScoreSet::TopLabel })
            .with_class_conditional(conditional)
            .with_threshold(self.has(GceProperty::Threshold).then_some(GCE_THRESHOLD))
            .with_norm(if self.has(GceProperty::Norm) { Norm::L2 } else { Norm::L1 })
            .with_bin_weighting(if uniform { BinWeighting::Uniform } else { BinWeighting::Mass })
    }
}

impl std::fmt::Display for GceVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0, self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_variants_are_the_presets() {
        for v in GceVariant::all() {
            if let Some(m) = v.preset() {
                assert_eq!(Some(v.config(15)), m.calibration_error(15, 15, GCE_THRESHOLD), "{v}");
            }
        }
        assert_eq!(GceVariant::new(4).unwrap().name(), "even-maxprob-marginal-all-l1");
        assert_eq!(GceVariant::new(26).unwrap().name(), "adaptive-allprobs-classcond-thresh-l1");
        assert!(GceVariant::new(32).is_err());
        let names: std::collections::HashSet<_> = GceVariant::all().map(|v| v.name()).collect();
        assert_eq!(names.len(), 32);
    }
}
