//! Kernel calibration (Popordanoska, Sayer & Blaschko 2022, "A consistent and differentiable
//! Lp canonical calibration error estimator", NeurIPS; probmetrics' `KernelCalibrator`): the
//! Nadaraya-Watson estimate of `P(y | p)` on the simplex with a Dirichlet kernel.
//!
//! ```text
//! P(y = k | z) = sum_{i: y_i = k} K(z, p_i) / sum_i K(z, p_i)
//! K(z, p_i) = Dir(z; p_i / h + 1) = exp(sum_k (a_ik - 1) ln z_k - ln B(a_i)),  a_i = p_i / h + 1
//!             (K = 2: the Beta kernel Beta(p_i1 / h + 1, p_i0 / h + 1) on the class-1 score)
//! z, p_i clipped to [1e-10, 1 - 1e-10]; everything in log space (log-sum-exp per row)
//! h = N^(-2 / (d + 4)), d = K - 1   (probmetrics' default), or the maximiser of the
//!     leave-one-out log-likelihood of the calibration scores over probmetrics' grid
//!     (10^-5 ..= 10^-1 in 15 log steps, 0.2 ..= 1 in 5)
//! ```
//!
//! The calibrator keeps its calibration set (probmetrics subsamples 10,000 rows of a larger
//! one at random; calib keeps them all). Applying it costs `n_test x N x K`: the exponents
//! are one matrix product per block of test rows, the blocks shared out over the cores, in
//! f64 on a CPU device; on a GPU the same as tensor ops on the device in its float type (the
//! per-class sums a product with the labels' one-hot matrix). The fit (and its bandwidth
//! search) runs on the host. A row's classes absent from the calibration set get probability
//! 0 (logit `ln 1e-300`; `ln 1e-30` in f32).
//!
//! Sample weights: every sum over calibration points is weighted, `sum_i w_i K(z, p_i)` (the
//! weight a log-offset of the point's kernel, saved as `weights`), `N` in the rule is `W`, and
//! leave-one-out leaves each row out with all its weight (see `leave_one_out`): whole-number
//! weights give the repeated rows' calibrator at a given bandwidth and by the rule; the
//! leave-one-out search departs from the repeated rows on purpose (there a row's copies
//! predict it).

use std::collections::BTreeMap;

use burn::config::Config;
use burn::tensor::activation::softmax;
use burn::tensor::{DType, Device, Tensor, TensorData};
use calib_core::BackendKind;
use calib_core::input::Predictions;
use calib_kernels::in_order;
use serde::{Deserialize, Serialize};

use crate::api::{Calibrator, Fit, Fitted, Method, SavedSettings, SavedTensor};
use crate::error::{FitError, Result};
use crate::fit::host::gemm::{MatRef, gemm};
use crate::fit::{FitRecord, Progress, Solver, require_logits};

/// The clip of probabilities before their logarithms.
const CLIP: f64 = 1e-10;
/// Test rows per matrix product.
const BLOCK: usize = 64;
/// Kernel values per block of rows on a device (32 MiB in f64, 16 MiB in f32: inside every
/// device's buffer limit).
const DEVICE_BLOCK: usize = 4 << 20;

/// How the bandwidth is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum KernelBandwidth {
    /// `N^(-2/(d+4))`, `d = K - 1`.
    #[default]
    Rule,
    /// The leave-one-out log-likelihood's maximiser over probmetrics' grid.
    LeaveOneOut,
    /// A fixed bandwidth.
    Fixed {
        /// `h > 0`.
        bandwidth: f64,
    },
}

/// A fitted kernel calibrator: the calibration probabilities, their labels, the bandwidth.
#[derive(Debug, Clone)]
pub struct KernelCalibration {
    /// `h`.
    pub bandwidth: f64,
    kernel: FitPoints,
    device: Device,
}

/// One calibration row: its label, clipped probabilities and sample weight.
#[derive(Debug, Clone)]
struct KernelPoint {
    label: i64,
    point: Vec<f64>,
    weight: f64,
}

