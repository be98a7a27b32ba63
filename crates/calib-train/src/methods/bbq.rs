//! BBQ, Bayesian binning into quantiles (Naeini, Cooper & Hauskrecht 2015, "Obtaining well
//! calibrated probabilities using Bayesian binning", AAAI), as netcal 1.4's `BBQ()` computes
//! it.
//!
//! ```text
//! models:   histogram binning with B bins, B = max(1, floor(N^(1/3) / 10)) ..= min(ceil(N / 5),
//!           ceil(10 N^(1/3)))   (equal-width bins; equal-mass, the paper's, by option)
//! score:    BIC_B = -2 LL_B + B ln N,   LL_B = sum_i o_i ln m_B(s_i) + (1 - o_i) ln(1 - m_B(s_i))
//!           (each log clamped at -100, as torch's binary cross-entropy in netcal)
//! weight:   r_B = exp((min BIC - BIC_B) / 2), models sorted by r descending; netcal's elbow
//!           keeps the leading ties, then each next model while (r_k - r_{k+1}) / var(r) > 1e-3;
//!           the kept r normalised to sum to 1
//! m(s) =    sum_B w_B m_B(s), clipped to [0, 1]
//! ```
//!
//! The mixture of histograms is itself piecewise constant on the union of their edges, so the
//! fitted map is one [`HistogramMap`] however many models it averages. The pairs are sorted
//! once; each model's bin counts and log-likelihood then cost a binary search per bin. `../shared/CONVENTIONS.md`
//! describes the pruning as "models below weight 1e-3 of the total"; netcal's elbow above is
//! what its `BBQ` does (docs/conventions.md). Sample weights: every count above is a sum of
//! weights and `N` their total, so whole-number weights fit the repeated rows. Host, f64.

use std::collections::BTreeMap;

use burn::config::Config;

use super::histogram::{BinStrategy, HistogramMap, weighted_map};
use super::sorted_pairs::SortedPairs;
use crate::api::{Method, SavedTensor};
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::{FitError, Result};

/// netcal's elbow threshold on consecutive relative likelihoods over their variance.
const ELBOW: f64 = 1e-3;

/// A fitted BBQ map: the weighted mixture of its histogram models.
#[derive(Debug, Clone, PartialEq)]
pub struct BbqMap(HistogramMap);

/// BBQ as a calibrator ([`MapCalibrator`] of [`BbqMap`]s).
pub type BayesianBinning = MapCalibrator<BbqMap>;

impl BbqMap {
    /// The mixture's edges and values.
    pub fn bins(&self) -> (&[f64], &[f64]) {
        self.0.bins()
    }
}

impl BinaryMap for BbqMap {
    const METHOD: Method = Method::Bbq;

    fn predict(&self, s: f64) -> f64 {
        self.0.predict(s).clamp(0.0, 1.0)
    }

    fn identity() -> Self {
        Self(HistogramMap::identity())
    }

    /// The mixture's bins with their values clipped (steps clipped are the clipped map).
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        use calib_core::engine::MapTable;
        Some(match self.0.device_table()? {
            MapTable::Steps { edges, values } => {
                let values = values.iter().map(|v| v.clamp(0.0, 1.0)).collect();
                MapTable::Steps { edges, values }
            }
            other => other,
        })
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        self.0.save(prefix, out);
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        HistogramMap::load(prefix, parameters).map(Self)
    }
}

