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
//! Sample weights: a bin's mean is `sum w y / sum w`, equal-mass cuts fall at the weight
//! positions of [`SortedPairs`], and a resample draws `W` rows (rounded), row `i` with
//! probability `w_i / W`: whole-number weights give exactly the repeated rows' map, bootstrap
//! included.
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

use super::sorted_pairs::SortedPairs;
use crate::api::{Method, SavedTensor};
#[cfg(feature = "wgpu")]
use crate::binary::DeviceFit;
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

    /// The map of bins `edges` on one sample: mean outcome per bin (weighted), midpoints
    /// when a bin holds no weight.
    pub(crate) fn on_edges(edges: Vec<f64>, pairs: &SortedPairs) -> Self {
        let sums = pairs.bins(&edges);
        Self::of_bin_sums(edges, sums)
    }

    /// The map of bins `edges` whose weights and positive outcomes' weights are `sums`: their
    /// means, midpoints where a bin holds no weight.
    fn of_bin_sums(edges: Vec<f64>, sums: impl IntoIterator<Item = (f64, f64)>) -> Self {
        let values = (sums.into_iter().enumerate())
            .map(
                |(j, (weight, positive))| {
                    if weight > 0.0 { positive / weight } else { 0.5 * (edges[j] + edges[j + 1]) }
                },
            )
            .collect();
        Self { edges, values }
    }
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

    /// The bins (no bins: the identity).
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        use calib_core::engine::MapTable;
        Some(match self.values.is_empty() {
            true => MapTable::Identity,
            false => MapTable::Steps { edges: self.edges.clone(), values: self.values.clone() },
        })
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
    /// Every problem's edges on pairs sorted on the device: even, or (equal mass) the
    /// midpoints of the scores either side of each cut `floor(r N / B)`, as
    /// [`SortedPairs::mass_edges`] places them.
    #[cfg(feature = "wgpu")]
    fn device_edges(&self, pairs: &calib_core::engine::DevicePairs) -> Result<Vec<Vec<f64>>> {
        let (n, b, problems) = (pairs.n_pairs(), self.n_bins, pairs.n_problems());
        // One bin has no cut: its edges are 0 and 1 either way.
        if self.strategy == BinStrategy::Width || b == 1 {
            return Ok(vec![calib_core::binning::even_edges(b); problems]);
        }
        let cuts: Vec<usize> = (1..b)
            .map(|r| calib_core::binning::weighted_range_start(r, n as f64, b, true) as usize)
            .collect();
        let places: Vec<(usize, usize)> = (0..problems)
            .flat_map(|p| cuts.iter().flat_map(move |&c| [(p, c - 1), (p, c.min(n - 1))]))
            .collect();
        let scores = pairs.scores_at(&places)?;
        let edges = scores.chunks(2 * cuts.len()).map(|around| {
            let inner = around.chunks(2).map(|s| 0.5 * (f64::from(s[0]) + f64::from(s[1])));
            std::iter::once(0.0).chain(inner).chain(std::iter::once(1.0)).collect()
        });
        Ok(edges.collect())
    }

    /// One fit of the bins on one sample (weights each 1 when `None`).
    fn fit_once(&self, scores: &[f64], outcomes: &[bool], weights: Option<&[f64]>) -> HistogramMap {
        let pairs = SortedPairs::new(scores, outcomes, weights);
        let edges = match self.strategy {
            BinStrategy::Width => calib_core::binning::even_edges(self.n_bins),
            BinStrategy::Mass => pairs.mass_edges(self.n_bins),
        };
        HistogramMap::on_edges(edges, &pairs)
    }
}

