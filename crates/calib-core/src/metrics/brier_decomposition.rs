//! Murphy's decomposition of the Brier score over binned forecasts.
//!
//! ```text
//! REL = (1/N) sum_k sum_b n_bk (conf_bk - acc_bk)^2      reliability (lower is better)
//! RES = (1/N) sum_k sum_b n_bk (acc_bk - ybar_k)^2       resolution  (higher is better)
//! UNC = sum_k ybar_k (1 - ybar_k)                        uncertainty
//! ```
//! over even class-wise bins (binary input: the positive class only, matching the binary Brier
//! score `(p - y)^2`). Murphy (1973), "A new vector partition of the probability score".
//! `REL - RES + UNC` equals the Brier score when forecasts within a bin are equal; otherwise
//! the two differ by the within-bin variance terms, which [`BrierDecomposition::residual`] keeps.

use serde::{Deserialize, Serialize};

use crate::stats::BinStats;

/// Reliability, resolution and uncertainty of the Brier score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BrierDecomposition {
    /// REL.
    pub reliability: f64,
    /// RES.
    pub resolution: f64,
    /// UNC.
    pub uncertainty: f64,
    /// `brier - (REL - RES + UNC)`: the within-bin terms.
    pub residual: f64,
}

impl BrierDecomposition {
    /// From class-wise even-bin statistics (one group per class), the rows' total weight `n`
    /// (N without sample weights) and the Brier score.
    pub fn from_stats(stats: &BinStats, n: f64, brier: f64) -> Self {
        let b = stats.n_bins();
        let (mut rel, mut res, mut unc) = (0.0, 0.0, 0.0);
        for g in 0..stats.n_groups {
            let range = g * b..(g + 1) * b;
            let ybar = stats.sum_outcome[range.clone()].iter().sum::<f64>() / n;
            unc += ybar * (1.0 - ybar);
            for i in range {
                let c = stats.count[i];
                if c > 0.0 {
                    let conf = stats.sum_score[i] / c;
                    let acc = stats.sum_outcome[i] / c;
                    rel += c * (conf - acc).powi(2);
                    res += c * (acc - ybar).powi(2);
                }
            }
        }
        let (reliability, resolution) = (rel / n, res / n);
        Self {
            reliability,
            resolution,
            uncertainty: unc,
            residual: brier - (reliability - resolution + unc),
        }
    }
}
