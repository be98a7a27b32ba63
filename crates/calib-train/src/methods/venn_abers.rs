//! Inductive Venn-ABERS (Vovk, Petej & Fedorova 2015), as MAPIE 1.6's `VennAbersCalibrator`
//! computes it.
//!
//! ```text
//! p0(s), p1(s): the isotonic fits of the calibration pairs with (s, 0), resp. (s, 1), added,
//!               read at s
//! m(s) = p1(s) / (1 - p0(s) + p1(s))
//! ```
//!
//! Both are precomputed for every gap between the unique calibration scores `c` from the
//! slopes of the greatest convex minorant of the cumulative-sum diagram (Vovk et al.'s
//! algorithms 1-4, ported operation for operation from MAPIE's `calc_p0p1` so the results
//! agree to the last bits); a test score `s` reads `p0` at `searchsorted(c, s, right)` and `p1`
//! at `searchsorted(c, s, left)`. The multiprobability pair `[p0, p1]` is the method's
//! uncertainty: [`VennAbersMap::interval`]. Host, f64; MAPIE rescans the remaining points at
//! each corner of the minorant (O(N x corners), quadratic on rare labels); calib reads the
//! same minimum from a convex hull, O(N log N). Sample weights: each unique score's point of
//! the diagram sums its rows' weights and weighted outcomes (the test point weighs 1), so
//! whole-number weights give the repeated rows' map.

use std::collections::BTreeMap;

use burn::config::Config;

use crate::api::{Method, SavedTensor};
use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::error::{FitError, Result};

/// A fitted Venn-ABERS map: unique calibration scores `c` `[k]` and `p0`, `p1` `[k + 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct VennAbersMap {
    c: Vec<f64>,
    p0: Vec<f64>,
    p1: Vec<f64>,
}

/// Venn-ABERS as a calibrator ([`MapCalibrator`] of [`VennAbersMap`]s).
pub type VennAbers = MapCalibrator<VennAbersMap>;

impl VennAbersMap {
    /// The multiprobability pair `[p0(s), p1(s)]`.
    pub fn interval(&self, s: f64) -> [f64; 2] {
        let right = self.c.partition_point(|&v| v <= s);
        let left = self.c.partition_point(|&v| v < s);
        [self.p0[right], self.p1[left]]
    }

    /// Precomputes `p0` and `p1` from pairs sorted by score.
    fn fit(scores: &[f64], outcomes: &[bool], weights: Option<&[f64]>) -> Self {
        let weight = |i: usize| weights.map_or(1.0, |w| w[i]);
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
        let (mut c, mut w, mut y) = (Vec::<f64>::new(), Vec::<f64>::new(), Vec::<f64>::new());
        for &i in &order {
            if c.last() != Some(&scores[i]) {
                c.push(scores[i]);
                w.push(0.0);
                y.push(0.0);
            }
            *w.last_mut().expect("pushed") += weight(i);
            *y.last_mut().expect("pushed") += weight(i) * f64::from(u8::from(outcomes[i]));
        }
        // The cumulative-sum diagram: (0, 0), then (W_j, Y_j) through each group j.
        let mut points = vec![[0.0, 0.0]];
        let (mut cw, mut cy) = (0.0, 0.0);
        for (wj, yj) in w.iter().zip(&y) {
            cw += wj;
            cy += yj;
            points.push([cw, cy]);
        }
        let p1 = slopes_with_one(&points);
        let p0 = slopes_with_zero(&points);
        Self { c, p0, p1 }
    }
}

/// MAPIE's `p1` loop: the test point (label 1) inserted before each point in turn. Where
/// MAPIE rescans the later points at each corner of the minorant, the rescan's minimum slope
/// comes from a lower hull of the later points built from the right ([`TangentHull`]).
fn slopes_with_one(points: &[[f64; 2]]) -> Vec<f64> {
    // rescan[i]: min over j > i of the slope from points[i] to points[j] + (1, 1).
    let mut rescan = vec![f64::NAN; points.len()];
    let mut hull = TangentHull::default();
    for i in (0..points.len()).rev() {
        rescan[i] = hull.min_slope_from_left(points[i]);
        hull.push_left([points[i][0] + 1.0, points[i][1] + 1.0]);
    }
    let mut out = vec![0.0; points.len()];
    let (mut grad, mut corner) = (0.0, 0);
    for (i, p) in points.iter().enumerate() {
        if i == 0 {
            grad = rescan[0];
        } else {
            let imp = points[corner][1] + (p[0] - points[corner][0]) * grad;
            if p[1] < imp {
                if !rescan[i].is_nan() {
                    grad = rescan[i];
                }
                corner = i;
            }
        }
        out[i] = grad;
    }
    out
}

