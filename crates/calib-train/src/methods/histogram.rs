//! Histogram binning (Zadrozny & Elkan 2001), with the bootstrap variant of Nixon et al. 2019
//! (their method 1; the one-vs-rest form is their class-conditional method 0).
//!
//! ```text
//! m(s) = mean outcome of the calibration scores in s's bin     (an empty bin: its midpoint)
//! bootstrap: m(s) = (1/M) sum_r m_r(s),  m_r fitted on the r-th resample (with replacement)
//! ```
//!
//! Bins (`docs/conventions.md`, "Histogram binning"): right-closed, `s = 0` in bin 0. Equal
//! width: `B` even bins. Equal mass: the calibration scores sorted, cut at sorted positions
//! `floor(r N / B)`, each inner edge the midpoint between the last score of one range and the
//! first of the next. The bootstrap mean is exact: its map is piecewise constant on the union
//! of the resamples' edges. Host, f64, seeded (the same seed gives the same map).
//!
//! # Example
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use calib_core::input::Predictions;
//! use calib_train::{BinaryMap, Fit, HistogramBinningConfig};
//!
//! let device = Device::flex();
//! let scores = Tensor::<1>::from_floats([0.1, 0.2, 0.6, 0.7, 0.9, 0.95], &device);
//! let labels = Tensor::<1, Int>::from_ints([0, 1, 0, 1, 1, 1], &device);
//! let preds = Predictions::binary(scores, labels)?;
//! let fitted = HistogramBinningConfig::new().with_n_bins(2).fit(&preds)?;
//! let map = &fitted.calibrator.maps()[0];
//! assert_eq!((map.predict(0.3), map.predict(0.8)), (0.5, 0.75));
//! # Ok::<(), calib_train::FitError>(())
//! ```

use std::collections::BTreeMap;

use burn::config::Config;
use calib_core::synthetic::SplitMix64;
use serde::{Deserialize, Serialize};

use crate::api::{Method, SavedTensor};
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::{FitError, Result};

/// How histogram-binning edges are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BinStrategy {
    /// `B` even bins on `[0, 1]`.
    #[default]
    Width,
    /// Equal-mass bins of the calibration scores.
    Mass,
}

/// A piecewise-constant map: edges `[B + 1]` from 0 to 1, a value per bin `[B]` (no bins:
/// the identity, for a class the calibration labels lack).
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramMap {
    edges: Vec<f64>,
    values: Vec<f64>,
}

/// Histogram binning as a calibrator ([`MapCalibrator`] of [`HistogramMap`]s).
pub type HistogramBinning = MapCalibrator<HistogramMap>;

impl HistogramMap {
    /// The edges `[B + 1]` and bin values `[B]`.
    pub fn bins(&self) -> (&[f64], &[f64]) {
        (&self.edges, &self.values)
    }

    /// The bin of `s`: `e_b < s <= e_{b+1}`, `s <= e_0` in bin 0.
    fn bin(&self, s: f64) -> usize {
        let j = self.edges.partition_point(|&e| e < s);
        j.saturating_sub(1).min(self.values.len() - 1)
    }

    /// The map of `edges` with bin values `values` (one fewer).
    pub(crate) fn from_parts(edges: Vec<f64>, values: Vec<f64>) -> Self {
        debug_assert_eq!(edges.len(), values.len() + 1);
        Self { edges, values }
    }

    /// The map of bins `edges` on one sample: mean outcome per bin, midpoints when empty.
    fn on_edges(edges: Vec<f64>, scores: &[f64], outcomes: &[bool]) -> Self {
        let b = edges.len() - 1;
        let mut map = Self { values: vec![0.0; b], edges };
        let mut counts = vec![0usize; b];
        for (&s, &o) in scores.iter().zip(outcomes) {
            let j = map.bin(s);
            counts[j] += 1;
            map.values[j] += f64::from(u8::from(o));
        }
        for j in 0..b {
            map.values[j] = if counts[j] == 0 {
                0.5 * (map.edges[j] + map.edges[j + 1])
            } else {
                map.values[j] / counts[j] as f64
            };
        }
        map
    }
}

/// Equal-mass edges of `scores` (`B` ranges of sorted positions, midpoints between them).
fn mass_edges(scores: &[f64], n_bins: usize) -> Vec<f64> {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted_mass_edges(&sorted, n_bins)
}

/// [`mass_edges`] of scores already sorted.
pub(crate) fn sorted_mass_edges(sorted: &[f64], n_bins: usize) -> Vec<f64> {
    let n = sorted.len();
    let mut edges = vec![0.0];
    for r in 1..n_bins {
        let cut = r * n / n_bins;
        edges.push(0.5 * (sorted[cut - 1] + sorted[cut]));
    }
    edges.push(1.0);
    edges
}

/// The exact mean of `maps`: piecewise constant on the union of their edges.
fn mean_map(maps: &[HistogramMap]) -> HistogramMap {
    weighted_map(maps, &vec![1.0 / maps.len() as f64; maps.len()])
}

/// The exact mixture `sum_m weights_m maps_m`: piecewise constant on the union of their edges.
pub(crate) fn weighted_map(maps: &[HistogramMap], weights: &[f64]) -> HistogramMap {
    let mut edges: Vec<f64> = maps.iter().flat_map(|m| m.edges.iter().copied()).collect();
    edges.sort_by(f64::total_cmp);
    edges.dedup();
    // Each cell (u_j, u_{j+1}] lies inside one bin of every map: read them at its upper end.
    let values = edges[1..]
        .iter()
        .map(|&u| maps.iter().zip(weights).map(|(m, w)| w * m.values[m.bin(u)]).sum::<f64>())
        .collect();
    HistogramMap { edges, values }
}

