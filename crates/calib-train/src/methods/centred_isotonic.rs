//! CIR, centred isotonic regression (Oron & Flournoy 2017, "Centered isotonic regression:
//! point and interval estimation for dose-response studies"), as `cir_model` 0.2 computes it
//! (probmetrics' `CenteredIsotonicRegressionCalibrator`).
//!
//! ```text
//! PAV fit of the outcomes on the scores (ties pooled first, as isotonic regression)
//! each block of equal fitted value v over scores s_a <= ... <= s_b, with mean score m:
//!   v in {0, 1}:        the points (s_a, v) and (s_b, v)    (flat stretches at the bounds stay)
//!   the first block:    (s_a, v) and (m, v)                 (the fitted range is kept)
//!   the last block:     (m, v) and (s_b, v)
//!   any other block:    (m, v)
//! m(s) = linear interpolation through the points, constant outside, clipped to [0, 1]
//! ```
//!
//! Between the blocks' centres the map is strictly increasing, where isotonic regression is
//! flat: a block's points no longer share one value. The bounds rule is the paper's and
//! `cir_model`'s; `../shared/CONVENTIONS.md` collapses every block, bounds included (see
//! docs/conventions.md). Host, f64; O(N log N). On rows that live on a GPU the pairs are
//! sorted and pooled there (isotonic regression's device path), each block read back with
//! its mean score (`DevicePairs::pooled_with_means`), and the map applies there too.

use std::collections::BTreeMap;

use burn::config::Config;

use super::isotonic::{IsotonicMap, SortedOutcomes, weighted_sorted};
#[cfg(feature = "wgpu")]
use super::pav_blocks::fit_pooled;
use super::pav_blocks::{Block, push, tied_points};
use crate::api::{Method, SavedTensor};
#[cfg(feature = "wgpu")]
use crate::binary::DeviceFit;
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::Result;

/// A fitted CIR map: its points, interpolated.
#[derive(Debug, Clone, PartialEq)]
pub struct CentredIsotonicMap(IsotonicMap);

/// Centred isotonic regression as a calibrator ([`MapCalibrator`] of [`CentredIsotonicMap`]s).
pub type CentredIsotonicRegression = MapCalibrator<CentredIsotonicMap>;

impl CentredIsotonicMap {
    /// The points and their values.
    pub fn points(&self) -> (&[f64], &[f64]) {
        self.0.thresholds()
    }

    /// Fits on `(score, outcome)` pairs with sample weights (`None`: all 1): weighted PAV,
    /// each block's centre the weighted mean of its scores.
    pub(crate) fn fit(scores: &[f64], outcomes: &[f64], weights: Option<&[f64]>) -> Self {
        Self::from_sorted(weighted_sorted(scores, outcomes, weights))
    }

    /// [`Self::fit`] on 0/1 outcomes without weights: the pairs sorted as two lists of
    /// integer keys ([`SortedOutcomes`], as isotonic regression); the same points.
    pub(crate) fn fit_outcomes(scores: &[f64], outcomes: &[bool]) -> Self {
        Self::from_sorted(SortedOutcomes::new(scores, outcomes).triples())
    }

    /// The fit on `(score, outcome, weight)` triples in score order: ties merged and blocks
    /// pooled with their exact sums ([`tied_points`], [`push`]; whole numbers for 0/1
    /// outcomes and whole weights, so that blocks of one value have one value bit for bit),
    /// each block also summing its points' scores times their weights, for its centre.
    fn from_sorted(triples: impl IntoIterator<Item = (f64, f64, f64)>) -> Self {
        let (mut blocks, mut score_sums) = (Vec::new(), Vec::<f64>::new());
        for (x, sum, weight) in tied_points(triples) {
            let mut score_sum = x * weight;
            for _ in 0..push(&mut blocks, Block::point((x, sum, weight))) {
                score_sum += score_sums.pop().expect("one score sum per block");
            }
            score_sums.push(score_sum);
        }
        Self::through_blocks(&blocks, &score_sums)
    }

    /// The map of PAV's pooled `blocks` in order, with each block's sum of its points' scores
    /// times their weights: the runs of equal fitted value, each centred on its weighted
    /// mean score.
    fn through_blocks(blocks: &[Block], score_sums: &[f64]) -> Self {
        let mut at = 0;
        let runs = Block::runs(blocks).map(|run| {
            let sums = &score_sums[at..at + run.len()];
            at += run.len();
            let weight: f64 = run.iter().map(|b| b.weight).sum();
            let mean = sums.iter().sum::<f64>() / weight;
            Run { value: run[0].value(), first: run[0].first, last: run[run.len() - 1].last, mean }
        });
        Self::through_runs(&runs.collect::<Vec<_>>())
    }

