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
//! uncertainty: [`VennAbersMap::interval`]. Host, f64; the precomputation rescans the
//! remaining points at each corner of the minorant (O(N x corners)).

use std::collections::BTreeMap;

use burn::config::Config;

use crate::binary::{BinaryFit, BinaryFitted, BinaryMap, MapCalibrator, Reduction};
use crate::calibrator::{Method, SavedTensor};
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
    fn fit(scores: &[f64], outcomes: &[bool]) -> Self {
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
        let (mut c, mut w, mut y) = (Vec::<f64>::new(), Vec::<f64>::new(), Vec::<f64>::new());
        for &i in &order {
            if c.last() != Some(&scores[i]) {
                c.push(scores[i]);
                w.push(0.0);
                y.push(0.0);
            }
            *w.last_mut().expect("pushed") += 1.0;
            *y.last_mut().expect("pushed") += f64::from(u8::from(outcomes[i]));
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

/// MAPIE's `p1` loop: the test point (label 1) inserted before each point in turn.
fn slopes_with_one(points: &[[f64; 2]]) -> Vec<f64> {
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
fn slopes_with_zero(points: &[[f64; 2]]) -> Vec<f64> {
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
    values.filter(|v| !v.is_nan()).fold(f64::NAN, |a, v| if a.is_nan() || v < a { v } else { a })
}

/// numpy's `nanmax`.
fn nan_max(values: impl Iterator<Item = f64>) -> f64 {
    values.filter(|v| !v.is_nan()).fold(f64::NAN, |a, v| if a.is_nan() || v > a { v } else { a })
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

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_binary(&self, scores: &[f64], outcomes: &[bool]) -> Result<BinaryFitted<VennAbersMap>> {
        Ok(BinaryFitted::exact(VennAbersMap::fit(scores, outcomes)))
    }
}

crate::binary::fit_by_maps!(VennAbersConfig, VennAbers);