/// MAPIE's `p0` loop: the test point (label 0) inserted after each point, from the right; its
/// rescans of the earlier points come from a lower hull built from the left.
fn slopes_with_zero(points: &[[f64; 2]]) -> Vec<f64> {
    let n = points.len();
    let shifted = |i: usize| [points[i][0] + 1.0, points[i][1]];
    // rescan[i]: max over j < i of the slope from points[j] to shifted(i). MAPIE also counts
    // a slope of 0 for every j >= i (except at the last point); the earlier slopes are never
    // negative, so that only matters when there are none (i = 0).
    let mut rescan = vec![f64::NAN; n];
    let mut hull = TangentHull::default();
    for i in 0..n {
        rescan[i] = hull.max_slope_to_right(shifted(i));
        hull.push_right(points[i]);
    }
    let mut out = vec![0.0; n];
    let (mut grad, mut corner) = (0.0, n - 1);
    for i in (0..n).rev() {
        let pi = shifted(i);
        let update = i == n - 1 || pi[1] < shifted(corner)[1] + (pi[0] - shifted(corner)[0]) * grad;
        if update {
            grad = if i < n - 1 && i == 0 { 0.0 } else { rescan[i] };
            corner = i;
        }
        out[i] = grad;
    }
    out
}

/// A lower convex hull of points with integer coordinates (exact in f64 below 2^26), built by
/// adding points at one end, and its tangents from a point beyond that end. The tangent
/// vertex is found by bisection (the slopes to the point are unimodal along the hull) with
/// exact cross-product tests; the slope returned is MAPIE's `(q1 - p1) / (q0 - p0)` at that
/// vertex, so it has the bits of MAPIE's minimum or maximum over all points.
#[derive(Default)]
struct TangentHull {
    /// Left to right.
    vertices: std::collections::VecDeque<[f64; 2]>,
}

/// `(b - a) x (c - a)`: positive when `a, b, c` turn counter-clockwise.
fn cross(a: [f64; 2], b: [f64; 2], c: [f64; 2]) -> f64 {
    (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
}

impl TangentHull {
    /// Adds a point left of every vertex.
    fn push_left(&mut self, q: [f64; 2]) {
        while self.vertices.len() >= 2 && cross(q, self.vertices[0], self.vertices[1]) <= 0.0 {
            self.vertices.pop_front();
        }
        self.vertices.push_front(q);
    }

    /// Adds a point right of every vertex.
    fn push_right(&mut self, q: [f64; 2]) {
        while self.vertices.len() >= 2 {
            let m = self.vertices.len();
            if cross(self.vertices[m - 2], self.vertices[m - 1], q) > 0.0 {
                break;
            }
            self.vertices.pop_back();
        }
        self.vertices.push_back(q);
    }

    /// Min over the vertices of the slope from `a` (left of all) to them; NaN when empty.
    fn min_slope_from_left(&self, a: [f64; 2]) -> f64 {
        let h = &self.vertices;
        // The first k whose next edge turns left of a -> h_k (the slopes stop falling there).
        let k = first_true(h.len(), |k| cross(a, h[k], h[k + 1]) >= 0.0);
        h.get(k).map_or(f64::NAN, |q| (q[1] - a[1]) / (q[0] - a[0]))
    }

    /// Max over the vertices of the slope from them to `b` (right of all); NaN when empty.
    fn max_slope_to_right(&self, b: [f64; 2]) -> f64 {
        let h = &self.vertices;
        // The first k whose next edge climbs above h_k -> b (the slopes start falling there).
        let k = first_true(h.len(), |k| cross(h[k], b, h[k + 1]) > 0.0);
        h.get(k).map_or(f64::NAN, |q| (q[1] - b[1]) / (q[0] - b[0]))
    }
}

/// The first `k` in `0..len - 1` where the monotone `test(k)` holds, else `len - 1` (0 when
/// empty).
fn first_true(len: usize, test: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len.saturating_sub(1));
    while lo < hi {
        let mid = (lo + hi) / 2;
        if test(mid) { hi = mid } else { lo = mid + 1 }
    }
    lo
}

impl BinaryMap for VennAbersMap {
    const METHOD: Method = Method::VennAbers;

    fn predict(&self, s: f64) -> f64 {
        if self.c.is_empty() {
            return s;
        }
        let [p0, p1] = self.interval(s);
        p1 / (1.0 - p0 + p1)
    }

    /// No calibration scores: the score itself.
    fn identity() -> Self {
        Self { c: Vec::new(), p0: Vec::new(), p1: Vec::new() }
    }

    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>) {
        crate::binary::put(out, prefix, "c", self.c.clone());
        crate::binary::put(out, prefix, "p0", self.p0.clone());
        crate::binary::put(out, prefix, "p1", self.p1.clone());
    }

    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self> {
        let c = crate::binary::table(parameters, prefix, "c")?.to_vec();
        let p0 = crate::binary::table(parameters, prefix, "p0")?.to_vec();
        let p1 = crate::binary::table(parameters, prefix, "p1")?.to_vec();
        let identity = c.is_empty() && p0.is_empty() && p1.is_empty();
        if !identity && (p0.len() != c.len() + 1 || p1.len() != c.len() + 1) {
            return Err(FitError::Format(format!(
                "venn-abers map `{prefix}` needs k scores and k + 1 values of p0 and p1"
            )));
        }
        Ok(Self { c, p0, p1 })
    }
}

