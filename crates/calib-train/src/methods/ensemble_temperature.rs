//! ETS, ensemble temperature scaling (Zhang, Kailkhura & Han 2020, "Mix-n-Match: ensemble and
//! compositional methods for uncertainty calibration in deep learning", ICML; probmetrics'
//! `ETSCalibrator`).
//!
//! ```text
//! t* = argmin_{t in [0.05, 5]} L(softmax(z / t))
//! w* = argmin_{w in the 3-simplex} L(w_0 softmax(z / t*) + w_1 softmax(z) + w_2 / K)
//! p  = w_0 softmax(z / t*) + w_1 softmax(z) + w_2 / K
//! L  = mean squared error over the N x K entries (default; the paper and probmetrics), or the
//!      mean NLL (probabilities floored at 1e-20, as probmetrics)
//! ```
//!
//! The temperature solves `dL/du = 0` in `u = 1/t` by Newton with the exact second
//! derivative, safeguarded by bisection inside the bracket `[1/5, 1/0.05]` (a bound when the
//! derivative keeps its sign there; the paper's objective is unimodal in practice), one pass
//! over the rows (on every core) per iteration, from `u = 1` or, on 8,192 rows or more, from
//! the same iteration's result on every sixteenth block of eight rows. The weights minimise a
//! function of three numbers per row (the MSE even has a closed form: a quadratic in `w`
//! whose 3 x 3 Gram matrix is summed once) over each face of the simplex by Newton, the
//! lowest face's minimiser kept: exact where probmetrics' SLSQP stops at its tolerance. Host,
//! f64; on logits that live on a GPU (unweighted) both steps' passes run there in f32
//! (`calib_core::engine::TemperedRows::ets_derivatives`, `ets_mixture`), only sums and each
//! row's two label probabilities read back, the temperature to 1e-6.

use std::collections::BTreeMap;
use std::time::Instant;

use burn::config::Config;
use burn::tensor::activation::softmax;
use burn::tensor::{DType, Device, Tensor};
use calib_core::input::{HostValues, Predictions};
use serde::{Deserialize, Serialize};

use calib_core::stats::newton_in_bracket;
use calib_kernels::{dispatch, exp_nonpositive};

use super::lane_blocks::{LANES, LaneBlocks};
use super::simplex_weights::{MixtureLoss, minimise_on_simplex};
use crate::api::{Calibrator, Fit, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::{FitError, Result};
use crate::fit::{FitRecord, Progress, Solver, require_logits};

/// Fewer logits than this per thread run on one thread.
const MIN_VALUES_PER_THREAD: usize = 50_000;

/// The temperature's tolerance on the device (Newton's last step relative to `u`): its
/// derivatives are sums of f32 terms, good to about 1e-7.
#[cfg(feature = "wgpu")]
const DEVICE_TOLERANCE: f64 = 1e-6;

/// From this many lane blocks on (2^13 rows), Newton starts from a subsample's minimiser.
const WARM_FROM: usize = 1 << 10;

/// The subsample of [`Rows::warm_start`]: every this-many-th block.
const SUBSAMPLE: usize = 16;

/// The bracket of the temperature, `[0.05, 5]`.
const T_MIN: f64 = 0.05;
const T_MAX: f64 = 5.0;

/// The loss ETS minimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EtsLoss {
    /// Mean squared error over the N x K entries.
    #[default]
    Mse,
    /// Mean negative log-likelihood.
    Nll,
}

/// A fitted ETS calibrator.
///
/// # Parameters
/// - `temperature`: `[1]`; `weights`: `[3]`, on (temperature-scaled, uncalibrated, uniform).
#[derive(Debug, Clone)]
pub struct EnsembleTemperatureScaling {
    /// `t*`.
    pub temperature: f64,
    /// `w*` on the simplex.
    pub weights: [f64; 3],
    device: Device,
}

impl EnsembleTemperatureScaling {
    /// The calibrator `(t, w)` on `device`.
    pub fn new(temperature: f64, weights: [f64; 3], device: &Device) -> Self {
        Self { temperature, weights, device: device.clone() }
    }
}

impl Calibrator for EnsembleTemperatureScaling {
    const METHOD: Method = Method::Ets;

    fn n_classes(&self) -> usize {
        0 // any K
    }

    fn device(&self) -> Device {
        self.device.clone()
    }

    fn dtype(&self) -> DType {
        calib_core::Precision::Auto.dtype(&self.device)
    }