    /// The map of one problem's blocks pooled on the device ([`DevicePairs::pooled_with_means`]
    /// ), each centred on its mean score.
    ///
    /// [`DevicePairs::pooled_with_means`]: calib_core::engine::DevicePairs::pooled_with_means
    #[cfg(feature = "wgpu")]
    fn of_device_blocks(pooled: &[calib_core::engine::PooledBlock]) -> Self {
        let blocks: Vec<Block> = pooled.iter().map(Block::of_device).collect();
        let score_sums: Vec<f64> = (pooled.iter())
            .map(|b| b.mean.unwrap_or(f64::from(b.first)) * f64::from(b.count))
            .collect();
        Self::through_blocks(&blocks, &score_sums)
    }

    /// The map through the centred points of the runs of equal fitted value, in order.
    fn through_runs(runs: &[Run]) -> Self {
        let last = runs.len() - 1;
        let mut points: Vec<(f64, f64)> = Vec::with_capacity(runs.len() + 4);
        for (b, &Run { value: v, first, last: end, mean }) in runs.iter().enumerate() {
            if v == 0.0 || v == 1.0 {
                points.extend([(first, v), (end, v)]);
            } else if b == 0 {
                points.extend([(first, v), (mean, v)]);
            } else if b == last {
                points.extend([(mean, v), (end, v)]);
            } else {
                points.push((mean, v));
            }
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        points.dedup();
        // A mean that rounds onto a neighbour's score: keep the pair's average value (as the
        // reference's second isotonic fit pools tied points).
        let mut merged: Vec<(f64, f64, f64)> = Vec::with_capacity(points.len());
        for (px, py) in points {
            match merged.last_mut() {
                Some((lx, sum, count)) if *lx == px => {
                    *sum += py;
                    *count += 1.0;
                }
                _ => merged.push((px, py, 1.0)),
            }
        }
        let x = merged.iter().map(|p| p.0).collect();
        let y = merged.iter().map(|p| p.1 / p.2).collect();
        Self(IsotonicMap::through(x, y))
    }
}

/// A run of PAV points with one fitted value: its value, first and last score, and mean score.
#[derive(Clone, Copy)]
struct Run {
    value: f64,
    first: f64,
    last: f64,
    mean: f64,
}

impl BinaryMap for CentredIsotonicMap {
    const METHOD: Method = Method::Cir;

    fn predict(&self, s: f64) -> f64 {
        self.0.predict(s).clamp(0.0, 1.0)
    }

    /// The interpolation's searches side by side ([`IsotonicMap`]'s), then the clip: the
    /// same values as [`Self::predict`].
    fn predict_fast_into(&self, scores: &mut [f64]) {
        self.0.predict_fast_into(scores);
        scores.iter_mut().for_each(|s| *s = s.clamp(0.0, 1.0));
    }

    fn identity() -> Self {
        Self(IsotonicMap::identity())
    }

    /// The interpolation's table: between values in `[0, 1]` the clip changes nothing (a
    /// loaded map with a value outside applies on the host).
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        self.points().1.iter().all(|v| (0.0..=1.0).contains(v)).then(|| self.0.device_table())?
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        self.0.save(prefix, out);
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        IsotonicMap::load(prefix, parameters).map(Self)
    }
}

/// Settings of a centred-isotonic-regression fit.
#[derive(Config, Debug, PartialEq)]
pub struct CentredIsotonicRegressionConfig {
    /// One-vs-rest or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl BinaryFit for CentredIsotonicRegressionConfig {
    type Map = CentredIsotonicMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<CentredIsotonicMap>> {
        let map = match weights {
            None => CentredIsotonicMap::fit_outcomes(scores, outcomes),
            Some(w) => {
                let o: Vec<f64> = outcomes.iter().map(|&o| f64::from(u8::from(o))).collect();
                CentredIsotonicMap::fit(scores, &o, Some(w))
            }
        };
        Ok(BinaryFitted::exact(map))
    }

    fn sorts_on_device(&self, _n_pairs: usize) -> bool {
        true
    }