/// The calibration points as the kernel uses them, sorted by label.
#[derive(Debug, Clone)]
struct FitPoints {
    /// `[M, K]`, clipped probabilities.
    points: Vec<f64>,
    /// `[M]`, sorted.
    labels: Vec<i64>,
    /// `[M]`, the rows' sample weights (each 1 without weights).
    weights: Vec<f64>,
    /// `a_i - 1 = p_i / h`, `[M, K]`.
    exponents: Vec<f64>,
    /// `ln B(a_i) - ln w_i`, `[M]`: the kernel's log-normaliser less the log-weight, so every
    /// sum over points is the weighted sum `sum_i w_i K(z, p_i)`.
    log_beta: Vec<f64>,
    /// Rows of each class: `[start, end)` per class.
    classes: Vec<(usize, usize)>,
    k: usize,
}

impl FitPoints {
    fn new(mut rows: Vec<KernelPoint>, k: usize, h: f64) -> Self {
        rows.sort_by_key(|r| r.label);
        let labels: Vec<i64> = rows.iter().map(|r| r.label).collect();
        let weights: Vec<f64> = rows.iter().map(|r| r.weight).collect();
        let points: Vec<f64> = rows.into_iter().flat_map(|r| r.point).collect();
        let exponents: Vec<f64> = points.iter().map(|p| p / h).collect();
        let log_beta = (exponents.chunks_exact(k).zip(&weights))
            .map(|(e, w)| {
                let a = e.iter().map(|v| v + 1.0);
                a.clone().map(libm::lgamma).sum::<f64>() - libm::lgamma(a.sum()) - w.ln()
            })
            .collect();
        let classes = (0..k as i64)
            .map(|c| (labels.partition_point(|&l| l < c), labels.partition_point(|&l| l <= c)))
            .collect();
        Self { points, labels, weights, exponents, log_beta, classes, k }
    }

    fn len(&self) -> usize {
        self.labels.len()
    }

    /// `ln K(z_r, p_i)` for the rows `log_z` (`[r, K]`, logs of clipped probabilities).
    fn log_kernel(&self, log_z: &[f64], out: &mut [f64]) {
        let (r, m) = (log_z.len() / self.k, self.len());
        let a = MatRef::row_major(log_z, r, self.k);
        gemm(a, MatRef::row_major(&self.exponents, m, self.k).t(), 0.0, out);
        for row in out.chunks_exact_mut(m) {
            row.iter_mut().zip(&self.log_beta).for_each(|(v, b)| *v -= b);
        }
    }

    /// Calibrated probabilities of the rows `log_z` into `out` (`[r, K]`).
    fn predict(&self, log_z: &[f64], out: &mut [f64]) {
        let m = self.len();
        let mut kernel = vec![0.0; log_z.len() / self.k * m];
        self.log_kernel(log_z, &mut kernel);
        for (row, o) in kernel.chunks_exact(m).zip(out.chunks_exact_mut(self.k)) {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut total = 0.0;
            for (c, &(lo, hi)) in self.classes.iter().enumerate() {
                let s: f64 = row[lo..hi].iter().map(|v| (v - max).exp()).sum();
                o[c] = s;
                total += s;
            }
            o.iter_mut().for_each(|v| *v /= total);
        }
    }

    /// The leave-one-out log-likelihood `sum_i ln((1/(M-1)) sum_{j != i} K(p_i, p_j))`;
    /// weighted, each row left out with all its weight:
    /// `sum_i w_i ln((1/(W - w_i)) sum_{j != i} w_j K(p_i, p_j))`. (Leaving one unit of a
    /// whole-number weight out, as the repeated rows would, lets the row's other copies
    /// predict it, and the search then picks the smallest bandwidth.)
    fn leave_one_out(&self) -> f64 {
        let m = self.len();
        let total: f64 = self.weights.iter().sum();
        let log_p: Vec<f64> = self.points.iter().map(|p| p.ln()).collect();
        let rows: Vec<usize> = (0..m).collect();
        let per_block = |block: &[usize]| -> f64 {
            let lz = &log_p[block[0] * self.k..(block[block.len() - 1] + 1) * self.k];
            let mut kernel = vec![0.0; block.len() * m];
            self.log_kernel(lz, &mut kernel);
            let mut sum = 0.0;
            for (r, row) in kernel.chunks_exact_mut(m).enumerate() {
                let (i, w) = (block[r], self.weights[block[r]]);
                row[i] = f64::NEG_INFINITY;
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let ln_sum = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
                sum += w * (ln_sum - (total - w).ln());
            }
            sum
        };
        in_parallel(&rows, per_block).into_iter().sum()
    }
}

/// `f` over blocks of `BLOCK` items, the blocks shared out over the cores; results in order.
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    let blocks: Vec<&[T]> = items.chunks(BLOCK).collect();
    in_order(&blocks, |block| f(block))
}