    /// `ln` of the mixture (floored at 1e-30, so a row's zero entries stay finite).
    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        let [_, k] = scores.dims();
        let [w0, w1, w2] = self.weights;
        let scaled = softmax(scores.clone().div_scalar(self.temperature), 1).mul_scalar(w0);
        let mixed = scaled + softmax(scores, 1).mul_scalar(w1);
        mixed.add_scalar(w2 / k as f64).clamp_min(1e-30).log()
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        Ok(BTreeMap::from([
            ("temperature".into(), SavedTensor { shape: vec![1], values: vec![self.temperature] }),
            ("weights".into(), SavedTensor { shape: vec![3], values: self.weights.to_vec() }),
        ]))
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        _settings: &SavedSettings,
        _n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let t = super::param(parameters, "temperature")?.values.clone();
        let w = super::param(parameters, "weights")?.values.clone();
        let on_simplex = w.len() == 3 && w.iter().all(|v| (0.0..=1.0).contains(v));
        match (t.as_slice(), on_simplex) {
            ([t], true) if *t > 0.0 && t.is_finite() => {
                Ok(Self::new(*t, [w[0], w[1], w[2]], device))
            }
            _ => Err(FitError::Format(
                "ets needs a positive `temperature` [1] and `weights` [3] in [0, 1]".into(),
            )),
        }
    }
}

/// Settings of an ETS fit.
#[derive(Config, Debug, PartialEq)]
pub struct EnsembleTemperatureScalingConfig {
    /// The loss of both steps.
    #[config(default = "EtsLoss::Mse")]
    pub loss: EtsLoss,
}

impl Fit for EnsembleTemperatureScalingConfig {
    type Calibrator = EnsembleTemperatureScaling;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        _progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<EnsembleTemperatureScaling>> {
        require_logits(preds, Method::Ets.name())?;
        let start = Instant::now();
        #[cfg(feature = "wgpu")]
        if preds.weights().is_none() && calib_core::engine::TemperedRows::supports(preds) {
            return self.fit_on_device(preds, start);
        }
        let (values, labels) = preds.host_rows()?;
        let weights = preds.weights().map(|w| w.values());
        let rows = Rows::new(&values, &labels, preds.n_classes(), weights);
        let (u, evaluations) = rows.inverse_temperature(self.loss);
        let losses = rows.mixture_losses(u, weights);
        Ok(self.mixed((u, evaluations), losses, preds, start))
    }
}

impl EnsembleTemperatureScalingConfig {
    /// The fit on logits that live on a GPU ([`calib_core::engine::TemperedRows`]): the same
    /// two steps, each pass one launch per part of rows with a few words per 1,024 rows read
    /// back (the mixture's log-loss also two words per row), f32 per row and summed in f64;
    /// the temperature to [`DEVICE_TOLERANCE`].
    #[cfg(feature = "wgpu")]
    fn fit_on_device(
        &self,
        preds: &Predictions,
        start: Instant,
    ) -> Result<Fitted<EnsembleTemperatureScaling>> {
        let rows = calib_core::engine::TemperedRows::new(preds)?;
        let mse = self.loss == EtsLoss::Mse;
        let mut failure = None;
        let derivatives = |u| {
            rows.ets_derivatives(u, mse).unwrap_or_else(|e| {
                failure.get_or_insert(e);
                (0.0, 1.0)
            })
        };
        let bracket = (1.0 / T_MAX, 1.0 / T_MIN);
        let (u, evaluations) = newton_in_bracket(derivatives, bracket, 1.0, DEVICE_TOLERANCE, 100);
        if let Some(e) = failure {
            return Err(e.into());
        }
        let mixture = rows.ets_mixture(u)?;
        let (k, n) = (preds.n_classes(), preds.n_samples() as f64);
        let [aa, ab, bb, qa, qb] = mixture.sums;
        let c = 1.0 / k as f64;
        let at_label = mixture.at_label.into_iter().map(|[a, b]| [a, b, c]).collect();
        let losses = mixture_losses_of([aa, ab, bb, n, qa, qb], at_label, k, n, None);
        let mut fitted = self.mixed((u, evaluations), losses, preds, start);
        fitted.record.engine = crate::fit::FitEngine::Kernels;
        fitted.record.dtype = crate::fit::FloatType::F32;
        Ok(fitted)
    }

