//! A binned top-label metric of `softmax(z / T)` as a function of `T`, without rescaling and
//! re-reading the logits at each `T`: the argmax (so the hit and the predicted class) does not
//! move with `T > 0`, only the confidence does,
//!
//! ```text
//! conf_i(T) = 1 / sum_j exp(z_ij / T - max_j z_ij / T)
//! ```
//!
//! and its pairs go through calib-core's own bins and reduction ([`bin_of`], [`BinStats`],
//! [`CalibrationErrorConfig::reduce`]), so the value is the fused engine's (tested to 1e-12).
//! Serves static-bin top-label metrics (`ece`, `mce`, `rmsce`, their class-conditional and
//! thresholded forms); the others take the engine at each `T`.

use calib_core::binning::bin_of;
use calib_core::metrics::{CalibrationErrorConfig, ScoreSet};
use calib_core::stats::{BinLayout, BinStats};
use calib_kernels::{dispatch, exp_shifted, max_and_argmax};

/// Rows reduced to what the confidence at any `T` needs.
pub(crate) struct TopLabelObjective<'a> {
    logits: &'a [f64],
    k: usize,
    config: &'a CalibrationErrorConfig,
    edges: Vec<f64>,
    /// Per row: the largest logit, the predicted class and whether it is the label.
    top: Vec<(f64, usize, bool)>,
    /// The rows' sample weights, if any (each pair then adds `w`, `w conf`, `w hit`).
    weights: Option<&'a [f64]>,
}

impl<'a> TopLabelObjective<'a> {
    /// `None` for metrics this path does not serve (all-class scores, adaptive ranges).
    pub fn new(
        logits: &'a [f64],
        labels: &[i64],
        weights: Option<&'a [f64]>,
        k: usize,
        config: &'a CalibrationErrorConfig,
    ) -> Option<Self> {
        let edges = config.binning.edges()?;
        if config.scores != ScoreSet::TopLabel {
            return None;
        }
        let top = logits
            .chunks_exact(k)
            .zip(labels)
            .map(|(row, &y)| {
                // The engine's own argmax (ties to the lowest class).
                let (m, c) = max_and_argmax(row);
                (m, c, c as i64 == y)
            })
            .collect();
        Some(Self { logits, k, config, edges, top, weights })
    }

    /// The metric at temperature `exp(ln_t)`.
    pub fn at(&self, ln_t: f64) -> f64 {
        let inv = (-ln_t).exp();
        let n = self.top.len();
        let threads = calib_kernels::threads();
        let per = n.div_ceil(threads).max(4096);
        let parts: Vec<BinStats> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..n)
                .step_by(per)
                .map(|start| scope.spawn(move || self.stats(inv, start..n.min(start + per))))
                .collect();
            handles.into_iter().map(|h| h.join().expect("no binning panics")).collect()
        });
        let mut total = self.empty();
        for part in &parts {
            total = total.merge(part).expect("the same static bins");
        }
        self.config.reduce(&total).value
    }

    fn empty(&self) -> BinStats {
        let groups = if self.config.class_conditional { self.k } else { 1 };
        BinStats::zeros(BinLayout::Edges(self.edges.clone()), groups)
    }

    /// The pairs of `rows` at `1 / T = inv`, binned.
    fn stats(&self, inv: f64, rows: std::ops::Range<usize>) -> BinStats {
        let mut stats = self.empty();
        let k = self.k;
        let (mut scaled, mut e) = (vec![0.0; k], vec![0.0; k]);
        for i in rows {
            let (m, c, hit) = self.top[i];
            let row = &self.logits[i * k..(i + 1) * k];
            // The engine's softmax of the rescaled row: exp(z_j / T - max / T), in lanes.
            let sum = dispatch(
                #[inline(always)]
                || {
                    scaled.iter_mut().zip(row).for_each(|(s, &z)| *s = z * inv);
                    exp_shifted(&scaled, m * inv, &mut e)
                },
            );
            let conf = 1.0 / sum;
            if self.config.threshold.is_some_and(|eps| conf <= eps) {
                continue;
            }
            let group = if self.config.class_conditional { c } else { 0 };
            let (bin, hit) = (bin_of(conf, &self.edges), f64::from(u8::from(hit)));
            match self.weights {
                None => stats.add(group, bin, conf, hit),
                Some(w) => stats.add_weighted(group, bin, conf, hit, w[i]),
            }
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use calib_core::input::{InputConfig, Predictions, ScoreKind};
    use calib_core::synthetic::SplitMix64;
    use calib_core::{Engine, Metric, Precision};

    /// Every metric the path serves equals the fused engine on the rescaled logits.
    #[test]
    fn equals_the_engine_at_every_temperature() {
        let (n, k) = (3000, 7);
        let mut rng = SplitMix64(5);
        let labels: Vec<i64> = (0..n).map(|_| rng.below(k) as i64).collect();
        let logits: Vec<f64> = (0..n * k)
            .map(|j| 3.0 * rng.uniform() + if labels[j / k] == (j % k) as i64 { 1.5 } else { 0.0 })
            .collect();
        let metrics =
            [Metric::Ece, Metric::Mce, Metric::Rmsce, Metric::ToplabelEce, Metric::DebiasedL2];
        let mut served = 0;
        for metric in metrics {
            let config = metric.calibration_error(15, 15, 0.01).unwrap();
            let Some(fast) = TopLabelObjective::new(&logits, &labels, None, k, &config) else {
                continue;
            };
            served += 1;
            for t in [0.2, 0.9, 1.0, 3.7] {
                let scaled: Vec<f64> = logits.iter().map(|z| z / t).collect();
                let preds = Predictions::from_host_vec(
                    scaled,
                    k,
                    labels.clone(),
                    InputConfig::new(ScoreKind::Logits),
                    &burn::tensor::Device::flex(),
                )
                .unwrap();
                let engine = config.compute_with(&preds, Precision::F64, Engine::Fused).unwrap();
                let ours = fast.at(f64::ln(t));
                assert!(
                    (ours - engine.value).abs() <= 1e-12,
                    "{metric:?} T {t}: {ours} vs {}",
                    engine.value
                );
            }
        }
        assert!(served >= 3, "{served}");
    }
}
