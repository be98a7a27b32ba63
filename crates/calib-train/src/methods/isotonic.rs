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
//! `CalibratedClassifierCV(method="isotonic")`. Host, f64; O(N log N) for the sort, then linear
//! (O(N log P) where the P positives are rare: only they are sorted; from 2^16 unweighted pairs
//! on, only the pairs near the blocks' ends are sorted, the others counted in buckets of
//! scores, [`bucketed_blocks`]).
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
#[cfg(feature = "wgpu")]
use crate::binary::DeviceFit;
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::{FitError, Result};

use super::key_guide::KeyGuide;
#[cfg(feature = "wgpu")]
use super::pav_blocks::fit_pooled;
use super::pav_blocks::{Block, TIE, pooled_blocks, push, tied_points};
use super::score_buckets::bucketed_blocks;

/// A fitted isotonic map: increasing thresholds `x` with values `y` (and the slopes between
/// them, computed once rather than at every prediction).
#[derive(Debug, Clone, PartialEq)]
pub struct IsotonicMap {
    x: Vec<f64>,
    y: Vec<f64>,
    slopes: Vec<f64>,
    /// The thresholds' bucket table, for predictions of many scores (`None`: too crowded).
    guide: Option<KeyGuide>,
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
    /// same map, bit for bit; with the pairs' mean NLL through it ([`blocks_nll`]).
    pub(crate) fn fit_outcomes(scores: &[f64], outcomes: &[bool]) -> BinaryFitted<Self> {
        let bucketed = || (scores.len() >= BUCKETED).then(|| bucketed_blocks(scores, outcomes));
        let blocks = rare_positive_blocks(scores, outcomes)
            .or_else(|| bucketed().flatten())
            .unwrap_or_else(|| SortedOutcomes::new(scores, outcomes).blocks());
        let mut fitted = BinaryFitted::exact(through_blocks(&blocks));
        fitted.training_nll = Some(blocks_nll(&blocks));
        fitted
    }

    /// The fit on `(score, outcome, weight)` triples in score order: ties merged and pooled
    /// in one pass (no array per point), the trimmed map read from the blocks.
    fn from_sorted(triples: impl IntoIterator<Item = (f64, f64, f64)>) -> Self {
        through_blocks(&pooled_blocks(tied_points(triples)))
    }

    /// For each `s`, the last threshold at or below it (0 below the first), by binary searches
    /// in lockstep whose steps compile to conditional moves (a map is read at every row of a
    /// one-vs-rest record: mispredicted branches were most of that pass), the `N` positions
    /// held in registers (a slice's were stored and reloaded at every step).
    #[inline(always)]
    fn search<const N: usize>(&self, s: &[f64; N]) -> [usize; N] {
        let x = &self.x;
        let mut at = [0; N];
        let mut len = x.len();
        while len > 1 {
            let half = len / 2;
            for k in 0..N {
                at[k] = if x[at[k] + half] <= s[k] { at[k] + half } else { at[k] };
            }
            len -= half;
        }
        at
    }

    /// The interpolation at `s` between thresholds `j` and `j + 1`.
    #[inline(always)]
    fn between(&self, s: f64, j: usize) -> f64 {
        self.slopes[j] * (s - self.x[j]) + self.y[j]
    }

