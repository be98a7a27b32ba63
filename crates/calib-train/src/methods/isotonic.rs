//! Isotonic regression (Zadrozny & Elkan 2002) by pool-adjacent-violators.
//!
//! ```text
//! m = argmin_{m non-decreasing} sum_i (y_i - m(s_i))^2      over the calibration pairs
//! m(s) = linear interpolation between the fitted points, clipped to the end values outside
//! ```
//!
//! Rules (`docs/conventions.md`, "Isotonic regression"): pairs sorted by score; scores closer
//! than 1e-15 to the first of their run are one point (outcomes averaged, weights summed), as
//! scikit-learn's `_make_unique` merges them; points whose value equals both neighbours' are
//! dropped (they change no prediction). This equals scikit-learn's
//! `IsotonicRegression(out_of_bounds="clip")` and, one-vs-rest with rows renormalised,
//! `CalibratedClassifierCV(method="isotonic")`. Host, f64; O(N log N) for the sort, then linear.
//!
//! # Example
//! ```
//! use burn::tensor::{Device, Int, Tensor};
//! use calib_core::input::Predictions;
//! use calib_train::{BinaryMap, Fit, IsotonicRegressionConfig};
//!
//! let device = Device::flex();
//! let scores = Tensor::<1>::from_floats([0.1, 0.3, 0.35, 0.6, 0.8, 0.9], &device);
//! let labels = Tensor::<1, Int>::from_ints([0, 1, 0, 1, 1, 1], &device);
//! let preds = Predictions::binary(scores, labels)?;
//! let fitted = IsotonicRegressionConfig::new().fit(&preds)?;
//! let map = &fitted.calibrator.maps()[0];
//! assert_eq!(map.thresholds().1, &[0.0, 0.5, 0.5, 1.0, 1.0]);
//! assert_eq!(map.predict(0.32), 0.5);
//! # Ok::<(), calib_train::FitError>(())
//! ```

use std::collections::BTreeMap;

use burn::config::Config;

use crate::api::{Method, SavedTensor};
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::{FitError, Result};

/// scikit-learn's tie tolerance (`np.finfo(np.float64).resolution`).
const TIE: f64 = 1e-15;

/// A fitted isotonic map: increasing thresholds `x` with values `y`.
#[derive(Debug, Clone, PartialEq)]
pub struct IsotonicMap {
    x: Vec<f64>,
    y: Vec<f64>,
}

/// Isotonic regression as a calibrator ([`MapCalibrator`] of [`IsotonicMap`]s).
pub type IsotonicRegression = MapCalibrator<IsotonicMap>;

impl IsotonicMap {
    /// The thresholds and their values.
    pub fn thresholds(&self) -> (&[f64], &[f64]) {
        (&self.x, &self.y)
    }

    /// Fits on `(score, outcome-as-f64)` pairs with sample weights (`None`: all 1): ties and
    /// blocks pool weighted means.
    pub(crate) fn fit(scores: &[f64], outcomes: &[f64], weights: Option<&[f64]>) -> Self {
        Self::from_sorted(weighted_sorted(scores, outcomes, weights))
    }

    /// [`Self::fit`] on 0/1 outcomes without weights, sorted as [`SortedOutcomes`]: equal
    /// scores are one point whose count and positives do not depend on their order, so the
    /// same map, bit for bit.
    pub(crate) fn fit_outcomes(scores: &[f64], outcomes: &[bool]) -> Self {
        Self::from_sorted(SortedOutcomes::new(scores, outcomes).triples())
    }

    /// The fit on `(score, outcome, weight)` triples in score order: ties merged, PAV, the
    /// trimmed map.
    fn from_sorted(triples: impl IntoIterator<Item = (f64, f64, f64)>) -> Self {
        let (x, ys, w) = merge_ties(triples);
        through_blocks(&x, &pooled_blocks(&ys, &w))
    }

    /// For each `s`, the last threshold at or below it (0 below the first), by binary searches
    /// in lockstep whose steps compile to conditional moves (a map is read at every row of a
    /// one-vs-rest record: mispredicted branches were most of that pass).
    #[inline(always)]
    fn search(&self, s: &[f64], at: &mut [usize]) {
        let x = &self.x;
        at.fill(0);
        let mut len = x.len();
        while len > 1 {
            let half = len / 2;
            for (j, &s) in at.iter_mut().zip(s) {
                *j = if x[*j + half] <= s { *j + half } else { *j };
            }
            len -= half;
        }
    }