/// Softmax of each row of logits `[n, K]`, clipped, as logarithms.
fn clipped_log_probabilities(logits: &[f64], k: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(logits.len());
    for row in logits.chunks_exact(k) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = row.iter().map(|v| (v - max).exp()).sum();
        out.extend(row.iter().map(|v| ((v - max).exp() / total).clamp(CLIP, 1.0 - CLIP).ln()));
    }
    out
}

impl KernelCalibration {
    /// Calibrated log-probabilities of logits `[n, K]` (host, f64).
    fn apply(&self, logits: &[f64]) -> Vec<f64> {
        let k = self.kernel.k;
        let log_z = clipped_log_probabilities(logits, k);
        let rows: Vec<usize> = (0..logits.len() / k).collect();
        let blocks = in_parallel(&rows, |block| {
            let lz = &log_z[block[0] * k..(block[block.len() - 1] + 1) * k];
            let mut out = vec![0.0; lz.len()];
            self.kernel.predict(lz, &mut out);
            out
        });
        blocks.into_iter().flatten().map(|p| p.max(1e-300).ln()).collect()
    }
}

impl KernelCalibration {
    /// Calibrated log-probabilities of logits `[n, K]` as tensor ops on their device, in their
    /// float type: the exponents are one matrix product per block of rows (at most
    /// [`DEVICE_BLOCK`] kernel values), the per-class sums a second one with the labels'
    /// one-hot matrix.
    pub(crate) fn forward_on_device(&self, logits: Tensor<2>) -> Tensor<2> {
        let (device, dtype) = (logits.device(), logits.dtype());
        let [n, k] = logits.dims();
        let m = self.kernel.len();
        let upload = |values: Vec<f64>, shape: [usize; 2]| {
            Tensor::<2>::from_data(TensorData::new(values, shape), (&device, dtype))
        };
        let exponents = upload(self.kernel.exponents.clone(), [m, k]).transpose();
        let log_beta = upload(self.kernel.log_beta.clone(), [1, m]);
        let mut one_hot = vec![0.0; m * k];
        self.kernel.labels.iter().enumerate().for_each(|(i, &l)| one_hot[i * k + l as usize] = 1.0);
        let one_hot = upload(one_hot, [m, k]);
        let floor = if dtype == DType::F64 { 1e-300 } else { 1e-30 };
        let rows = (DEVICE_BLOCK / m.max(1)).max(1);
        let blocks: Vec<Tensor<2>> = (0..n)
            .step_by(rows)
            .map(|start| {
                let z = logits.clone().narrow(0, start, rows.min(n - start));
                let log_z = softmax(z, 1).clamp(CLIP, 1.0 - CLIP).log();
                let kernel = log_z.matmul(exponents.clone()) - log_beta.clone();
                let max = kernel.clone().max_dim(1);
                let num = (kernel - max).exp().matmul(one_hot.clone());
                let den = num.clone().sum_dim(1);
                (num / den).clamp_min(floor).log()
            })
            .collect();
        Tensor::cat(blocks, 0)
    }
}

impl Calibrator for KernelCalibration {
    const METHOD: Method = Method::Kernel;

    fn n_classes(&self) -> usize {
        self.kernel.k
    }

    fn device(&self) -> Device {
        self.device.clone()
    }

    fn dtype(&self) -> DType {
        calib_core::Precision::Auto.dtype(&self.device)
    }