    /// The fit at `u = 1/t`, found in `evaluations` passes: the simplex weights minimising
    /// the configured one of the mixture's `(MSE, log-loss)`, recorded with that loss and the
    /// NLL.
    fn mixed(
        &self,
        (u, evaluations): (f64, usize),
        (mse, log_loss): (MixtureLoss, MixtureLoss),
        preds: &Predictions,
        start: Instant,
    ) -> Fitted<EnsembleTemperatureScaling> {
        let loss = if self.loss == EtsLoss::Mse { &mse } else { &log_loss };
        let (weights, value) = minimise_on_simplex(loss);
        let calibrator = EnsembleTemperatureScaling::new(1.0 / u, weights, preds.device());
        let losses = (value, log_loss.value(&weights));
        let shape = (preds.n_samples(), preds.n_classes());
        let record = FitRecord::host(
            Solver::Search,
            evaluations,
            losses,
            true,
            shape,
            preds.device(),
            start,
        );
        Fitted { calibrator, record }
    }
}

/// The logits in lane blocks with their sample weights: every sum over rows is weighted and
/// N becomes their total.
struct Rows {
    lanes: LaneBlocks,
    /// N, or the total weight.
    total: f64,
}

/// The mixture's losses as functions of `w` from the (weighted) sums over the rows
/// `[sum aa, sum ab, sum bb, sum w, sum a_y, sum b_y]` (`a`, `b`: the tempered and the
/// uncalibrated softmax) and each row's label probabilities `[a_y, b_y, 1/K]`; `total`: N or
/// the total weight.
fn mixture_losses_of(
    sums: [f64; 6],
    at_label: Vec<[f64; 3]>,
    k: usize,
    total: f64,
    weights: Option<&[f64]>,
) -> (MixtureLoss, MixtureLoss) {
    let [aa, ab, bb, w, qa, qb] = sums;
    let c = 1.0 / k as f64;
    let (cw, kc2w) = (c * w, k as f64 * c * c * w);
    let mut gram = [[aa, ab, cw], [ab, bb, cw], [cw, cw, kc2w]];
    let mut h = [qa, qb, cw];
    // (1/(N K)) sum (w . P - Y)^2 = w' G w - 2 w' h + const (N: the total weight).
    let m = total * k as f64;
    gram.iter_mut().flatten().for_each(|g| *g /= m);
    h.iter_mut().for_each(|v| *v /= m);
    let constant = total / m;
    let weights = weights.map(<[f64]>::to_vec);
    (MixtureLoss::Quadratic { gram, h, constant }, MixtureLoss::LogLoss { at_label, weights })
}

/// Per-row sums of one block's rows, one lane per row, at `u`: with `e_j = exp(u d_j)`,
/// `d_j = z_j - max z`: `[sum e, sum e d, sum e d^2, sum e^2, sum e^2 d, sum e^2 d^2]` (the
/// last three only when `SQUARES`).
type Moments = [[f64; LANES]; 6];

/// Per-lane sums of a piece, added up lane by lane in order at its end.
fn lane_total(lanes: &[f64; LANES]) -> f64 {
    lanes.iter().sum()
}

impl Rows {
    fn new(logits: &HostValues<'_>, labels: &[i64], k: usize, weights: Option<&[f64]>) -> Self {
        let total = weights.map_or(labels.len() as f64, |w| w.iter().sum());
        Self { lanes: LaneBlocks::new(logits, labels, k, weights), total }
    }

    /// `part(blocks)` over fixed pieces of blocks shared out among the cores, in order.
    fn over_pieces<T: Send>(&self, part: impl Fn(std::ops::Range<usize>) -> T + Sync) -> Vec<T> {
        self.lanes.over_pieces(MIN_VALUES_PER_THREAD, part)
    }

    /// The [`Moments`] of block `b` at `u`.
    #[inline(always)]
    fn moments<const SQUARES: bool>(&self, b: usize, u: f64) -> Moments {
        let mut m = [[0.0; LANES]; 6];
        for d in self.lanes.block(b).chunks_exact(LANES) {
            for l in 0..LANES {
                let e = exp_nonpositive(u * d[l]);
                let ed = e * d[l];
                m[0][l] += e;
                m[1][l] += ed;
                m[2][l] += ed * d[l];
                if SQUARES {
                    let ee = e * e;
                    m[3][l] += ee;
                    m[4][l] += ee * d[l];
                    m[5][l] += ee * d[l] * d[l];
                }
            }
        }
        m
    }

    /// `(dL/du, d^2L/du^2)` of `softmax(u z)`:
    /// `dp_k/du = p_k (z_k - zbar)`, `d^2p_k/du^2 = p_k ((z_k - zbar)^2 - v)`, `zbar = sum_j p_j z_j`,
    /// `v = sum_j p_j (z_j - zbar)^2`.
    fn derivatives(&self, u: f64, loss: EtsLoss) -> (f64, f64) {
        let parts = self.over_pieces(
            #[inline(always)]
            |blocks| self.loss_sums(u, loss, blocks),
        );
        let (g, h) = parts.iter().fold((0.0, 0.0), |(g, h), p| (g + p.0, h + p.1));
        (g / self.total, h / self.total)
    }