    /// The map through strictly increasing `x` with values `y` (interpolated, constant
    /// outside).
    pub(crate) fn through(x: Vec<f64>, y: Vec<f64>) -> Self {
        debug_assert!(x.len() == y.len() && x.windows(2).all(|p| p[0] < p[1]));
        let slopes = x.windows(2).zip(y.windows(2)).map(|(x, y)| (y[1] - y[0]) / (x[1] - x[0]));
        let slopes = slopes.collect();
        let guide = KeyGuide::new(&x);
        Self { x, y, slopes, guide }
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
/// negative outcomes' scores, each sorted as order keys ([`calib_kernels::order_key`]: 8-byte
/// integers, whose sort beats a radix sort of 10^6 probabilities; the two sorts on two cores
/// when large). Read merged, they are the pairs sorted stably, but for the order of exactly
/// equal scores, which no sum over them sees.
pub(crate) struct SortedOutcomes {
    positive: Vec<u64>,
    negative: Vec<u64>,
}

impl SortedOutcomes {
    pub(crate) fn new(scores: &[f64], outcomes: &[bool]) -> Self {
        // One outcome's scores as sorted keys: each of the two reads every pair (on two cores
        // the reading, its fresh pages and the sorts all run side by side).
        let keys = |outcome: bool| {
            // Room for every pair: only the pages written are ever touched.
            let mut keys: Vec<u64> = Vec::with_capacity(scores.len());
            for (&s, &o) in scores.iter().zip(outcomes) {
                if o == outcome {
                    keys.push(calib_kernels::order_key(s));
                }
            }
            keys.sort_unstable();
            keys
        };
        let (positive, negative) = if calib_kernels::threads() > 1 && scores.len() >= PARALLEL_SORT
        {
            std::thread::scope(|scope| {
                let positive = scope.spawn(|| keys(true));
                let negative = keys(false);
                (positive.join().expect("the positive outcomes' sort"), negative)
            })
        } else {
            (keys(true), keys(false))
        };
        Self { positive, negative }
    }

    /// `(score, outcome, 1)` in `total_cmp` order of the scores (a negative outcome first
    /// among equal scores).
    pub(crate) fn triples(&self) -> Merged<'_> {
        Merged { positive: &self.positive, negative: &self.negative }
    }

    /// The pooled blocks of the pairs ([`pooled_blocks`] of their [`tied_points`]), pooled in
    /// two halves on two cores when large, and the second half's blocks then pushed onto the
    /// first's: every sum a whole number (0/1 outcomes, ties summed exactly) and fewer than
    /// 2^26 pairs, pooling in any order reaches the same blocks, bit for bit.
    fn blocks(&self) -> Vec<Block> {
        let n = self.positive.len() + self.negative.len();
        let parallel = calib_kernels::threads() > 1 && (PARALLEL_SORT..1 << 26).contains(&n);
        match parallel.then(|| self.split_near(n / 2)).flatten() {
            Some(half) => self.pooled_halves(half),
            None => pooled_blocks(tied_points(self.triples())),
        }
    }

    /// The blocks pooled before and after `half` on two cores, then joined.
    fn pooled_halves(&self, half: (usize, usize)) -> Vec<Block> {
        let pool = |merged: Merged<'_>| pooled_blocks(tied_points(merged));
        let (mut blocks, second) = std::thread::scope(|scope| {
            let second = scope.spawn(|| pool(self.after(half)));
            (pool(self.before(half)), second.join().expect("the second half's pooling"))
        });
        for block in second {
            push(&mut blocks, block);
        }
        blocks
    }

    /// The first `i` positive and `j` negative keys: the merged order's first `i + j` pairs.
    fn before(&self, (i, j): (usize, usize)) -> Merged<'_> {
        Merged { positive: &self.positive[..i], negative: &self.negative[..j] }
    }

    /// The pairs after [`Self::before`].
    fn after(&self, (i, j): (usize, usize)) -> Merged<'_> {
        Merged { positive: &self.positive[i..], negative: &self.negative[j..] }
    }

    /// A split `(i, j)` of the merged order at or shortly after its `h`-th pair where the
    /// next score is at least [`TIE`] above the last one before it, so that it starts a new
    /// point whichever the earlier pairs; `None` when no such gap is near.
    fn split_near(&self, h: usize) -> Option<(usize, usize)> {
        let (p, n) = (&self.positive, &self.negative);
        // The merge path: the smallest i whose positive key does not precede n[h - i - 1].
        let (mut lo, mut hi) = (h.saturating_sub(n.len()), h.min(p.len()));
        while lo < hi {
            let i = lo + (hi - lo) / 2;
            if p[i] < n[h - i - 1] { lo = i + 1 } else { hi = i }
        }
        let mut at = (lo, h - lo);
        for _ in 0..SPLIT_SEARCH {
            let last = match (at.0.checked_sub(1), at.1.checked_sub(1)) {
                (Some(i), Some(j)) => p[i].max(n[j]),
                (Some(i), None) => p[i],
                (None, Some(j)) => n[j],
                (None, None) => return None,
            };
            let mut rest = self.after(at);
            let positive_next = rest.positive_first();
            let (next, _, _) = rest.next()?;
            if next - calib_kernels::from_order_key(last) >= TIE {
                return Some(at);
            }
            if positive_next { at.0 += 1 } else { at.1 += 1 }
        }
        None
    }
}