/// Settings of an inductive Venn-ABERS fit.
#[derive(Config, Debug, PartialEq)]
pub struct VennAbersConfig {
    /// One-vs-rest or top-label on K-class input (MAPIE's multiclass default is one-vs-one,
    /// which calib does not offer).
    #[config(default = "Reduction::OneVsRest")]
    pub reduction: Reduction,
}

impl BinaryFit for VennAbersConfig {
    type Map = VennAbersMap;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<VennAbersMap>> {
        Ok(BinaryFitted::exact(VennAbersMap::fit(scores, outcomes, weights)))
    }
}

crate::binary::fit_by_maps!(VennAbersConfig, VennAbers);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// MAPIE's `p1` loop: the test point (label 1) inserted before each point in turn.
    fn mapie_slopes_with_one(points: &[[f64; 2]]) -> Vec<f64> {
        let mut p: Vec<[f64; 2]> = points.iter().map(|q| [q[0] + 1.0, q[1] + 1.0]).collect();
        let mut out = vec![0.0; p.len()];
        let (mut grad, mut corner) = (0.0, 0);
        for i in 0..p.len() {
            p[i] = [p[i][0] - 1.0, p[i][1] - 1.0];
            if i == 0 {
                grad = nan_min(p.iter().map(|q| q[1] / q[0]));
                corner = 0;
            } else {
                let imp = p[corner][1] + (p[i][0] - p[corner][0]) * grad;
                if p[i][1] < imp {
                    let g = nan_min(p[i..].iter().map(|q| (q[1] - p[i][1]) / (q[0] - p[i][0])));
                    if !g.is_nan() {
                        grad = g;
                    }
                    corner = i;
                }
            }
            out[i] = grad;
        }
        out
    }

    /// MAPIE's `p0` loop: the test point (label 0) inserted after each point, from the right.
    fn mapie_slopes_with_zero(points: &[[f64; 2]]) -> Vec<f64> {
        let mut p = points.to_vec();
        let n = p.len();
        let mut out = vec![0.0; n];
        let (mut grad, mut corner) = (0.0, n - 1);
        for i in (0..n).rev() {
            p[i][0] += 1.0;
            let pi = p[i];
            let slope = |j: usize, q: &[f64; 2]| {
                if j >= i && i != n - 1 { 0.0 } else { (q[1] - pi[1]) / (q[0] - pi[0]) }
            };
            if i == n - 1 {
                grad = nan_max(p.iter().enumerate().map(|(j, q)| slope(j, q)));
                corner = i;
            } else {
                let imp = p[corner][1] + (p[i][0] - p[corner][0]) * grad;
                if p[i][1] < imp {
                    grad = nan_max(p.iter().enumerate().map(|(j, q)| slope(j, q)));
                    corner = i;
                }
            }
            out[i] = grad;
        }
        out
    }

    /// numpy's `nanmin` (NaN when every value is NaN).
    fn nan_min(values: impl Iterator<Item = f64>) -> f64 {
        values
            .filter(|v| !v.is_nan())
            .fold(f64::NAN, |a, v| if a.is_nan() || v < a { v } else { a })
    }

    /// numpy's `nanmax`.
    fn nan_max(values: impl Iterator<Item = f64>) -> f64 {
        values
            .filter(|v| !v.is_nan())
            .fold(f64::NAN, |a, v| if a.is_nan() || v > a { v } else { a })
    }

    /// Cumulative-sum diagrams of random weighted groups.
    fn diagram(groups: &[(u8, u8)]) -> Vec<[f64; 2]> {
        let mut points = vec![[0.0, 0.0]];
        let (mut w, mut y) = (0.0, 0.0);
        for &(n, k) in groups {
            let n = f64::from(n % 5 + 1);
            w += n;
            y += f64::from(k).min(n * 255.0) % (n + 1.0);
            points.push([w, y]);
        }
        points
    }

    proptest! {
        /// The hull tangents give MAPIE's loops bit for bit.
        #[test]
        fn hull_slopes_equal_mapie_loops(groups in proptest::collection::vec((any::<u8>(), any::<u8>()), 1..80)) {
            let points = diagram(&groups);
            let same = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            let (one, zero) = (slopes_with_one(&points), slopes_with_zero(&points));
            prop_assert!(same(&one, &mapie_slopes_with_one(&points)), "p1 {one:?}");
            prop_assert!(same(&zero, &mapie_slopes_with_zero(&points)), "p0 {zero:?}");
        }
    }

    /// Rare positives (one-vs-rest on many classes) were MAPIE's quadratic case.
    #[test]
    fn rare_labels_agree_with_mapie() {
        let groups: Vec<(u8, u8)> = (0..3000).map(|i| (0, u8::from(i % 97 == 0))).collect();
        let points = diagram(&groups);
        assert_eq!(slopes_with_one(&points), mapie_slopes_with_one(&points));
        assert_eq!(slopes_with_zero(&points), mapie_slopes_with_zero(&points));
    }
}
