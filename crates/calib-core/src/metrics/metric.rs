//! [`Metric`]: the named metrics of docs/conventions.md, generated from the registry
//! ([`super::registry`]): each a preset of the one configuration, a mean over rows, or an
//! estimator on the sorted pairs.

use serde::{Deserialize, Serialize};

use super::calibration_error::{BinWeighting, CalibrationErrorConfig, Norm, ScoreSet};
use super::computation::{BinSettings, Computation, PairEstimator, RowSum};
use super::refinement::{LossPart, ProperLoss};
use super::registry::metrics;
use crate::error::{CalibError, Result};

/// A flag of a registry line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    /// In the default set.
    Default,
    /// Reads a row only through its argmax and largest probability.
    TopLabel,
}

/// Generates [`Metric`] from the registry's list.
macro_rules! define_metrics {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal $(| $alias:literal)* [$($flag:ident)*]: $kind:ident($($computation:expr),+);
    )*) => {
        /// A metric calib computes, by its docs/conventions.md name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        #[non_exhaustive]
        pub enum Metric {
            $($(#[$doc])* $variant,)*
        }

        impl Metric {
            /// Every metric, in report order.
            pub const ALL: [Metric; [$($name),*].len()] = [$(Self::$variant),*];

            /// The docs/conventions.md name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// How the metric is computed.
            pub fn computation(self) -> Computation {
                match self {
                    $(Self::$variant => Computation::$kind($($computation),+),)*
                }
            }

            fn flags(self) -> &'static [Flag] {
                match self {
                    $(Self::$variant => &[$(Flag::$flag),*],)*
                }
            }

            fn aliases(self) -> &'static [&'static str] {
                match self {
                    $(Self::$variant => &[$($alias),*],)*
                }
            }
        }
    };
}

metrics!(define_metrics);

impl Metric {
    /// The default set, explicit in the registry: the binned errors, NLL, Brier and accuracy
    /// (not the Brier decomposition, not the metrics on sorted pairs).
    pub fn defaults() -> Vec<Metric> {
        Self::ALL.into_iter().filter(|m| m.flags().contains(&Flag::Default)).collect()
    }

    /// Whether the metric sorts or smooths the (score, outcome) pairs instead of binning them
    /// ([`crate::metrics::BinningFreeTests`], [`crate::metrics::SmoothEce`]): it needs every
    /// row at once.
    pub fn uses_pairs(self) -> bool {
        matches!(self.computation(), Computation::Pairs(_))
    }

    /// Whether the metric needs every row at once: the metrics on pairs and the parts of a
    /// loss split by a refit (no streaming, no SQL aggregate, no training-loop metric).
    pub fn needs_all_rows(self) -> bool {
        matches!(self.computation(), Computation::Pairs(_) | Computation::Refit(..))
    }

    /// Whether the metric reads a K-class row only through its argmax and largest probability
    /// (the top-label prediction and confidence): the top-label errors, accuracy and the
    /// binning-free tests. SCE, ACE, TACE, NLL and Brier read every class.
    pub fn is_top_label(self) -> bool {
        self.flags().contains(&Flag::TopLabel)
    }

    /// Parses a docs/conventions.md name or an alias (`classwise_ece` for `sce`), in any case.
    pub fn from_name(name: &str) -> Result<Self> {
        let name = name.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|m| m.name() == name || m.aliases().contains(&&*name))
            .ok_or_else(|| {
                let known: Vec<_> = Self::ALL.iter().map(|m| m.name()).collect();
                CalibError::InvalidConfig(format!(
                    "unknown metric `{name}`; known: {}",
                    known.join(", ")
                ))
            })
    }

    /// The binned configuration of this metric, `None` for the means over rows and the
    /// metrics on pairs.
    ///
    /// `n_bins` is B of the even-bin metrics, `n_ranges` R of the adaptive ones and
    /// `tace_threshold` the eps of TACE.
    pub fn calibration_error(
        self,
        n_bins: usize,
        n_ranges: usize,
        tace_threshold: f64,
    ) -> Option<CalibrationErrorConfig> {
        let settings = BinSettings { n_bins, n_ranges, tace_threshold };
        match self.computation() {
            Computation::Binned(preset) | Computation::BrierDecomposition(preset) => {
                Some(preset(&settings))
            }
            Computation::Sum(_) | Computation::Pairs(_) | Computation::Refit(..) => None,
        }
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
            assert_eq!(Metric::from_name(&m.name().to_uppercase()).unwrap(), m);
        }
        assert_eq!(Metric::from_name("classwise_ece").unwrap(), Metric::Sce);
        assert!(Metric::from_name("ecee").is_err());
    }

    #[test]
    fn the_default_set_is_the_binned_errors_and_proper_scores() {
        use Metric as M;
        let want = [
            M::Ece,
            M::Mce,
            M::Rmsce,
            M::Sce,
            M::Ace,
            M::Tace,
            M::ToplabelEce,
            M::DebiasedL2,
            M::PluginL2,
            M::Nll,
            M::Brier,
            M::Accuracy,
        ];
        assert_eq!(Metric::defaults(), want);
    }

    #[test]
    fn the_flags_agree_with_the_computation() {
        for m in Metric::ALL {
            let pairs = matches!(m.computation(), Computation::Pairs(_));
            assert_eq!(m.uses_pairs(), pairs, "{m}");
            assert!(!pairs || m.is_top_label(), "{m}: pairs are top-label");
            assert_eq!(
                m.calibration_error(15, 15, 0.01).is_some(),
                matches!(
                    m.computation(),
                    Computation::Binned(_) | Computation::BrierDecomposition(_)
                )
            );
            let _ = (RowSum::Nll, PairEstimator::SmoothEce);
        }
    }
}
