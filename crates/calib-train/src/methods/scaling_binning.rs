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
//! and top-label forms. Host, f64. Sample weights: Platt's weighted likelihood, weighted
//! group cuts and bin means, and the halves cut at running weight `floor(W / 2)` (`W / 2` for
//! fractions): whole-number weights give the repeated rows' map.

use std::collections::BTreeMap;

use burn::config::Config;
use calib_core::binning::weighted_range_start;
use calib_core::input::SampleWeights;

use super::platt_map::{PlattMap, PlattMapConfig};
use super::sorted_pairs::SortedPairs;
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

    /// The bins of the scaled calibration scores `g` (weighted pairs): edges by
    /// [`equal_mass_upper_edges`], each value the bin's weighted mean of `g`.
    fn on_scaled(platt: PlattMap, g: &SortedPairs, n_bins: usize) -> Self {
        let edges = equal_mass_upper_edges(g, n_bins);
        let mut lo = 0;
        let values = (0..edges.len())
            .map(|j| {
                let hi = if j + 1 == edges.len() { g.scores.len() } else { g.at_most(edges[j]) };
                let (weight, sum) = (g.sums(lo, hi).0, g.score_sum(lo, hi));
                lo = hi;
                match j {
                    _ if weight > 0.0 => sum / weight,
                    0 => edges[0] / 2.0,
                    _ => (edges[j] + edges[j - 1]) / 2.0,
                }
            })
            .collect();
        Self { platt, edges, values }
    }
}

/// Upper bin edges as `np.array_split` cuts the sorted scaled scores into `min(B, W)` groups
/// (larger groups first) at running weights `c_j` (whole-number weights: the repeated rows'
/// positions; fractional: `j W / groups`), each edge the midpoint of the scores on either
/// side of its cut, the last 1; duplicates dropped.
fn equal_mass_upper_edges(g: &SortedPairs, n_bins: usize) -> Vec<f64> {
    let total = g.total();
    let parts = n_bins.min(total.floor().max(1.0) as usize);
    let (size, extra) = ((total as usize) / parts, (total as usize) % parts);
    let mut edges = Vec::with_capacity(parts);
    let mut end = 0;
    for j in 0..parts - 1 {
        end += size + usize::from(j < extra);
        let c = if g.whole() { end as f64 } else { (j + 1) as f64 * total / parts as f64 };
        let (below, above) = g.around(c);
        edges.push((below + above) / 2.0);
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

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        if self.n_bins == 0 {
            return Err(FitError::InvalidConfig("n_bins must be at least 1".into()));
        }
        Ok(())
    }

    /// Platt on the first half of the rows' weight (all of it without `split`), the bins on
    /// the second half (all): a row straddling the half is split there.
    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<ScalingBinningMap>> {
        if weights.is_none() && !self.split && scores.len() >= 2 {
            // Both steps on every row, as is: no copies of the rows.
            let fitted =
                PlattMapConfig::new().with_soft_targets(false).fit_binary(scores, outcomes)?;
            return Ok(binned(fitted, (scores, outcomes, None), self.n_bins));
        }
        let ones = vec![1.0; scores.len()];
        let w = weights.unwrap_or(&ones);
        let total: f64 = w.iter().sum();
        if total < 2.0 || (self.split && total < 4.0) {
            return Err(FitError::UnsuitableInput {
                method: Method::ScalingBinning.name().into(),
                reason: format!("{total} calibration scores are too few"),
            });
        }
        let whole = SampleWeights::whole_numbers(w);
        let half = if self.split { weighted_range_start(1, total, 2, whole) } else { total };
        let (first, second) = split_at_weight(w, half);
        let second = if self.split { second } else { w.to_vec() };
        let take = |part: &[f64]| -> (Vec<f64>, Vec<bool>, Vec<f64>) {
            let rows = (0..scores.len()).filter(|&i| part[i] > 0.0);
            let mut out = (Vec::new(), Vec::new(), Vec::new());
            rows.for_each(|i| {
                out.0.push(scores[i]);
                out.1.push(outcomes[i]);
                out.2.push(part[i]);
            });
            out
        };
        let platt_fit = PlattMapConfig::new().with_soft_targets(false);
        let (s, o, pw) = take(&first);
        let fitted = match weights {
            None => platt_fit.fit_binary(&s, &o)?,
            Some(_) => platt_fit.fit_weighted(&s, &o, &pw)?,
        };
        let (s, o, bw) = take(&second);
        Ok(binned(fitted, (&s, &o, Some(&bw)), self.n_bins))
    }
}

