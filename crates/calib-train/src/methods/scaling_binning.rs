//! Scaling-binning (Kumar, Liang & Ma 2019, "Verified uncertainty calibration"): Platt scaling,
//! then equal-mass binning of the scaled scores, each bin output as the mean *scaled score* in
//! it (not the mean outcome), so the output takes at most B values and its calibration error
//! can be measured.
//!
//! ```text
//! g(s) = sigmoid(a logit(s) + b)       Platt, plain 0/1 targets, s clipped to [1e-12, 1 - 1e-12]
//! edges: the scaled calibration scores sorted, cut into B groups as np.array_split does
//!        (larger groups first), upper edge of group j = midpoint to group j + 1, last = 1,
//!        duplicate edges dropped (so fewer than B bins can result)
//! m(s) = mean of g over the calibration scores in g(s)'s bin  (bin j: e_{j-1} < g <= e_j)
//!        an empty bin: its midpoint
//! ```
//!
//! By default both steps use the whole calibration set, as `uncertainty-calibration` 0.1.4's
//! `PlattBinner*Calibrator` does; `split = true` fits Platt on the first half of the rows and
//! the bins on the second, as the paper does. Binary, one-vs-rest ("marginal", renormalised)
//! and top-label forms. Host, f64.

use std::collections::BTreeMap;

use burn::config::Config;

use super::platt_map::{PlattMap, PlattMapConfig};
use crate::api::{Method, SavedTensor};
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::{FitError, Result};

/// A fitted scaling-binning map: a Platt map, then bins of its output.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingBinningMap {
    platt: PlattMap,
    /// Upper bin edges, increasing, the last 1.
    edges: Vec<f64>,
    values: Vec<f64>,
}

/// Scaling-binning as a calibrator ([`MapCalibrator`] of [`ScalingBinningMap`]s).
pub type ScalingBinning = MapCalibrator<ScalingBinningMap>;

impl ScalingBinningMap {
    /// The upper bin edges and bin values.
    pub fn bins(&self) -> (&[f64], &[f64]) {
        (&self.edges, &self.values)
    }

    /// Bins of the scaled scores `g` and their means.
    fn on_scaled(platt: PlattMap, mut g: Vec<f64>, n_bins: usize) -> Self {
        g.sort_by(f64::total_cmp);
        let edges = equal_mass_upper_edges(&g, n_bins);
        let (mut sums, mut counts) = (vec![0.0; edges.len()], vec![0usize; edges.len()]);
        for &v in &g {
            let j = bin_of(&edges, v);
            sums[j] += v;
            counts[j] += 1;
        }
        let values = (0..edges.len())
            .map(|j| match counts[j] {
                0 if j == 0 => edges[0] / 2.0,
                0 => (edges[j] + edges[j - 1]) / 2.0,
                c => sums[j] / c as f64,
            })
            .collect();
        Self { platt, edges, values }
    }
}

/// `np.array_split` groups of sorted `g` (the first `n % B` groups one longer), their
/// midpoints as upper edges, 1 last, duplicates dropped.
fn equal_mass_upper_edges(g: &[f64], n_bins: usize) -> Vec<f64> {
    let n = g.len();
    let parts = n_bins.min(n);
    let (size, extra) = (n / parts, n % parts);
    let mut edges = Vec::with_capacity(parts);
    let mut start = 0;
    for j in 0..parts - 1 {
        let end = start + size + usize::from(j < extra);
        edges.push((g[end - 1] + g[end]) / 2.0);
        start = end;
    }
    edges.push(1.0);
    edges.sort_by(f64::total_cmp);
    edges.dedup();
    edges
}

/// `bisect_left`: the first edge `>= v` (the last bin for anything above).
fn bin_of(edges: &[f64], v: f64) -> usize {
    edges.partition_point(|&e| e < v).min(edges.len() - 1)
}

impl BinaryMap for ScalingBinningMap {
    const METHOD: Method = Method::ScalingBinning;

    fn predict(&self, s: f64) -> f64 {
        if self.values.is_empty() {
            return s;
        }
        self.values[bin_of(&self.edges, self.platt.predict(s))]
    }

    /// No bins: the score itself (a class the calibration labels lack).
    fn identity() -> Self {
        Self { platt: PlattMap::identity(), edges: Vec::new(), values: Vec::new() }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        self.platt.save(prefix, out);
        crate::binary::put(out, prefix, "edges", self.edges.clone());
        crate::binary::put(out, prefix, "values", self.values.clone());
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let platt = PlattMap::load(prefix, parameters)?;
        let edges = crate::binary::table(parameters, prefix, "edges")?.to_vec();
        let values = crate::binary::table(parameters, prefix, "values")?.to_vec();
        if edges.len() != values.len() || edges.windows(2).any(|e| e[0] >= e[1]) {
            return Err(FitError::Format(format!(
                "scaling-binning map `{prefix}` needs increasing edges, one value each"
            )));
        }
        Ok(Self { platt, edges, values })
    }
}

/// Settings of a scaling-binning fit.
#[derive(Config, Debug, PartialEq)]
pub struct ScalingBinningConfig {
    /// B, the bins asked for (fewer result where scaled scores repeat).
    #[config(default = 15)]
    pub n_bins: usize,
    /// Fit Platt on the first half of the rows and the bins on the second (the paper's split).
    #[config(default = false)]
    pub split: bool,
    /// One-vs-rest (marginal) or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl BinaryFit for ScalingBinningConfig {
    type Map = ScalingBinningMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Repeated;

    fn check(&self) -> Result<()> {
        if self.n_bins == 0 {
            return Err(FitError::InvalidConfig("n_bins must be at least 1".into()));
        }
        Ok(())
    }

    fn fit_binary(
        &self,
        scores: &[f64],
        outcomes: &[bool],
    ) -> Result<BinaryFitted<ScalingBinningMap>> {
        let n = scores.len();
        let half = if self.split { n / 2 } else { n };
        if n < 2 || (self.split && n < 4) {
            return Err(FitError::UnsuitableInput {
                method: Method::ScalingBinning.name().into(),
                reason: format!("{n} calibration scores are too few"),
            });
        }
        let platt_fit = PlattMapConfig::new().with_soft_targets(false);
        let fitted = platt_fit.fit_binary(&scores[..half], &outcomes[..half])?;
        let binned = if self.split { &scores[half..] } else { scores };
        let g: Vec<f64> = binned.iter().map(|&s| fitted.map.predict(s)).collect();
        let BinaryFitted { map: platt, iterations, converged, warnings } = fitted;
        let map = ScalingBinningMap::on_scaled(platt, g, self.n_bins);
        Ok(BinaryFitted { map, iterations, converged, warnings })
    }
}

crate::binary::fit_by_maps!(ScalingBinningConfig, ScalingBinning);
