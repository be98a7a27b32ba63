//! Confidence intervals for a bin's accuracy (a binomial proportion): Clopper-Pearson and
//! Wilson. They say how sure the measured accuracy of a bin is, where the binomial acceptance
//! interval (Bröcker & Smith 2007, drawn by `calib plot`) says where it may fall if the bin
//! is calibrated.
//!
//! ```text
//! x hits of n, alpha = 1 - level
//! Clopper-Pearson: [B(alpha/2; x, n - x + 1), B(1 - alpha/2; x + 1, n - x)]   (0 at x = 0, 1 at x = n)
//! Wilson:          (x + z^2/2) / (n + z^2)  ±  z / (n + z^2) sqrt(x (n - x) / n + z^2 / 4),  z = Phi^-1(1 - alpha/2)
//! ```
//! `B(q; a, b)` is the Beta quantile (Clopper & Pearson 1934; Wilson 1927). Clopper-Pearson
//! covers at least `level` for every true accuracy (it is conservative); Wilson is close to
//! `level` on average and narrower.

use serde::{Deserialize, Serialize};

use super::BinSummary;
use super::special::{beta_quantile, normal_quantile};
use crate::error::{CalibError, Result};

/// How a bin's accuracy interval is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccuracyInterval {
    /// Exact (Beta quantiles); the default.
    #[default]
    ClopperPearson,
    /// Wilson's score interval.
    Wilson,
}

impl AccuracyInterval {
    /// Parses `clopper-pearson` or `wilson`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "clopper-pearson" | "clopper_pearson" | "exact" => Ok(Self::ClopperPearson),
            "wilson" => Ok(Self::Wilson),
            other => Err(CalibError::InvalidConfig(format!(
                "unknown interval `{other}`; known: clopper-pearson, wilson"
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ClopperPearson => "Clopper-Pearson",
            Self::Wilson => "Wilson",
        }
    }

    /// The central interval at `level` (in (0, 1)) for `hits` of `n` (`None` when `n` is 0).
    ///
    /// ```
    /// use calib_core::stats::AccuracyInterval;
    /// let (lo, hi) = AccuracyInterval::ClopperPearson.of(3.0, 10.0, 0.95).unwrap();
    /// assert!((lo - 0.0667395111777345).abs() < 1e-12 && (hi - 0.6524528500599973).abs() < 1e-12);
    /// ```
    pub fn of(self, hits: f64, n: f64, level: f64) -> Option<(f64, f64)> {
        let valid = n > 0.0 && level > 0.0 && level < 1.0;
        if !valid {
            return None;
        }
        let x = hits.clamp(0.0, n);
        let alpha = 1.0 - level;
        Some(match self {
            Self::ClopperPearson => {
                let lo = if x == 0.0 { 0.0 } else { beta_quantile(alpha / 2.0, x, n - x + 1.0) };
                let hi =
                    if x == n { 1.0 } else { beta_quantile(1.0 - alpha / 2.0, x + 1.0, n - x) };
                (lo, hi)
            }
            Self::Wilson => {
                let z = normal_quantile(1.0 - alpha / 2.0);
                let z2 = z * z;
                let centre = (x + z2 / 2.0) / (n + z2);
                let half = z / (n + z2) * (x * (n - x) / n + z2 / 4.0).sqrt();
                ((centre - half).max(0.0), (centre + half).min(1.0))
            }
        })
    }
}

impl BinSummary {
    /// The `level` interval of this bin's accuracy (`None` for an empty bin).
    pub fn accuracy_interval(&self, method: AccuracyInterval, level: f64) -> Option<(f64, f64)> {
        let accuracy = self.accuracy?;
        method.of(accuracy * self.count, self.count, level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(x, n, level, Clopper-Pearson, Wilson)` from scipy 1.17.1:
    /// `beta.ppf(a/2, x, n-x+1)`, `beta.ppf(1-a/2, x+1, n-x)` and Wilson's formula with
    /// `z = norm.ppf(1-a/2)`.
    /// `(x, n, level, Clopper-Pearson, Wilson)`.
    type Case = (f64, f64, f64, (f64, f64), (f64, f64));

    const SCIPY: [Case; 5] = [
        (0.0, 10.0, 0.95, (0.0, 0.3084971078187607), (0.0, 0.27753279986288926)),
        (
            3.0,
            10.0,
            0.95,
            (0.0667395111777345, 0.6524528500599973),
            (0.10779126740630102, 0.6032218525388546),
        ),
        (10.0, 10.0, 0.95, (0.6915028921812392, 1.0), (0.7224672001371109, 1.0)),
        (
            47.0,
            60.0,
            0.9,
            (0.6777572042415729, 0.8668121624565331),
            (0.684665250243634, 0.8575515638868464),
        ),
        (
            512.0,
            1000.0,
            0.99,
            (0.4708063283032267, 0.5530778489395518),
            (0.4713395266216968, 0.5525022854206214),
        ),
    ];

    #[test]
    fn intervals_match_scipy() {
        for (x, n, level, cp, wilson) in SCIPY {
            let got = AccuracyInterval::ClopperPearson.of(x, n, level).unwrap();
            assert!(
                (got.0 - cp.0).abs() < 1e-12 && (got.1 - cp.1).abs() < 1e-12,
                "{x}/{n}: {got:?}"
            );
            let got = AccuracyInterval::Wilson.of(x, n, level).unwrap();
            let ok = (got.0 - wilson.0).abs() < 1e-12 && (got.1 - wilson.1).abs() < 1e-12;
            assert!(ok, "{x}/{n}: {got:?} vs {wilson:?}");
        }
    }

    #[test]
    fn empty_bins_and_bad_levels_have_no_interval() {
        assert_eq!(AccuracyInterval::Wilson.of(0.0, 0.0, 0.95), None);
        assert_eq!(AccuracyInterval::ClopperPearson.of(1.0, 2.0, 1.0), None);
        let empty =
            BinSummary { count: 0.0, confidence: None, accuracy: None, lower: None, upper: None };
        assert_eq!(empty.accuracy_interval(AccuracyInterval::Wilson, 0.95), None);
    }

    /// Clopper-Pearson contains Wilson's interval in these cases (it is the conservative one)
    /// and both contain the observed proportion.
    #[test]
    fn both_contain_the_proportion() {
        for (x, n, level, ..) in SCIPY {
            for m in [AccuracyInterval::ClopperPearson, AccuracyInterval::Wilson] {
                let (lo, hi) = m.of(x, n, level).unwrap();
                assert!(lo <= x / n && x / n <= hi);
            }
        }
    }
}