/// Settings of a BBQ fit.
#[derive(Config, Debug, PartialEq)]
pub struct BayesianBinningConfig {
    /// Equal-width bins (netcal's default) or equal-mass bins (the paper's quantiles).
    #[config(default = "BinStrategy::Width")]
    pub strategy: BinStrategy,
    /// One-vs-rest or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

/// The bin counts BBQ averages over for `n` calibration scores.
pub fn bbq_bin_range(n: usize) -> std::ops::RangeInclusive<usize> {
    bin_range(n as f64)
}

/// [`bbq_bin_range`] for a total weight `n` (sample weights read as counts).
fn bin_range(n: f64) -> std::ops::RangeInclusive<usize> {
    let root = n.cbrt();
    let min = ((root / 10.0).floor() as usize).max(1);
    let max = ((n / 5.0).ceil() as usize).min((10.0 * root).ceil() as usize);
    min..=max.max(min)
}

/// One histogram model on the sorted pairs and its log-likelihood (weighted sums).
fn model(pairs: &SortedPairs, edges: Vec<f64>) -> (HistogramMap, f64) {
    let mut ll = 0.0;
    let values = (pairs.bins(&edges).into_iter().enumerate())
        .map(|(j, (count, pos))| {
            if count > 0.0 {
                let m = pos / count;
                ll += pos * m.ln().max(-100.0) + (count - pos) * (1.0 - m).ln().max(-100.0);
                m
            } else {
                0.5 * (edges[j] + edges[j + 1])
            }
        })
        .collect();
    (HistogramMap::from_parts(edges, values), ll)
}

/// netcal's elbow on relative likelihoods `r`: the indices kept, best first.
fn elbow(r: &[f64]) -> Vec<usize> {
    let n = r.len();
    let mean = r.iter().sum::<f64>() / n as f64;
    let variance = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    let mut order: Vec<usize> = (0..n).collect();
    // numpy's argsort (stable on ties) reversed: among equal r the later model comes first.
    order.sort_by(|&a, &b| r[a].total_cmp(&r[b]));
    order.reverse();
    let sorted: Vec<f64> = order.iter().map(|&i| r[i]).collect();
    let mut k = 0;
    while k + 1 < n && sorted[k] == sorted[k + 1] {
        k += 1;
    }
    while k + 1 < n && (sorted[k] - sorted[k + 1]) / variance > ELBOW {
        k += 1;
    }
    order.truncate(k + 1);
    order
}

impl BinaryFit for BayesianBinningConfig {
    type Map = BbqMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<BbqMap>> {
        self.fit_sorted(&SortedPairs::new(scores, outcomes, weights))
    }
}

impl BayesianBinningConfig {
    /// The fit on sorted pairs; with weights, `N` is their total (the repeated rows' count).
    fn fit_sorted(&self, pairs: &SortedPairs) -> Result<BinaryFitted<BbqMap>> {
        let n = pairs.total();
        if n < 2.0 {
            return Err(FitError::UnsuitableInput {
                method: Method::Bbq.name().into(),
                reason: format!("{n} calibration score(s): BBQ needs at least 2"),
            });
        }
        let ln_n = n.ln();
        let (models, bic): (Vec<HistogramMap>, Vec<f64>) = bin_range(n)
            .map(|b| {
                let edges = match self.strategy {
                    BinStrategy::Width => calib_core::binning::even_edges(b),
                    BinStrategy::Mass => pairs.mass_edges(b),
                };
                let (model, ll) = model(pairs, edges);
                (model, -2.0 * ll + b as f64 * ln_n)
            })
            .unzip();
        let best = bic.iter().copied().fold(f64::INFINITY, f64::min);
        let r: Vec<f64> = bic.iter().map(|b| ((best - b) / 2.0).exp()).collect();
        let kept = elbow(&r);
        let total: f64 = kept.iter().map(|&i| r[i]).sum();
        let weights: Vec<f64> = kept.iter().map(|&i| r[i] / total).collect();
        let maps: Vec<HistogramMap> = kept.iter().map(|&i| models[i].clone()).collect();
        Ok(BinaryFitted::exact(BbqMap(weighted_map(&maps, &weights))))
    }
}

crate::binary::fit_by_maps!(BayesianBinningConfig, BayesianBinning);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_counts_follow_netcal() {
        assert_eq!(bbq_bin_range(2000), 1..=126);
        assert_eq!(bbq_bin_range(10), 1..=2);
        assert_eq!(bbq_bin_range(1_000_000), 10..=1000);
    }

    #[test]
    fn elbow_keeps_ties_then_large_steps() {
        // Sorted descending: 1, 1, 0.5, 0.49999, 0.1; variance 0.1256.
        let kept = elbow(&[0.5, 1.0, 0.1, 1.0, 0.49999]);
        assert_eq!(kept, vec![3, 1, 0]);
    }
}