/// [`SortedOutcomes::triples`].
pub(crate) struct Merged<'a> {
    positive: &'a [u64],
    negative: &'a [u64],
}

impl Merged<'_> {
    /// Whether the next pair is a positive outcome's.
    #[inline(always)]
    fn positive_first(&self) -> bool {
        match (self.positive.first(), self.negative.first()) {
            (Some(p), Some(n)) => p < n,
            (p, _) => p.is_some(),
        }
    }
}

impl Iterator for Merged<'_> {
    type Item = (f64, f64, f64);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        // Spelled out, not `positive_first()`: the pooling loop measured 30 % slower so.
        let positive_first = match (self.positive.first(), self.negative.first()) {
            (Some(p), Some(n)) => p < n,
            (p, _) => p.is_some(),
        };
        let (keys, outcome) =
            if positive_first { (&mut self.positive, 1.0) } else { (&mut self.negative, 0.0) };
        let (&key, rest) = keys.split_first()?;
        *keys = rest;
        Some((calib_kernels::from_order_key(key), outcome, 1.0))
    }
}

/// The pooled blocks of unweighted 0/1 pairs whose positive outcomes are rare (at most one
/// pair in [`RARE_SHARE`], as a class's one-vs-rest problem over many classes), with the
/// negatives' scores never sorted: only the positives are, and each negative falls into the
/// run of negatives between two of them, of which its count, its smallest score and its two
/// largest are kept. The blocks equal [`SortedOutcomes::blocks`]' runs, bit for bit:
///
/// - a run of negatives is points of value 0: before the first positive, a run of blocks of
///   value 0 from its smallest score to its last point's; after a positive, every one of them
///   pools into the block before (whose value is positive), up to its last point;
/// - pushing such a run as one block of weight its count pools it alike (sums and weights are
///   whole numbers, exact in any order), and the map and the NLL read runs of equal values.
///
/// `None` where a tie lets the order of the negatives matter, and the pairs are then sorted:
/// a positive within [`TIE`] of the score before or after it, or a run whose two largest
/// distinct scores are within [`TIE`] (its last point may then start below its largest).
fn rare_positive_blocks(scores: &[f64], outcomes: &[bool]) -> Option<Vec<Block>> {
    use calib_kernels::{from_order_key as score, order_key as key};
    let n_positive = outcomes.iter().filter(|&&o| o).count();
    if n_positive == 0 || n_positive * RARE_SHARE > scores.len() {
        return None;
    }
    let mut positive: Vec<u64> = Vec::with_capacity(n_positive);
    positive.extend(scores.iter().zip(outcomes).filter(|p| *p.1).map(|(&s, _)| key(s)));
    positive.sort_unstable();
    let mut runs = vec![NegativeRun::EMPTY; positive.len() + 1];
    let first = positive[0];
    for (&s, _) in scores.iter().zip(outcomes).filter(|p| !*p.1) {
        let k = key(s);
        // Most negatives of a rare class lie below its first positive.
        let run = if k < first { 0 } else { positive.partition_point(|&p| p < k) };
        runs[run].add(k);
    }
    for (j, &p) in positive.iter().enumerate() {
        let before = runs[j].largest.max(if j > 0 { positive[j - 1] } else { 0 });
        let after = runs[j + 1].smallest.min(positive.get(j + 1).copied().unwrap_or(u64::MAX));
        let isolated = (before == 0 || score(p) - score(before) >= TIE)
            && (after == u64::MAX || score(after) - score(p) >= TIE);
        if !isolated {
            return None;
        }
    }
    let mut blocks = Vec::with_capacity(2 * positive.len() + 1);
    let push_run = |blocks: &mut Vec<Block>, run: &NegativeRun| -> Option<()> {
        if run.count > 0 {
            let last = score(run.largest);
            if run.count > 1 && last - score(run.second) < TIE {
                return None;
            }
            let (weight, first) = (run.count as f64, score(run.smallest));
            push(blocks, Block { sum: 0.0, weight, first, last });
        }
        Some(())
    };
    push_run(&mut blocks, &runs[0])?;
    for (&p, run) in positive.iter().zip(&runs[1..]) {
        let p = score(p);
        push(&mut blocks, Block::point((p, 1.0, 1.0)));
        push_run(&mut blocks, run)?;
    }
    Some(blocks)
}