impl BinaryMap for HistogramMap {
    const METHOD: Method = Method::Histogram;

    fn predict(&self, s: f64) -> f64 {
        if self.values.is_empty() { s } else { self.values[self.bin(s)] }
    }

    /// No bins: the score itself (a piecewise-constant map cannot be the identity).
    fn identity() -> Self {
        Self { edges: Vec::new(), values: Vec::new() }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "edges", self.edges.clone());
        crate::binary::put(out, prefix, "values", self.values.clone());
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let edges = crate::binary::table(parameters, prefix, "edges")?.to_vec();
        let values = crate::binary::table(parameters, prefix, "values")?.to_vec();
        let identity = edges.is_empty() && values.is_empty();
        if !identity && (edges.len() != values.len() + 1 || edges.windows(2).any(|e| e[0] > e[1])) {
            return Err(FitError::Format(format!(
                "histogram map `{prefix}` needs B + 1 sorted edges for B values"
            )));
        }
        Ok(Self { edges, values })
    }
}

/// Settings of a histogram-binning fit.
#[derive(Config, Debug, PartialEq)]
pub struct HistogramBinningConfig {
    /// B, the number of bins.
    #[config(default = 15)]
    pub n_bins: usize,
    /// Equal width or equal mass.
    #[config(default = "BinStrategy::Width")]
    pub strategy: BinStrategy,
    /// M bootstrap resamples whose maps are averaged (Nixon et al.'s bootstrap histogram
    /// binning; 0 fits the calibration set once).
    #[config(default = 0)]
    pub bootstrap: usize,
    /// Seed of the resamples.
    #[config(default = 0)]
    pub seed: u64,
    /// One-vs-rest or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl HistogramBinningConfig {
    /// One fit of the bins on one sample.
    fn fit_once(&self, scores: &[f64], outcomes: &[bool]) -> HistogramMap {
        let edges = match self.strategy {
            BinStrategy::Width => {
                (0..=self.n_bins).map(|b| b as f64 / self.n_bins as f64).collect()
            }
            BinStrategy::Mass => mass_edges(scores, self.n_bins),
        };
        HistogramMap::on_edges(edges, scores, outcomes)
    }
}

impl BinaryFit for HistogramBinningConfig {
    type Map = HistogramMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Repeated;

    fn check(&self) -> Result<()> {
        if self.n_bins == 0 {
            return Err(FitError::InvalidConfig("n_bins must be at least 1".into()));
        }
        Ok(())
    }

    fn fit_binary(&self, scores: &[f64], outcomes: &[bool]) -> Result<BinaryFitted<HistogramMap>> {
        let n = scores.len();
        if n < self.n_bins {
            return Err(FitError::UnsuitableInput {
                method: Method::Histogram.name().into(),
                reason: format!("{n} calibration scores for {} bins", self.n_bins),
            });
        }
        if self.bootstrap == 0 {
            return Ok(BinaryFitted::exact(self.fit_once(scores, outcomes)));
        }
        let mut rng = SplitMix64(self.seed);
        let (mut s, mut o) = (vec![0.0; n], vec![false; n]);
        let maps: Vec<HistogramMap> = (0..self.bootstrap)
            .map(|_| {
                for j in 0..n {
                    let i = rng.below(n);
                    (s[j], o[j]) = (scores[i], outcomes[i]);
                }
                self.fit_once(&s, &o)
            })
            .collect();
        Ok(BinaryFitted::exact(mean_map(&maps)))
    }
}

crate::binary::fit_by_maps!(HistogramBinningConfig, HistogramBinning);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_right_closed() {
        let c = HistogramBinningConfig::new().with_n_bins(4);
        let m = c.fit_once(&[0.0, 0.25, 0.26, 1.0], &[true, false, true, true]);
        // 0 and 0.25 share bin 0; 0.26 is bin 1; 1.0 the last bin; bin 2 is empty.
        assert_eq!(m.bins().1, &[0.5, 1.0, 0.625, 1.0]);
    }

    #[test]
    fn equal_mass_edges_are_midpoints() {
        let c = HistogramBinningConfig::new().with_n_bins(2).with_strategy(BinStrategy::Mass);
        let m = c.fit_once(&[0.1, 0.2, 0.4, 0.8], &[false, true, true, true]);
        assert_eq!(m.bins(), (&[0.0, 0.30000000000000004, 1.0][..], &[0.5, 1.0][..]));
    }

    /// The bootstrap mean, checked against the mean of the resampled maps at many points.
    #[test]
    fn bootstrap_mean_is_exact() {
        let scores: Vec<f64> = (0..200).map(|i| ((i * 37) % 200) as f64 / 200.0).collect();
        let outcomes: Vec<bool> = (0..200).map(|i| (i * 13) % 7 < 4).collect();
        let c = HistogramBinningConfig::new()
            .with_n_bins(5)
            .with_strategy(BinStrategy::Mass)
            .with_bootstrap(20)
            .with_seed(7);
        let mean = c.fit_binary(&scores, &outcomes).unwrap().map;
        let mut rng = SplitMix64(7);
        let maps: Vec<HistogramMap> = (0..20)
            .map(|_| {
                let idx: Vec<usize> = (0..200).map(|_| rng.below(200)).collect();
                let s: Vec<f64> = idx.iter().map(|&i| scores[i]).collect();
                let o: Vec<bool> = idx.iter().map(|&i| outcomes[i]).collect();
                c.fit_once(&s, &o)
            })
            .collect();
        for t in 0..=1000 {
            let s = t as f64 / 1000.0;
            let want = maps.iter().map(|m| m.predict(s)).sum::<f64>() / 20.0;
            assert!((mean.predict(s) - want).abs() < 1e-12, "at {s}");
        }
    }
}