    /// [`Self::derivative_sums`] of `loss`.
    #[inline(always)]
    fn loss_sums(&self, u: f64, loss: EtsLoss, blocks: impl Iterator<Item = usize>) -> (f64, f64) {
        match loss {
            EtsLoss::Mse => self.derivative_sums::<true>(u, blocks),
            EtsLoss::Nll => self.derivative_sums::<false>(u, blocks),
        }
    }

    /// The unnormalised sums of [`Self::derivatives`] over `blocks`, one lane per row (the
    /// padding lanes have weight 0): the MSE's when `MSE`, else the NLL's.
    #[inline(always)]
    fn derivative_sums<const MSE: bool>(
        &self,
        u: f64,
        blocks: impl Iterator<Item = usize>,
    ) -> (f64, f64) {
        let k = self.lanes.k as f64;
        let (mut g, mut h) = ([0.0; LANES], [0.0; LANES]);
        for b in blocks {
            let m = self.moments::<MSE>(b, u);
            let (at_label, weights) = (self.lanes.at_label(b), self.lanes.weights(b));
            for l in 0..LANES {
                // With p = e / S and d = z - zbar: zbar, v = sum p d^2, s1 = sum p^2 d,
                // s2 = sum p^2 d^2, q = sum p^2, from the moments of z - max z.
                let s = m[0][l];
                let zbar = m[1][l] / s;
                let v = m[2][l] / s - zbar * zbar;
                let dy = at_label[l] - zbar;
                let w = weights[l];
                if MSE {
                    // L = (1/K) sum_j (p_j - y_j)^2 with p_j' = p_j d_j, p_j'' = p_j (d_j^2 - v):
                    // L' = (2/K) (s1 - p_y d_y), L'' = (2/K) (2 s2 - v q - p_y (d_y^2 - v)).
                    let s2_inv = 1.0 / (s * s);
                    let q = m[3][l] * s2_inv;
                    let s1 = (m[4][l] - zbar * m[3][l]) * s2_inv;
                    let s2 = (m[5][l] - 2.0 * zbar * m[4][l] + zbar * zbar * m[3][l]) * s2_inv;
                    let py = exp_nonpositive(u * at_label[l]) / s;
                    g[l] += w * 2.0 * (s1 - py * dy) / k;
                    h[l] += w * 2.0 * (2.0 * s2 - v * q - py * (dy * dy - v)) / k;
                } else {
                    // L = -ln p_y (the floor at 1e-20 is inactive where it matters): zbar - z_y, v.
                    g[l] -= w * dy;
                    h[l] += w * v;
                }
            }
        }
        (lane_total(&g), lane_total(&h))
    }

    /// `u* = 1/t*` on `[1/5, 20]` and the passes over all rows spent: Newton inside that
    /// bracket ([`newton_in_bracket`]) from [`Self::warm_start`], to 1e-13 relative; a bound
    /// when the derivative keeps its sign there.
    fn inverse_temperature(&self, loss: EtsLoss) -> (f64, usize) {
        let bracket = (1.0 / T_MAX, 1.0 / T_MIN);
        let start = self.warm_start(loss, bracket);
        newton_in_bracket(|u| self.derivatives(u, loss), bracket, start, 1e-13, 100)
    }

    /// Where Newton starts: `u = 1`, or from [`WARM_FROM`] blocks on, the minimiser over every
    /// [`SUBSAMPLE`]-th block (on one core) to 1e-4, a few percent from `u*`: each pass over
    /// all rows then gains the digits of a quadratic step sooner (two passes fewer at 10,000
    /// x 10, for the cost of about half of one).
    fn warm_start(&self, loss: EtsLoss, bracket: (f64, f64)) -> f64 {
        let blocks = self.lanes.n_blocks();
        if blocks < WARM_FROM {
            return 1.0;
        }
        let sums = |u: f64| {
            dispatch(
                #[inline(always)]
                || self.loss_sums(u, loss, (0..blocks).step_by(SUBSAMPLE)),
            )
        };
        newton_in_bracket(sums, bracket, 1.0, 1e-4, 100).0
    }