/// The scaling-binning fit of `n_bins` bins on the rows `(scores, outcomes, weights)` scaled by
/// the Platt map of `fitted` (whose record it keeps).
fn binned(
    fitted: BinaryFitted<PlattMap>,
    (scores, outcomes, weights): (&[f64], &[bool], Option<&[f64]>),
    n_bins: usize,
) -> BinaryFitted<ScalingBinningMap> {
    let g = scaled(&fitted.map, scores);
    let pairs = SortedPairs::new(&g, outcomes, weights);
    let BinaryFitted { map: platt, iterations, converged, warnings, .. } = fitted;
    let map = ScalingBinningMap::on_scaled(platt, &pairs, n_bins);
    BinaryFitted { map, iterations, converged, warnings, training_nll: None }
}

/// `platt`'s output on every score (`predict` itself: its bins must be what an applied map
/// finds), rows shared out over the cores.
fn scaled(platt: &PlattMap, scores: &[f64]) -> Vec<f64> {
    let mut g = vec![0.0; scores.len()];
    calib_kernels::for_row_blocks(&mut g, 1, 65_536, |first, g| {
        g.iter_mut().zip(&scores[first..]).for_each(|(g, &s)| *g = platt.predict(s))
    });
    g
}

/// Each row's weight below running weight `half` (rows in order) and above it: the row
/// straddling `half` is split there, as its repeated copies would be.
fn split_at_weight(weights: &[f64], half: f64) -> (Vec<f64>, Vec<f64>) {
    let mut before = 0.0;
    weights
        .iter()
        .map(|&w| {
            let below = (half - before).clamp(0.0, w);
            before += w;
            (below, w - below)
        })
        .unzip()
}

crate::binary::fit_by_maps!(ScalingBinningConfig, ScalingBinning);

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole-number weights give the repeated rows' map, the split halves included (a row's
    /// copies straddle the half).
    #[test]
    fn whole_weights_fit_the_repeated_rows() {
        let scores: Vec<f64> = (0..41).map(|i| ((i * 17) % 41) as f64 / 41.0 + 0.01).collect();
        let outcomes: Vec<bool> = (0..41).map(|i| (i * 7) % 5 < 2 + i % 2).collect();
        let weights: Vec<f64> = (0..41).map(|i| (1 + i % 3) as f64).collect();
        let (mut s, mut o) = (Vec::new(), Vec::new());
        for i in 0..41 {
            for _ in 0..weights[i] as usize {
                s.push(scores[i]);
                o.push(outcomes[i]);
            }
        }
        for split in [false, true] {
            let c = ScalingBinningConfig::new().with_n_bins(7).with_split(split);
            let a = c.fit_weighted(&scores, &outcomes, &weights).unwrap().map;
            let b = c.fit_binary(&s, &o).unwrap().map;
            assert_eq!(a.edges.len(), b.edges.len(), "split {split}");
            for (x, y) in a.edges.iter().zip(&b.edges).chain(a.values.iter().zip(&b.values)) {
                assert!((x - y).abs() < 1e-9, "split {split}: {x} vs {y}");
            }
        }
    }

    /// A fractional weight is cut where the running weight crosses the half.
    #[test]
    fn halves_split_a_straddling_row() {
        let (first, second) = split_at_weight(&[1.5, 1.0, 2.5], 2.0);
        assert_eq!((first, second), (vec![1.5, 0.5, 0.0], vec![0.0, 0.5, 2.5]));
    }
}