    /// On a CPU device, reads the chunk back and computes on the host; elsewhere as tensor
    /// ops where the rows live (`forward_on_device`).
    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        let device = scores.device();
        if !BackendKind::of(&device).is_cpu() {
            return self.forward_on_device(scores);
        }
        let [n, k] = scores.dims();
        let values = scores.into_data().convert::<f64>().try_into_vec::<f64>().unwrap_or_default();
        Tensor::from_data(TensorData::new(self.apply(&values), [n, k]), (&device, DType::F64))
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        let (m, k) = (self.kernel.len(), self.kernel.k);
        let labels = self.kernel.labels.iter().map(|&l| l as f64).collect();
        let weights = &self.kernel.weights;
        // Unweighted fits keep the format they always had: no `weights` table.
        let weighted = weights.iter().any(|&w| w != 1.0);
        let weights = weighted.then(|| {
            ("weights".to_string(), SavedTensor { shape: vec![m], values: weights.clone() })
        });
        Ok(BTreeMap::from_iter(weights.into_iter().chain([
            ("bandwidth".into(), SavedTensor { shape: vec![1], values: vec![self.bandwidth] }),
            (
                "points".into(),
                SavedTensor { shape: vec![m, k], values: self.kernel.points.clone() },
            ),
            ("labels".into(), SavedTensor { shape: vec![m], values: labels }),
        ])))
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        _settings: &SavedSettings,
        n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let h = super::param(parameters, "bandwidth")?.values.clone();
        let points = &super::param(parameters, "points")?.values;
        let labels = &super::param(parameters, "labels")?.values;
        let ones = vec![1.0; labels.len()];
        let weights = parameters.get("weights").map_or(&ones, |w| &w.values);
        let k = n_classes;
        let fine = matches!(h.as_slice(), [h] if *h > 0.0 && h.is_finite())
            && k > 0
            && points.len() == labels.len() * k
            && labels.iter().all(|&l| l >= 0.0 && l < k as f64 && l.fract() == 0.0)
            && points.iter().all(|p| (0.0..=1.0).contains(p))
            && weights.len() == labels.len()
            && weights.iter().all(|&w| w > 0.0 && w.is_finite());
        if !fine {
            return Err(FitError::Format(
                "kernel needs `bandwidth` [1] > 0, `points` [M, K] in [0, 1], `labels` [M] in 0..K \
                 (and `weights` [M] > 0 if any)"
                    .into(),
            ));
        }
        let rows = (labels.iter().zip(points.chunks_exact(k)).zip(weights))
            .map(|((&l, p), &weight)| KernelPoint { label: l as i64, point: p.to_vec(), weight })
            .collect();
        Ok(Self { bandwidth: h[0], kernel: FitPoints::new(rows, k, h[0]), device: device.clone() })
    }
}

/// Settings of a kernel-calibration fit.
#[derive(Config, Debug, PartialEq)]
pub struct KernelCalibrationConfig {
    /// How the bandwidth is chosen.
    #[config(default = "KernelBandwidth::Rule")]
    pub bandwidth: KernelBandwidth,
}

/// probmetrics' leave-one-out grid: 10^-5 ..= 10^-1 in 15 log steps, then 0.2 ..= 1 in 5.
fn bandwidth_grid() -> Vec<f64> {
    let logs = (0..15).map(|i| 10f64.powf(-5.0 + 4.0 * f64::from(i) / 14.0));
    logs.chain((0..5).map(|i| 0.2 + 0.2 * f64::from(i))).collect()
}

impl Fit for KernelCalibrationConfig {
    type Calibrator = KernelCalibration;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        match self.bandwidth {
            KernelBandwidth::Fixed { bandwidth } if !(bandwidth > 0.0 && bandwidth.is_finite()) => {
                Err(FitError::InvalidConfig(format!("bandwidth must be > 0, got {bandwidth}")))
            }
            _ => Ok(()),
        }
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        _progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<KernelCalibration>> {
        self.check()?;
        require_logits(preds, Method::Kernel.name())?;
        let start = std::time::Instant::now();
        let (n, k) = (preds.n_samples(), preds.n_classes());
        let (values, labels) = preds.host_rows()?;
        let logits: Vec<f64> = values.into_f64();
        let points: Vec<f64> =
            clipped_log_probabilities(&logits, k).iter().map(|v| v.exp()).collect();
        let weights = preds.weights().map(|w| w.values());
        let weight = |i: usize| weights.map_or(1.0, |w| w[i]);
        // Rows of weight zero are left out.
        let rows = || -> Vec<KernelPoint> {
            (labels.iter().zip(points.chunks_exact(k)).enumerate())
                .filter(|&(i, _)| weight(i) > 0.0)
                .map(|(i, (&label, p))| KernelPoint { label, point: p.to_vec(), weight: weight(i) })
                .collect()
        };
        let total = preds.total_weight();
        let d = (k - 1).max(1) as f64;
        let (h, evaluations) = match self.bandwidth {
            KernelBandwidth::Rule => (total.powf(-2.0 / (d + 4.0)), 0),
            KernelBandwidth::Fixed { bandwidth } => (bandwidth, 0),
            KernelBandwidth::LeaveOneOut => {
                let grid = bandwidth_grid();
                let scores: Vec<f64> =
                    grid.iter().map(|&h| FitPoints::new(rows(), k, h).leave_one_out()).collect();
                let best =
                    (0..grid.len()).fold(0, |b, i| if scores[i] > scores[b] { i } else { b });
                (grid[best], grid.len())
            }
        };
        let calibrator = KernelCalibration {
            bandwidth: h,
            kernel: FitPoints::new(rows(), k, h),
            device: preds.device().clone(),
        };
        let nll = {
            let p = calibrator.apply(&logits);
            let sum: f64 =
                labels.iter().enumerate().map(|(i, &y)| -p[i * k + y as usize] * weight(i)).sum();
            sum / total
        };
        let solver = if evaluations == 0 { Solver::Direct } else { Solver::Search };
        let record =
            FitRecord::host(solver, evaluations, (nll, nll), true, (n, k), preds.device(), start);
        Ok(Fitted { calibrator, record })
    }
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use calib_core::input::InputConfig;
    use calib_core::input::ScoreKind;
    use calib_core::synthetic::overconfident_logits;