    /// The mixture's losses as functions of `w`: the MSE's quadratic form and the
    /// log-loss's per-row label probabilities, from one pass at `u`.
    fn mixture_losses(&self, u: f64, weights: Option<&[f64]>) -> (MixtureLoss, MixtureLoss) {
        let (k, n) = (self.lanes.k, self.lanes.n);
        let parts = self.over_pieces(
            #[inline(always)]
            |blocks| self.mixture_sums(u, blocks),
        );
        // [sum w aa, sum w ab, sum w bb, sum w, sum w qa, sum w qb] over the rows.
        let mut sums = [0.0; 6];
        let mut at_label = Vec::with_capacity(n);
        for (piece, q) in parts {
            sums.iter_mut().zip(&piece).for_each(|(a, b)| *a += b);
            at_label.extend(q);
        }
        debug_assert_eq!(at_label.len(), n);
        mixture_losses_of(sums, at_label, k, self.total, weights)
    }

    /// The weighted sums of `blocks`' rows of `a a`, `a b`, `b b`, `1`, `a_y`, `b_y` and each
    /// row's label probabilities `[a_y, b_y, c]`, with `a = softmax(u z)`, `b = softmax(z)`
    /// and `c = 1/K`, from the unnormalised exponentials (the terms with `c` are `c` times
    /// sums equal to 1).
    #[inline(always)]
    fn mixture_sums(&self, u: f64, blocks: std::ops::Range<usize>) -> ([f64; 6], Vec<[f64; 3]>) {
        let c = 1.0 / self.lanes.k as f64;
        let mut sums = [[0.0; LANES]; 6];
        let mut at_label = Vec::with_capacity(blocks.len() * LANES);
        for b in blocks {
            // [sum ea, sum eb, sum ea^2, sum ea eb, sum eb^2] per lane.
            let mut m = [[0.0; LANES]; 5];
            for d in self.lanes.block(b).chunks_exact(LANES) {
                for l in 0..LANES {
                    let (ea, eb) = (exp_nonpositive(u * d[l]), exp_nonpositive(d[l]));
                    m[0][l] += ea;
                    m[1][l] += eb;
                    m[2][l] += ea * ea;
                    m[3][l] += ea * eb;
                    m[4][l] += eb * eb;
                }
            }
            let (dy, weights) = (self.lanes.at_label(b), self.lanes.weights(b));
            let mut q = [[0.0; LANES]; 2];
            for l in 0..LANES {
                let (sa, sb, w) = (m[0][l], m[1][l], weights[l]);
                sums[0][l] += w * (m[2][l] / (sa * sa));
                sums[1][l] += w * (m[3][l] / (sa * sb));
                sums[2][l] += w * (m[4][l] / (sb * sb));
                sums[3][l] += w;
                q[0][l] = exp_nonpositive(u * dy[l]) / sa;
                q[1][l] = exp_nonpositive(dy[l]) / sb;
                sums[4][l] += w * q[0][l];
                sums[5][l] += w * q[1][l];
            }
            at_label.extend(self.lanes.rows_of(b).map(|(l, _)| [q[0][l], q[1][l], c]));
        }
        (sums.map(|s| lane_total(&s)), at_label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On 10,000 rows (a warm start from a subsample) Newton reaches the temperature it reaches
    /// from `u = 1`, in fewer passes over all rows, for both losses.
    #[test]
    fn warm_start_reaches_the_cold_start_temperature() {
        let (n, k) = (10_000usize, 5usize);
        let hash = |i: usize| {
            ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64
        };
        let labels: Vec<i64> = (0..n).map(|i| (hash(i) * k as f64) as i64).collect();
        let logits: Vec<f64> = (0..n * k)
            .map(|j| {
                let own = labels[j / k] == (j % k) as i64;
                4.0 * hash(j + n) + if own { 2.0 } else { 0.0 }
            })
            .collect();
        let rows = Rows::new(&HostValues::F64(logits.as_slice().into()), &labels, k, None);
        assert!(rows.lanes.n_blocks() >= WARM_FROM);
        for loss in [EtsLoss::Mse, EtsLoss::Nll] {
            let (warm, passes) = rows.inverse_temperature(loss);
            let bracket = (1.0 / T_MAX, 1.0 / T_MIN);
            let (cold, cold_passes) =
                newton_in_bracket(|u| rows.derivatives(u, loss), bracket, 1.0, 1e-13, 100);
            assert!((warm - cold).abs() <= 1e-12 * cold, "{loss:?}: {warm} vs {cold}");
            assert!(passes < cold_passes, "{loss:?}: {passes} passes, {cold_passes} cold");
        }
    }
}