impl BinaryFit for HistogramBinningConfig {
    type Map = HistogramMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        if self.n_bins == 0 {
            return Err(FitError::InvalidConfig("n_bins must be at least 1".into()));
        }
        Ok(())
    }

    /// The fit, weighted or not: one sample, or the mean over bootstrap resamples. A resample
    /// draws `W` rows (rounded), row `i` with probability `w_i / W`: it owns `[C_{i-1}, C_i)`
    /// of the running weights, so whole-number weights draw the repeated rows' positions.
    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<HistogramMap>> {
        let n = scores.len();
        let total = weights.map_or(n as f64, |w| w.iter().sum());
        if total < self.n_bins as f64 {
            let what = match weights {
                None => format!("{n} calibration scores"),
                Some(_) => format!("calibration weight {total}"),
            };
            return Err(FitError::UnsuitableInput {
                method: Method::Histogram.name().into(),
                reason: format!("{what} for {} bins", self.n_bins),
            });
        }
        if self.bootstrap == 0 {
            return Ok(BinaryFitted::exact(self.fit_once(scores, outcomes, weights)));
        }
        let cumulative: Option<Vec<f64>> = weights.map(|w| {
            w.iter()
                .scan(0.0, |c, &w| {
                    *c += w;
                    Some(*c)
                })
                .collect()
        });
        let draw = |rng: &mut SplitMix64| match &cumulative {
            None => rng.below(n),
            Some(c) => {
                let u = rng.uniform() * total;
                c.partition_point(|&c| c <= u).min(n - 1)
            }
        };
        let draws = if weights.is_some() { total.round().max(1.0) as usize } else { n };
        let mut rng = SplitMix64(self.seed);
        let (mut s, mut o) = (vec![0.0; draws], vec![false; draws]);
        let maps: Vec<HistogramMap> = (0..self.bootstrap)
            .map(|_| {
                for j in 0..draws {
                    let i = draw(&mut rng);
                    (s[j], o[j]) = (scores[i], outcomes[i]);
                }
                self.fit_once(&s, &o, None)
            })
            .collect();
        Ok(BinaryFitted::exact(mean_map(&maps)))
    }

    /// Without bootstrap resamples and with a pair per bin at least: the bins cut on the
    /// device (fewer pairs than bins take the host path, which says why).
    fn sorts_on_device(&self, n_pairs: usize) -> bool {
        self.bootstrap == 0 && n_pairs >= self.n_bins
    }

    /// The maps of the bins cut on the device's sorted pairs (equal mass: each inner edge the
    /// midpoint of the f32 scores either side of its cut, read back first): each the same as
    /// the host fit on the problem's f32 scores.
    #[cfg(feature = "wgpu")]
    fn fit_sorted(
        &self,
        pairs: &calib_core::engine::DevicePairs,
    ) -> Option<Result<DeviceFit<HistogramMap>>> {
        if !self.sorts_on_device(pairs.n_pairs()) {
            return None;
        }
        let edges = match self.device_edges(pairs) {
            Ok(edges) => edges,
            Err(e) => return Some(Err(e)),
        };
        let binned = match pairs.binned(&edges) {
            Ok(binned) => binned,
            Err(e) => return Some(Err(e.into())),
        };
        let positives = binned.bins.iter().map(|b| b.iter().map(|&(_, p)| p as usize).sum());
        let positives = positives.collect();
        let maps = edges.into_iter().zip(&binned.bins).map(|(edges, bins)| {
            let sums =
                bins.iter().map(|&(count, positive)| (f64::from(count), f64::from(positive)));
            HistogramMap::of_bin_sums(edges, sums)
        });
        Some(Ok(DeviceFit::exact(maps.collect(), positives, Some(binned.nll))))
    }
}

crate::binary::fit_by_maps!(HistogramBinningConfig, HistogramBinning);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_right_closed() {
        let c = HistogramBinningConfig::new().with_n_bins(4);
        let m = c.fit_once(&[0.0, 0.25, 0.26, 1.0], &[true, false, true, true], None);
        // 0 and 0.25 share bin 0; 0.26 is bin 1; 1.0 the last bin; bin 2 is empty.
        assert_eq!(m.bins().1, &[0.5, 1.0, 0.625, 1.0]);
    }

    #[test]
    fn equal_mass_edges_are_midpoints() {
        let c = HistogramBinningConfig::new().with_n_bins(2).with_strategy(BinStrategy::Mass);
        let m = c.fit_once(&[0.1, 0.2, 0.4, 0.8], &[false, true, true, true], None);
        assert_eq!(m.bins(), (&[0.0, 0.30000000000000004, 1.0][..], &[0.5, 1.0][..]));
    }

    /// Whole-number weights: the repeated rows' map, bootstrap draws included.
    #[test]
    fn whole_weights_fit_the_repeated_rows() {
        let scores: Vec<f64> = (0..60).map(|i| ((i * 37) % 60) as f64 / 60.0).collect();
        let outcomes: Vec<bool> = (0..60).map(|i| (i * 13) % 7 < 4).collect();
        let weights: Vec<f64> = (0..60).map(|i| (1 + i % 3) as f64).collect();
        let (mut s, mut o) = (Vec::new(), Vec::new());
        for i in 0..60 {
            for _ in 0..weights[i] as usize {
                s.push(scores[i]);
                o.push(outcomes[i]);
            }
        }
        for (strategy, bootstrap) in
            [(BinStrategy::Mass, 0), (BinStrategy::Mass, 7), (BinStrategy::Width, 7)]
        {
            let c = HistogramBinningConfig::new()
                .with_n_bins(6)
                .with_strategy(strategy)
                .with_bootstrap(bootstrap)
                .with_seed(3);
            let weighted = c.fit_weighted(&scores, &outcomes, &weights).unwrap().map;
            assert_eq!(weighted, c.fit_binary(&s, &o).unwrap().map, "{strategy:?} {bootstrap}");
        }
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
                c.fit_once(&s, &o, None)
            })
            .collect();
        for t in 0..=1000 {
            let s = t as f64 / 1000.0;
            let want = maps.iter().map(|m| m.predict(s)).sum::<f64>() / 20.0;
            assert!((mean.predict(s) - want).abs() < 1e-12, "at {s}");
        }
    }
}