    /// The interpolation at `s` between thresholds `j` and `j + 1`.
    #[inline(always)]
    fn between(&self, s: f64, j: usize) -> f64 {
        let (x, y) = (&self.x, &self.y);
        let slope = (y[j + 1] - y[j]) / (x[j + 1] - x[j]);
        slope * (s - x[j]) + y[j]
    }

    /// The map through strictly increasing `x` with values `y` (interpolated, constant
    /// outside).
    pub(crate) fn through(x: Vec<f64>, y: Vec<f64>) -> Self {
        debug_assert!(x.len() == y.len() && x.windows(2).all(|p| p[0] < p[1]));
        Self { x, y }
    }
}

/// `(score, outcome, weight)` triples sorted by score, stably (a radix sort; sorting the
/// triples themselves, not indices, keeps the sort in cache).
pub(crate) fn weighted_sorted(
    scores: &[f64],
    outcomes: &[f64],
    weights: Option<&[f64]>,
) -> Vec<(f64, f64, f64)> {
    let weight = |i: usize| weights.map_or(1.0, |w| w[i]);
    let mut triples: Vec<(f64, f64, f64)> =
        (0..scores.len()).map(|i| (scores[i], outcomes[i], weight(i))).collect();
    calib_kernels::sort_by_f64_key(&mut triples, |t| t.0);
    triples
}

/// Unweighted `(score, 0/1 outcome)` pairs in score order, kept as the positive and the
/// negative outcomes' scores, each sorted (8-byte keys rather than triples; the two sorts on
/// two cores when large). Read merged, they are the pairs sorted stably, but for the order of
/// exactly equal scores, which no sum over them sees.
pub(crate) struct SortedOutcomes {
    positive: Vec<f64>,
    negative: Vec<f64>,
}

impl SortedOutcomes {
    pub(crate) fn new(scores: &[f64], outcomes: &[bool]) -> Self {
        let mut positive: Vec<f64> = Vec::with_capacity(scores.len());
        let mut negative: Vec<f64> = Vec::with_capacity(scores.len());
        for (&s, &o) in scores.iter().zip(outcomes) {
            if o { positive.push(s) } else { negative.push(s) }
        }
        let sort = |v: &mut Vec<f64>| calib_kernels::sort_by_f64_key(v, |&s| s);
        if calib_kernels::threads() > 1 && scores.len() >= PARALLEL_SORT {
            std::thread::scope(|scope| {
                scope.spawn(|| sort(&mut positive));
                sort(&mut negative);
            });
        } else {
            sort(&mut positive);
            sort(&mut negative);
        }
        Self { positive, negative }
    }

    /// `(score, outcome, 1)` in `total_cmp` order of the scores.
    pub(crate) fn triples(&self) -> Merged<'_> {
        Merged {
            positive: self.positive.iter().peekable(),
            negative: self.negative.iter().peekable(),
        }
    }
}

/// [`SortedOutcomes::triples`].
pub(crate) struct Merged<'a> {
    positive: std::iter::Peekable<std::slice::Iter<'a, f64>>,
    negative: std::iter::Peekable<std::slice::Iter<'a, f64>>,
}

impl Iterator for Merged<'_> {
    type Item = (f64, f64, f64);

    fn next(&mut self) -> Option<Self::Item> {
        let positive_first = match (self.positive.peek(), self.negative.peek()) {
            (Some(p), Some(n)) => p.total_cmp(n).is_lt(),
            (p, _) => p.is_some(),
        };
        if positive_first {
            self.positive.next().map(|&s| (s, 1.0, 1.0))
        } else {
            self.negative.next().map(|&s| (s, 0.0, 1.0))
        }
    }
}

/// Binary searches [`IsotonicMap`]'s `predict_fast_into` runs side by side.
const SEARCHES: usize = 8;

/// From this many pairs on, [`SortedOutcomes`] sorts on two cores.
const PARALLEL_SORT: usize = 1 << 16;

/// Unique scores (within [`TIE`] of a run's first score) with their weighted mean outcome and
/// total weight (the count, for unit weights), from `(score, outcome, weight)` triples in
/// score order.
pub(crate) fn merge_ties(
    pairs: impl IntoIterator<Item = (f64, f64, f64)>,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut x, mut y, mut w) = (Vec::new(), Vec::new(), Vec::<f64>::new());
    let mut sum = 0.0;
    for (s, outcome, weight) in pairs {
        if x.last().is_none_or(|&first| s - first >= TIE) {
            if let Some(n) = w.last() {
                y.push(sum / n);
            }
            x.push(s);
            w.push(0.0);
            sum = 0.0;
        }
        sum += weight * outcome;
        *w.last_mut().expect("pushed") += weight;
    }
    if let Some(n) = w.last() {
        y.push(sum / n);
    }
    (x, y, w)
}

