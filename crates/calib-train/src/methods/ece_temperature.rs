//! ECE-optimised temperature (Nixon et al. 2019, §5.2): the temperature minimising a binned
//! calibration error instead of the NLL.
//!
//! ```text
//! T* = argmin_{ln T in [ln 0.05, ln 20]} metric(softmax(z / T))
//! ```
//!
//! The objective is piecewise constant in `T` (bins change only when a score crosses an edge),
//! so gradients are useless: a grid of 2,001 points in `ln T`, then a golden-section refinement
//! inside the best grid cell (between the best point's neighbours); ties, on the grid and in the
//! refinement, go to the `T` closest to the NLL-optimal temperature, which is fitted first and
//! reported beside `T*` (`docs/conventions.md`, "ECE-optimised temperature"). Any binned metric
//! of calib-core is allowed (`ece`, `sce`, `ace`, `tace`, `rmsce`, ...), evaluated in f64 on the
//! host: static-bin top-label metrics from the fixed argmax and the confidences alone
//! (`TopLabelObjective`, the engine's value to 1e-12), the others by the fused engine.
//! Sample weights: the NLL temperature and the metric are both weighted (the engine's weighted
//! bins), so whole-number weights give the repeated rows' temperature.
//!
//! # Example
//! ```
//! use burn::tensor::Device;
//! use calib_core::{Metric, input::{InputConfig, Predictions, ScoreKind}};
//! use calib_train::{EceTemperatureConfig, Fit};
//!
//! let logits: Vec<f32> = (0..600).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
//! let labels: Vec<i64> = (0..200).map(|i| (i * 31 % 3) as i64).collect();
//! let config = InputConfig::new(ScoreKind::Logits);
//! let preds = Predictions::from_host(&logits, 3, &labels, config, &Device::flex())?;
//! let fitted = EceTemperatureConfig::new().with_metric(Metric::Ece).fit(&preds)?;
//! let search = fitted.record.search.as_ref().unwrap();
//! assert!((0.05..=20.0).contains(&search.temperature));
//! # Ok::<(), calib_train::FitError>(())
//! ```

use std::time::Instant;

use burn::config::Config;
use burn::tensor::DType;
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::metrics::CalibrationErrorConfig;
use calib_core::{BackendKind, Engine, Metric, Precision};

use super::top_label_objective::TopLabelObjective;

use crate::api::Fit;
use crate::api::{Fitted, Method};
use crate::error::{FitError, Result};
use crate::fit::{FitEngine, FloatType, MetricSearch, Progress, Solver, StopReason};
use crate::methods::{TemperatureScaling, TemperatureScalingConfig};

/// Settings of an ECE-optimised temperature fit.
#[derive(Config, Debug, PartialEq)]
pub struct EceTemperatureConfig {
    /// The binned metric to minimise.
    #[config(default = "Metric::Ece")]
    pub metric: Metric,
    /// B of even-bin metrics.
    #[config(default = 15)]
    pub n_bins: usize,
    /// R of adaptive metrics.
    #[config(default = 15)]
    pub n_ranges: usize,
    /// Grid points in `ln T`.
    #[config(default = 2001)]
    pub grid_points: usize,
}

const LN_T_MIN: f64 = -2.995_732_273_553_991; // ln 0.05
const LN_T_MAX: f64 = 2.995_732_273_553_991; // ln 20
const GOLDEN_STEPS: usize = 40;

/// The metric of `softmax(z / T)` as a function of `ln T`.
struct Objective<'a> {
    logits: &'a [f64],
    labels: &'a [i64],
    weights: Option<&'a [f64]>,
    k: usize,
    config: &'a CalibrationErrorConfig,
    /// The same value without the engine, for static-bin top-label metrics.
    top_label: Option<TopLabelObjective<'a>>,
    evaluations: usize,
}

impl Objective<'_> {
    fn at(&mut self, ln_t: f64) -> Result<f64> {
        self.evaluations += 1;
        if let Some(top_label) = &self.top_label {
            return Ok(top_label.at(ln_t));
        }
        let inv = (-ln_t).exp();
        let scaled: Vec<f64> = self.logits.iter().map(|z| z * inv).collect();
        let preds = Predictions::from_host_vec(
            scaled,
            self.k,
            self.labels.to_vec(),
            InputConfig::new(ScoreKind::Logits),
            &burn::tensor::Device::flex(),
        )?;
        let preds = match self.weights {
            Some(w) => preds.with_weights(w.to_vec())?,
            None => preds,
        };
        Ok(self.config.compute_with(&preds, Precision::F64, Engine::Fused)?.value)
    }
}

impl EceTemperatureConfig {
    /// The metric's binned configuration.
    fn metric_config(&self) -> Result<CalibrationErrorConfig> {
        self.metric.calibration_error(self.n_bins, self.n_ranges, 0.01).ok_or_else(|| {
            FitError::InvalidConfig(format!(
                "`{}` is not a binned metric; ece-temperature minimises ece, mce, rmsce, sce, \
                 ace, tace, toplabel_ece, debiased_l2 or plugin_l2",
                self.metric.name()
            ))
        })
    }