    use super::*;

    /// Whole-number weights give the repeated rows' calibrator (the rule's bandwidth); a
    /// constant weight chooses the unweighted leave-one-out bandwidth (rows left out whole).
    #[test]
    fn whole_weights_fit_the_repeated_rows() {
        let device = Device::flex();
        let (logits, labels) = overconfident_logits(120, 3, 0.7, 2.0, 4);
        let weights: Vec<f64> = (0..120).map(|i| (1 + i % 3) as f64).collect();
        let (mut rl, mut rlab) = (Vec::new(), Vec::new());
        for i in 0..120 {
            for _ in 0..weights[i] as usize {
                rl.extend_from_slice(&logits[i * 3..(i + 1) * 3]);
                rlab.push(labels[i]);
            }
        }
        let config = InputConfig::new(ScoreKind::Logits);
        let weighted = Predictions::from_host(&logits, 3, &labels, config, &device)
            .unwrap()
            .with_weights(weights)
            .unwrap();
        let repeated = Predictions::from_host(&rl, 3, &rlab, config, &device).unwrap();
        let fit = KernelCalibrationConfig::new();
        let (a, b) = (fit.fit(&weighted).unwrap(), fit.fit(&repeated).unwrap());
        assert_eq!(a.calibrator.bandwidth, b.calibrator.bandwidth);
        let test: Vec<f64> = logits.iter().map(|&v| f64::from(v)).collect();
        let (pa, pb) = (a.calibrator.apply(&test), b.calibrator.apply(&test));
        for (x, y) in pa.iter().zip(&pb) {
            assert!((x - y).abs() < 1e-9, "{x} vs {y}");
        }
        assert!((a.record.final_nll - b.record.final_nll).abs() < 1e-9);
        let loo = KernelCalibrationConfig::new().with_bandwidth(KernelBandwidth::LeaveOneOut);
        let plain = Predictions::from_host(&logits, 3, &labels, config, &device).unwrap();
        let twice = plain.clone().with_weights(vec![2.0; 120]).unwrap();
        let (a, b) = (loo.fit(&plain).unwrap(), loo.fit(&twice).unwrap());
        assert_eq!(a.calibrator.bandwidth, b.calibrator.bandwidth);
    }

    /// The tensor path equals the host path (f64 on flex).
    #[test]
    fn device_ops_equal_the_host_pass() {
        let device = Device::flex();
        let (logits, labels) = overconfident_logits(300, 4, 0.7, 2.0, 9);
        let preds = Predictions::from_host(
            &logits,
            4,
            &labels,
            InputConfig::new(ScoreKind::Logits),
            &device,
        )
        .unwrap();
        let fitted = KernelCalibrationConfig::new().fit(&preds).unwrap().calibrator;
        let test: Vec<f64> =
            overconfident_logits(200, 4, 0.7, 2.0, 10).0.iter().map(|&v| f64::from(v)).collect();
        let host = fitted.apply(&test);
        let tensor =
            Tensor::<2>::from_data(TensorData::new(test.clone(), [200, 4]), (&device, DType::F64));
        let on_device = fitted
            .forward_on_device(tensor)
            .into_data()
            .convert::<f64>()
            .try_into_vec::<f64>()
            .unwrap();
        for (a, b) in host.iter().zip(&on_device) {
            assert!((a - b).abs() < 1e-10 * a.abs().max(1.0), "{a} vs {b}");
        }
    }
}