/// One run of negatives between two positives in [`rare_positive_blocks`], as order keys: how
/// many, the smallest, the largest and the largest below it (0: none; every score's key is
/// larger).
#[derive(Debug, Clone, Copy)]
struct NegativeRun {
    count: usize,
    smallest: u64,
    largest: u64,
    second: u64,
}

impl NegativeRun {
    const EMPTY: Self = Self { count: 0, smallest: u64::MAX, largest: 0, second: 0 };

    #[inline(always)]
    fn add(&mut self, k: u64) {
        self.count += 1;
        self.smallest = self.smallest.min(k);
        if k > self.largest {
            (self.second, self.largest) = (self.largest, k);
        } else if k < self.largest && k > self.second {
            self.second = k;
        }
    }
}

/// [`rare_positive_blocks`] takes problems with at most one positive in this many pairs.
const RARE_SHARE: usize = 16;

/// Scores [`IsotonicMap`]'s `predict_fast_into` packs at a time.
const PACKED: usize = 256;

/// Binary searches [`IsotonicMap`]'s `predict_fast_into` runs side by side.
const SEARCHES: usize = 8;

/// From this many pairs on, unweighted fits pool buckets of scores ([`bucketed_blocks`]).
const BUCKETED: usize = 1 << 16;

/// From this many pairs on, [`SortedOutcomes`] sorts and pools on two cores.
const PARALLEL_SORT: usize = 1 << 16;

/// How many pairs past the middle [`SortedOutcomes::split_near`] looks for a gap.
const SPLIT_SEARCH: usize = 4096;

/// The mean NLL of the pooled pairs at their outcomes through the fitted map, each probability
/// clipped at 1e-15 (the record's convention): every point of a block maps to the block's value
/// `v` (the map keeps the first and last point of each run of equal values), so
///
/// ```text
/// NLL = sum_b [ s_b (-ln v_b) + (w_b - s_b) (-ln (1 - v_b)) ] / sum_b w_b
/// ```
///
/// with `s_b` the block's weighted outcome sum and `w_b` its weight. A score merged into a
/// point within 1e-15 of it is read at the point.
fn blocks_nll(blocks: &[Block]) -> f64 {
    let loss = |p: f64| -p.clamp(1e-15, 1.0).ln();
    let (mut total, mut weight) = (0.0, 0.0);
    for run in Block::runs(blocks) {
        let v = run[0].value();
        let s: f64 = run.iter().map(|b| b.sum).sum();
        let w: f64 = run.iter().map(|b| b.weight).sum();
        total += s * loss(v) + (w - s) * loss(1.0 - v);
        weight += w;
    }
    total / weight
}