    /// Grid search, then golden section in the best cell; returns `(ln T*, value)`.
    fn search(&self, f: &mut Objective<'_>, ln_nll: f64) -> Result<(f64, f64)> {
        let g = self.grid_points;
        let step = (LN_T_MAX - LN_T_MIN) / (g - 1) as f64;
        let mut best = (f64::INFINITY, 0.0, 0usize);
        for i in 0..g {
            let x = LN_T_MIN + i as f64 * step;
            let v = f.at(x)?;
            if better((v, x), (best.0, best.1), ln_nll) {
                best = (v, x, i);
            }
        }
        let (lo, hi) = (
            best.1 - step * f64::from(u8::from(best.2 > 0)),
            best.1 + step * f64::from(u8::from(best.2 + 1 < g)),
        );
        let (x, v) = golden(f, lo, hi)?;
        Ok(if better((v, x), (best.0, best.1), ln_nll) { (x, v) } else { (best.1, best.0) })
    }
}

/// `a` beats `b`: a lower value, or an equal one closer to the NLL-optimal `ln T`.
fn better(a: (f64, f64), b: (f64, f64), ln_nll: f64) -> bool {
    a.0 < b.0 || (a.0 == b.0 && (a.1 - ln_nll).abs() < (b.1 - ln_nll).abs())
}

/// Golden-section search for a minimum of `f` on `[lo, hi]`.
fn golden(f: &mut Objective<'_>, mut lo: f64, mut hi: f64) -> Result<(f64, f64)> {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (hi - r * (hi - lo), lo + r * (hi - lo));
    let (mut fa, mut fb) = (f.at(a)?, f.at(b)?);
    for _ in 0..GOLDEN_STEPS {
        if fa <= fb {
            (hi, b, fb) = (b, a, fa);
            a = hi - r * (hi - lo);
            fa = f.at(a)?;
        } else {
            (lo, a, fa) = (a, b, fb);
            b = lo + r * (hi - lo);
            fb = f.at(b)?;
        }
    }
    Ok(if fa <= fb { (a, fa) } else { (b, fb) })
}

/// Mean NLL of `softmax(z / T)`.
fn mean_nll(logits: &[f64], labels: &[i64], weights: Option<&[f64]>, k: usize, t: f64) -> f64 {
    let weight = |i: usize| weights.map_or(1.0, |w| w[i]);
    let sum: f64 = (logits.chunks_exact(k).zip(labels).enumerate())
        .map(|(i, (z, &y))| {
            let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max) / t;
            let lse = max + z.iter().map(|v| (v / t - max).exp()).sum::<f64>().ln();
            weight(i) * (lse - z[y as usize] / t)
        })
        .sum();
    sum / weights.map_or(labels.len() as f64, |w| w.iter().sum()).max(f64::MIN_POSITIVE)
}

impl Fit for EceTemperatureConfig {
    type Calibrator = TemperatureScaling;

    const SAMPLE_WEIGHTS: crate::fit::SampleWeighting = crate::fit::SampleWeighting::Weighted;

    fn check(&self) -> Result<()> {
        self.metric_config()?;
        if self.grid_points < 3 {
            return Err(FitError::InvalidConfig("grid_points must be at least 3".into()));
        }
        Ok(())
    }

    fn fit_rows(
        &self,
        preds: &Predictions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fitted<TemperatureScaling>> {
        let start = Instant::now();
        Fit::check(self)?;
        if preds.kind() != ScoreKind::Logits {
            return Err(FitError::UnsuitableInput {
                method: Method::EceTemperature.name().into(),
                reason: format!("it scales K-class logits, got {:?}", preds.kind()),
            });
        }
        let nll_fit = TemperatureScalingConfig::new().fit_with_progress(preds, progress)?;
        let nll_t = nll_fit.calibrator.temperature()?;
        let (values, labels) = preds.host_rows()?;
        let logits: Vec<f64> = values.into_f64();
        let config = self.metric_config()?;
        let k = preds.n_columns();
        let weights = preds.weights().map(|w| w.values());
        let mut f = Objective {
            logits: &logits,
            labels: &labels,
            weights,
            k,
            config: &config,
            top_label: TopLabelObjective::new(&logits, &labels, weights, k, &config),
            evaluations: 0,
        };
        let nll_value = f.at(nll_t.ln())?;
        let (ln_t, value) = self.search(&mut f, nll_t.ln())?;
        let temperature = ln_t.exp();
        let device = preds.device();
        let calibrator =
            TemperatureScaling::new(temperature, device, Precision::Auto.dtype(device));
        let mut record = nll_fit.record;
        record.optimizer = Solver::Search;
        record.iterations = f.evaluations;
        record.evaluations = f.evaluations;
        record.final_loss = value;
        record.final_nll = mean_nll(&logits, &labels, weights, k, temperature);
        record.grad_norm = 0.0;
        record.wall_time_s = start.elapsed().as_secs_f64();
        record.converged = true;
        record.stop_reason = StopReason::Solved;
        record.engine = FitEngine::Host;
        record.dtype = FloatType::of(DType::F64);
        record.backend = BackendKind::of(device);
        record.search = Some(MetricSearch {
            metric: self.metric.name().into(),
            temperature,
            value,
            nll_temperature: nll_t,
            nll_value,
        });
        Ok(Fitted { calibrator, record })
    }
}