/// Weighted pool-adjacent-violators: the non-decreasing fit of `y` with weights `w` (all
/// positive).
pub(crate) fn pool_adjacent_violators(y: &[f64], w: &[f64]) -> Vec<f64> {
    let mut fitted = Vec::with_capacity(y.len());
    for &(s, w, n) in &pooled_blocks(y, w) {
        fitted.resize(fitted.len() + n, s / w);
    }
    fitted
}

/// The pooled blocks of weighted pool-adjacent-violators, in order: `(weighted sum, weight,
/// points)`, each block's value its sum over its weight.
fn pooled_blocks(y: &[f64], w: &[f64]) -> Vec<(f64, f64, usize)> {
    // Blocks merged while the last two are out of order: `s0 / w0 > s1 / w1`, compared as
    // `s0 w1 > s1 w0`. The comparisons chain from one row to the next, and a division's
    // latency in each was most of the fit's time; each block's mean is divided once, at the
    // end.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(y.len());
    for (&yi, &wi) in y.iter().zip(w) {
        blocks.push((yi * wi, wi, 1));
        while blocks.len() > 1 {
            let (s1, w1, n1) = blocks[blocks.len() - 1];
            let (s0, w0, n0) = blocks[blocks.len() - 2];
            if s0 * w1 <= s1 * w0 {
                break;
            }
            blocks.pop();
            *blocks.last_mut().expect("two blocks") = (s0 + s1, w0 + w1, n0 + n1);
        }
    }
    blocks
}

/// The map through the points `x` fitted by `blocks`, with scikit-learn's `trim_duplicates`:
/// of each run of points with one value only the first and the last are kept (the inner ones
/// equal both neighbours), read from the blocks without spreading their values over the
/// points.
fn through_blocks(x: &[f64], blocks: &[(f64, f64, usize)]) -> IsotonicMap {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let (mut first, mut i) = (0, 0);
    while i < blocks.len() {
        let value = blocks[i].0 / blocks[i].1;
        let mut end = first + blocks[i].2;
        i += 1;
        while i < blocks.len() && blocks[i].0 / blocks[i].1 == value {
            end += blocks[i].2;
            i += 1;
        }
        xs.push(x[first]);
        ys.push(value);
        if end - 1 > first {
            xs.push(x[end - 1]);
            ys.push(value);
        }
        first = end;
    }
    IsotonicMap { x: xs, y: ys }
}

impl BinaryMap for IsotonicMap {
    const METHOD: Method = Method::Isotonic;

    /// Linear interpolation between the thresholds (numpy's `interp`), clipped outside.
    fn predict(&self, s: f64) -> f64 {
        let last = self.x.len() - 1;
        if s <= self.x[0] {
            return self.y[0];
        }
        if s >= self.x[last] {
            return self.y[last];
        }
        let mut j = [0];
        self.search(&[s], &mut j);
        self.between(s, j[0])
    }

    /// [`BinaryMap::predict`] of every value, [`SEARCHES`] binary searches side by side (one
    /// search's steps each wait on the last load; independent ones overlap): the same
    /// values.
    fn predict_fast_into(&self, scores: &mut [f64]) {
        let (x, y) = (&self.x, &self.y);
        let last = x.len() - 1;
        let mut at = [0; SEARCHES];
        for chunk in scores.chunks_mut(SEARCHES) {
            self.search(chunk, &mut at[..chunk.len()]);
            for (s, &j) in chunk.iter_mut().zip(&at) {
                *s = if *s <= x[0] {
                    y[0]
                } else if *s >= x[last] {
                    y[last]
                } else {
                    self.between(*s, j)
                };
            }
        }
    }

    fn identity() -> Self {
        Self { x: vec![0.0, 1.0], y: vec![0.0, 1.0] }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "x", self.x.clone());
        crate::binary::put(out, prefix, "y", self.y.clone());
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let x = crate::binary::table(parameters, prefix, "x")?.to_vec();
        let y = crate::binary::table(parameters, prefix, "y")?.to_vec();
        if x.is_empty() || x.len() != y.len() || x.windows(2).any(|p| p[0] >= p[1]) {
            return Err(FitError::Format(format!(
                "isotonic map `{prefix}` needs equally long, strictly increasing thresholds"
            )));
        }
        Ok(Self { x, y })
    }
}