/// The map through the points fitted by `blocks`, with scikit-learn's `trim_duplicates`: of
/// each run of points with one value only the first and the last are kept (the inner ones
/// equal both neighbours), read from the blocks without spreading their values over the
/// points.
fn through_blocks(blocks: &[Block]) -> IsotonicMap {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for run in Block::runs(blocks) {
        let (value, first, last) = (run[0].value(), run[0].first, run[run.len() - 1].last);
        xs.push(first);
        ys.push(value);
        if last != first {
            xs.push(last);
            ys.push(value);
        }
    }
    IsotonicMap::through(xs, ys)
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
        self.between(s, self.search(&[s])[0])
    }

    /// [`BinaryMap::predict`] of every value, [`SEARCHES`] binary searches side by side (one
    /// search's steps each wait on the last load; independent ones overlap), none for the
    /// scores on the first flat piece: the same values.
    fn predict_fast_into(&self, scores: &mut [f64]) {
        let (x, y) = (&self.x, &self.y);
        let last = x.len() - 1;
        // Up to the end of a first flat piece the map is its first value (a rare class's
        // scores mostly lie there: 60 % of a 1,000-class record's); only the scores past it are
        // searched, packed together a block at a time.
        let flat_to = if last >= 1 && y[1] == y[0] { x[1] } else { x[0] };
        let (mut rows, mut rest) = ([0u32; PACKED], [0.0; PACKED]);
        for block in scores.chunks_mut(PACKED) {
            let mut n = 0;
            for (i, &s) in block.iter().enumerate() {
                (rows[n], rest[n]) = (i as u32, s);
                n += usize::from(s > flat_to);
            }
            for chunk in rest[..n].chunks_mut(SEARCHES) {
                // A short last chunk padded with its first score.
                let mut lanes = [chunk[0]; SEARCHES];
                lanes[..chunk.len()].copy_from_slice(chunk);
                let at = match &self.guide {
                    // The count of thresholds at or below each score (at least one: the
                    // scores here are above the first).
                    Some(guide) => guide.counts(&lanes).map(|c| c - 1),
                    None => self.search(&lanes),
                };
                for (s, &j) in chunk.iter_mut().zip(&at) {
                    *s = if *s >= x[last] { y[last] } else { self.between(*s, j) };
                }
            }
            let first = y[0];
            for s in block.iter_mut() {
                *s = if *s <= flat_to { first } else { *s };
            }
            for (&i, &v) in rows[..n].iter().zip(&rest[..n]) {
                block[i as usize] = v;
            }
        }
    }

    fn identity() -> Self {
        Self::through(vec![0.0, 1.0], vec![0.0, 1.0])
    }

    /// The thresholds, values and slopes, linear between them.
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        let (x, y, slopes) = (self.x.clone(), self.y.clone(), self.slopes.clone());
        Some(calib_core::engine::MapTable::Linear { x, y, slopes })
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
        Ok(Self::through(x, y))
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
            return Ok(IsotonicMap::fit_outcomes(scores, outcomes));
        }
        let o: Vec<f64> = outcomes.iter().map(|&o| f64::from(u8::from(o))).collect();
        Ok(BinaryFitted::exact(IsotonicMap::fit(scores, &o, weights)))
    }

    fn sorts_on_device(&self, _n_pairs: usize) -> bool {
        true
    }

    /// The maps through the device's pooled blocks: each the same as [`IsotonicMap::fit`] on
    /// the problem's f32 scores.
    #[cfg(feature = "wgpu")]
    fn fit_sorted(
        &self,
        pairs: &calib_core::engine::DevicePairs,
    ) -> Option<Result<DeviceFit<IsotonicMap>>> {
        let map = |blocks: &[calib_core::engine::PooledBlock]| {
            through_blocks(&blocks.iter().map(Block::of_device).collect::<Vec<_>>())
        };
        Some(fit_pooled(pairs.pooled(), map, true))
    }
}

crate::binary::fit_by_maps!(IsotonicRegressionConfig, IsotonicRegression);

#[cfg(test)]
mod tests {
    use super::*;