    /// The maps through the device's pooled blocks and their mean scores: each the fit on
    /// the problem's f32 scores to f32 rounding of the centres. The training NLL is then the
    /// maps' own, applied on the device.
    #[cfg(feature = "wgpu")]
    fn fit_sorted(
        &self,
        pairs: &calib_core::engine::DevicePairs,
    ) -> Option<Result<DeviceFit<CentredIsotonicMap>>> {
        let map = CentredIsotonicMap::of_device_blocks;
        Some(fit_pooled(pairs.pooled_with_means(), map, false))
    }
}

crate::binary::fit_by_maps!(CentredIsotonicRegressionConfig, CentredIsotonicRegression);

#[cfg(test)]
mod tests {
    use super::*;

    /// cir_model's docstring example: x = 1..4, y = 1, 21, 41, 34 -> 1, 21, 32, 37.5 (on
    /// outcomes scaled into [0, 1]: / 100).
    #[test]
    fn collapses_blocks_to_their_centres() {
        let m = CentredIsotonicMap::fit(&[0.1, 0.2, 0.3, 0.4], &[0.01, 0.21, 0.41, 0.34], None);
        let got: Vec<f64> = [0.1, 0.2, 0.3, 0.4].iter().map(|&s| m.predict(s)).collect();
        for (g, w) in got.iter().zip([0.01, 0.21, 0.32, 0.375]) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
    }

    /// The side-by-side searches give `predict`'s bits, inside, outside and on the points.
    #[test]
    fn fast_prediction_is_prediction() {
        let s = [0.05, 0.1, 0.2, 0.3, 0.35, 0.5, 0.6, 0.7, 0.9, 0.95];
        let o = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0];
        let m = CentredIsotonicMap::fit(&s, &o, None);
        let mut grid: Vec<f64> = (0..=103).map(|i| -0.01 + f64::from(i) / 100.0).collect();
        grid.extend(s);
        let want: Vec<f64> = grid.iter().map(|&g| m.predict(g)).collect();
        m.predict_fast_into(&mut grid);
        assert_eq!(grid, want);
    }

    /// Flat stretches at 0 and 1 stay flat; between them the map rises strictly.
    #[test]
    fn keeps_bounds_flat_and_rises_strictly_between() {
        let s = [0.05, 0.1, 0.2, 0.3, 0.35, 0.5, 0.6, 0.7, 0.9, 0.95];
        let o = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0];
        let m = CentredIsotonicMap::fit(&s, &o, None);
        assert_eq!((m.predict(0.05), m.predict(0.1)), (0.0, 0.0));
        assert_eq!((m.predict(0.9), m.predict(0.95)), (1.0, 1.0));
        let grid: Vec<f64> = (0..=80).map(|i| 0.1 + 0.6 * f64::from(i) / 80.0).collect();
        for w in grid.windows(2) {
            assert!(m.predict(w[1]) > m.predict(w[0]), "{w:?}");
        }
    }

    /// Unweighted 0/1 pairs, sorted as integer keys and pooled with whole-number sums, give
    /// the general fit's points (their values and centres to rounding), ties and rare
    /// outcomes included.
    #[test]
    fn outcomes_fit_as_the_general_fit() {
        let hash =
            |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
        for (n, rate, grid) in [(2000, 0.5, 0.0), (3000, 0.02, 0.0), (2500, 0.4, 100.0)] {
            let scores: Vec<f64> = (0..n)
                .map(|i| {
                    let s = hash(i);
                    if grid > 0.0 { (s * grid).round() / grid } else { s }
                })
                .collect();
            let outcomes: Vec<bool> =
                (0..n).map(|i| hash(i + n) < rate * (0.5 + scores[i as usize])).collect();
            let as_f64: Vec<f64> = outcomes.iter().map(|&o| f64::from(u8::from(o))).collect();
            let (fast, general) = (
                CentredIsotonicMap::fit_outcomes(&scores, &outcomes),
                CentredIsotonicMap::fit(&scores, &as_f64, None),
            );
            let ((fx, fy), (gx, gy)) = (fast.points(), general.points());
            assert_eq!(fx.len(), gx.len(), "{n} pairs at rate {rate}");
            for (a, b) in fx.iter().zip(gx).chain(fy.iter().zip(gy)) {
                assert!((a - b).abs() <= 1e-14 * b.abs().max(1.0), "{a} vs {b}");
            }
        }
    }
}