/// Settings of an isotonic-regression fit.
#[derive(Config, Debug, PartialEq)]
pub struct IsotonicRegressionConfig {
    /// One-vs-rest or top-label on K-class input.
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl BinaryFit for IsotonicRegressionConfig {
    type Map = IsotonicMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<IsotonicMap>> {
        if weights.is_none() {
            return Ok(BinaryFitted::exact(IsotonicMap::fit_outcomes(scores, outcomes)));
        }
        let o: Vec<f64> = outcomes.iter().map(|&o| f64::from(u8::from(o))).collect();
        Ok(BinaryFitted::exact(IsotonicMap::fit(scores, &o, weights)))
    }
}

crate::binary::fit_by_maps!(IsotonicRegressionConfig, IsotonicRegression);

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked by hand: (0.1, 0), (0.3, 1), (0.35, 0), (0.6, 1) -> 0, 0.5, 0.5, 1.
    #[test]
    fn pools_violators_and_interpolates() {
        let m = IsotonicMap::fit(&[0.6, 0.1, 0.35, 0.3], &[1.0, 0.0, 0.0, 1.0], None);
        assert_eq!(m.thresholds(), (&[0.1, 0.3, 0.35, 0.6][..], &[0.0, 0.5, 0.5, 1.0][..]));
        assert_eq!(m.predict(0.0), 0.0);
        assert!((m.predict(0.2) - 0.25).abs() < 1e-15);
        assert_eq!(m.predict(0.32), 0.5);
        assert_eq!(m.predict(0.95), 1.0);
    }

    /// Weighted PAV by hand: (0.1, 1, w 1), (0.2, 0, w 3), (0.3, 1, w 0.5): the first two
    /// pool to (1 + 0) / 4 = 0.25, the third stays at 1.
    #[test]
    fn weighted_pav_pools_weighted_means() {
        let m = IsotonicMap::fit(&[0.1, 0.2, 0.3], &[1.0, 0.0, 1.0], Some(&[1.0, 3.0, 0.5]));
        assert_eq!((m.predict(0.1), m.predict(0.2), m.predict(0.3)), (0.25, 0.25, 1.0));
    }

    /// Sorting the positives and negatives apart gives the map of the triples' sort, bit for
    /// bit, ties across the two outcomes included.
    #[test]
    fn outcomes_sorted_apart_give_the_same_map() {
        for n in [5, 700, 3000, 70_000] {
            let scores: Vec<f64> = (0..n).map(|i| ((i * 7919) % 997) as f64 / 997.0).collect();
            let outcomes: Vec<bool> = (0..n).map(|i| (i * 31 + i / 7) % 5 < 2).collect();
            let y: Vec<f64> = outcomes.iter().map(|&o| f64::from(u8::from(o))).collect();
            let want = IsotonicMap::fit(&scores, &y, None);
            assert_eq!(IsotonicMap::fit_outcomes(&scores, &outcomes), want, "n = {n}");
        }
    }

    /// The map read from the blocks is the spread fit trimmed (scikit-learn's rule).
    #[test]
    fn blocks_give_the_trimmed_fit() {
        let (y, w) = ([0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5, 1.0, 0.0, 1.0], [1.0; 11]);
        let x: Vec<f64> = (0..11).map(f64::from).collect();
        let fitted = pool_adjacent_violators(&y, &w);
        let keep = |i: usize| {
            i == 0 || i == 10 || fitted[i] != fitted[i - 1] || fitted[i] != fitted[i + 1]
        };
        let kept: Vec<usize> = (0..11).filter(|&i| keep(i)).collect();
        let want = IsotonicMap {
            x: kept.iter().map(|&i| x[i]).collect(),
            y: kept.iter().map(|&i| fitted[i]).collect(),
        };
        assert_eq!(through_blocks(&x, &pooled_blocks(&y, &w)), want);
    }

    #[test]
    fn ties_are_one_point() {
        let m = IsotonicMap::fit(&[0.5, 0.5, 0.5, 0.7], &[1.0, 0.0, 0.0, 1.0], None);
        assert_eq!(m.thresholds(), (&[0.5, 0.7][..], &[1.0 / 3.0, 1.0][..]));
    }
}