    /// Weighted pool-adjacent-violators: the non-decreasing fit of `y` with weights `w` (all
    /// positive).
    fn pool_adjacent_violators(y: &[f64], w: &[f64]) -> Vec<f64> {
        // The points' positions stand for their scores: each block's first and last position.
        let points = y.iter().zip(w).enumerate().map(|(i, (&y, &w))| (i as f64, y * w, w));
        let mut fitted = Vec::with_capacity(y.len());
        for b in &pooled_blocks(points) {
            fitted.resize(fitted.len() + (b.last - b.first) as usize + 1, b.value());
        }
        fitted
    }

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
            assert_eq!(IsotonicMap::fit_outcomes(&scores, &outcomes).map, want, "n = {n}");
        }
    }

    /// Pooled in two halves, the pairs give the one pass's map and NLL, bit for bit (ties
    /// included); the split falls between two points.
    #[test]
    fn halves_pool_as_one_pass() {
        let n = 100_000;
        let mut u = (1..=n).map(|i| (i as f64 * 0.618_033_988_749_895) % 1.0);
        let smooth: Vec<f64> = (0..n).map(|_| u.next().expect("n values")).collect();
        // Scores on a grid of 997 (ties everywhere) and scores 1e-16 apart (ties by the rule).
        let grid: Vec<f64> = smooth.iter().map(|s| (s * 997.0).floor() / 997.0).collect();
        let close: Vec<f64> = smooth.iter().map(|s| 0.5 + (s * 1e3).floor() * 1e-16).collect();
        for (name, scores) in [("smooth", smooth), ("grid", grid), ("close", close)] {
            let outcomes: Vec<bool> = scores
                .iter()
                .enumerate()
                .map(|(i, s)| (i * 7919) % 1000 < (s * 1000.0) as usize)
                .collect();
            let sorted = SortedOutcomes::new(&scores, &outcomes);
            let one_pass = pooled_blocks(tied_points(sorted.triples()));
            let want = (through_blocks(&one_pass), blocks_nll(&one_pass).to_bits());
            let all: Vec<(f64, f64, f64)> = sorted.triples().collect();
            for h in [1, n / 3, n / 2, n - 1] {
                let Some(half) = sorted.split_near(h) else { continue };
                let (before, after) = (sorted.before(half), sorted.after(half));
                let split: Vec<(f64, f64, f64)> = before.chain(after).collect();
                assert!(split.iter().map(|t| t.0.to_bits()).eq(all.iter().map(|t| t.0.to_bits())));
                let at = half.0 + half.1;
                assert!(at >= h && all[at].0 - all[at - 1].0 >= TIE, "{name}: split {at}");
                let blocks = sorted.pooled_halves(half);
                let got = (through_blocks(&blocks), blocks_nll(&blocks).to_bits());
                assert_eq!(got, want, "{name} h = {h}");
            }
        }
    }

    /// The map read from the blocks is the spread fit trimmed (scikit-learn's rule).
    #[test]
    fn blocks_give_the_trimmed_fit() {
        let (y, w) = ([0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5, 1.0, 0.0, 1.0], [1.0; 11]);
        let x: Vec<f64> = (0..11).map(f64::from).collect();
        let fitted = pool_adjacent_violators(&y, &w);
        let points = x.iter().zip(&y).zip(&w).map(|((&x, &y), &w)| (x, y, w));
        let keep = |i: usize| {
            i == 0 || i == 10 || fitted[i] != fitted[i - 1] || fitted[i] != fitted[i + 1]
        };
        let kept: Vec<usize> = (0..11).filter(|&i| keep(i)).collect();
        let want = IsotonicMap::through(
            kept.iter().map(|&i| x[i]).collect(),
            kept.iter().map(|&i| fitted[i]).collect(),
        );
        assert_eq!(through_blocks(&pooled_blocks(points)), want);
    }

    /// The NLL read from the blocks is each pair's outcome through the fitted map, clipped
    /// (ties, blocks at 0 and 1 included).
    #[test]
    fn blocks_give_the_pairs_nll() {
        let n = 5000;
        let scores: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1999) as f64 / 1999.0).collect();
        let outcomes: Vec<bool> = (0..n).map(|i| (i * 31 + i / 7) % 5 < 2 + i / 2000).collect();
        let fitted = IsotonicMap::fit_outcomes(&scores, &outcomes);
        let loss = |p: f64| -p.clamp(1e-15, 1.0).ln();
        let want =
            scores
                .iter()
                .zip(&outcomes)
                .map(|(&s, &o)| {
                    if o { loss(fitted.map.predict(s)) } else { loss(1.0 - fitted.map.predict(s)) }
                })
                .sum::<f64>()
                / n as f64;
        let got = fitted.training_nll.expect("an unweighted fit knows its NLL");
        assert!((got - want).abs() <= 1e-13 * want, "{got} against {want}");
    }

    /// Rare positives, the negatives never sorted: the map and NLL of the sorted pairs, bit
    /// for bit, whether the problem is taken (isolated positives) or sent back to the sort
    /// (ties near a positive, scores below the tie tolerance, duplicates at a run's top).
    #[test]
    fn rare_positives_give_the_sorted_blocks() {
        let n = 20_000;
        let mut u = (1..=n).map(|i| (i as f64 * 0.618_033_988_749_895) % 1.0);
        let smooth: Vec<f64> = (0..n).map(|_| u.next().expect("n values")).collect();
        let skewed: Vec<f64> = smooth.iter().map(|s| s.powi(12)).collect();
        let tiny: Vec<f64> = smooth.iter().map(|s| if *s < 0.5 { s * 1e-16 } else { *s }).collect();
        let grid: Vec<f64> = smooth.iter().map(|s| (s * 997.0).floor() / 997.0).collect();
        let mut taken = 0;
        for (name, scores) in
            [("smooth", smooth), ("skewed", skewed), ("tiny", tiny), ("grid", grid)]
        {
            for every in [17, 40, 400, 19_999] {
                // Positives away from the scores below the tie tolerance (those stay negatives
                // of the first run, merged into one point there).
                let outcomes: Vec<bool> =
                    (0..n).map(|i| (i * 7919) % every == 3 && scores[i] > 1e-6).collect();
                let sorted = SortedOutcomes::new(&scores, &outcomes).blocks();
                let want = (through_blocks(&sorted), blocks_nll(&sorted).to_bits());
                if let Some(rare) = rare_positive_blocks(&scores, &outcomes) {
                    taken += 1;
                    let got = (through_blocks(&rare), blocks_nll(&rare).to_bits());
                    assert_eq!(got, want, "{name}, a positive in {every}");
                }
                assert_eq!(IsotonicMap::fit_outcomes(&scores, &outcomes).map, want.0);
            }
        }
        assert!(taken >= 10, "{taken}");
        // A negative within the tie tolerance of a positive: the sort decides.
        let mut scores: Vec<f64> = (0..64).map(|i| f64::from(i) / 64.0).collect();
        scores.push(20.0 / 64.0 + 4e-16);
        let outcomes: Vec<bool> = (0..65).map(|i| i == 64).collect();
        assert!(rare_positive_blocks(&scores, &outcomes).is_none());
        scores[64] += 1e-14;
        assert!(rare_positive_blocks(&scores, &outcomes).is_some());
    }

    /// The packed searches give `predict`'s values, bit for bit: maps with and without a flat
    /// first piece, one point, scores below, on and between the thresholds.
    #[test]
    fn fast_prediction_is_prediction() {
        let maps = [
            IsotonicMap::through(vec![0.1, 0.3, 0.35, 0.6, 0.9], vec![0.0, 0.0, 0.4, 0.7, 1.0]),
            IsotonicMap::through(vec![0.1, 0.3, 0.6], vec![0.2, 0.25, 0.8]),
            IsotonicMap::through(vec![0.4], vec![0.3]),
        ];
        let mut scores: Vec<f64> = (0..1001).map(|i| f64::from(i) / 1000.0).collect();
        scores.extend([0.1, 0.3, 0.35, 0.6, 0.9, 0.4, -0.0, 1e-300]);
        for m in &maps {
            let mut fast = scores.clone();
            m.predict_fast_into(&mut fast);
            for (&s, &f) in scores.iter().zip(&fast) {
                assert_eq!(f.to_bits(), m.predict(s).to_bits(), "{m:?} at {s}");
            }
        }
    }

    #[test]
    fn ties_are_one_point() {
        let m = IsotonicMap::fit(&[0.5, 0.5, 0.5, 0.7], &[1.0, 0.0, 0.0, 1.0], None);
        assert_eq!(m.thresholds(), (&[0.5, 0.7][..], &[1.0 / 3.0, 1.0][..]));
    }
}
