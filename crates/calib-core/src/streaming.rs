//! [`StreamingEvaluation`]: metrics of data that arrives in row chunks (files larger than
//! memory, shards on several machines), equal to evaluating the concatenated rows.
//!
//! Each chunk runs the same plan as [`EvaluationConfig::evaluate`]; the per-bin statistics
//! are summed ([`crate::stats::BinStats::merge`]) and so are the NLL, Brier and accuracy sums, so
//! memory does not grow with N. Only metrics on static bins can stream: adaptive ranges (RMSCE,
//! ACE, TACE, the L2 errors) are cut at quantiles of the whole set, so they need all rows at
//! once.

use crate::engine::{Outcome, Plan};
use crate::error::{CalibError, Result};
use crate::evaluate::{Binned, run};
use crate::input::{Predictions, ScoreKind};
use crate::report::Report;
use crate::{EvaluationConfig, binning::Binning};

/// An evaluation fed chunk by chunk; see the module docs.
///
/// # Example
/// ```
/// use burn::tensor::Device;
/// use calib_core::input::{InputConfig, Predictions, ScoreKind};
/// use calib_core::{EvaluationConfig, Metric};
///
/// let device = Device::flex();
/// let (z, y) = calib_core::synthetic::overconfident_logits(1000, 4, 0.9, 2.0, 1);
/// let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Nll]);
/// let mut stream = config.streaming()?;
/// for (zc, yc) in z.chunks(4 * 300).zip(y.chunks(300)) {
///     stream.update(&Predictions::from_host(zc, 4, yc, InputConfig::new(ScoreKind::Logits), &device)?)?;
/// }
/// let whole = Predictions::from_host(&z, 4, &y, InputConfig::new(ScoreKind::Logits), &device)?;
/// let (a, b) = (stream.finish()?, config.evaluate(&whole)?);
/// assert!((a.get(Metric::Ece).unwrap() - b.get(Metric::Ece).unwrap()).abs() < 1e-12);
/// # Ok::<(), calib_core::CalibError>(())
/// ```
#[derive(Debug, Clone)]
pub struct StreamingEvaluation {
    config: EvaluationConfig,
    plan: Plan,
    binned: Vec<Binned>,
    outcome: Option<Outcome>,
    n_samples: usize,
    shape: Option<(usize, ScoreKind)>,
}

impl EvaluationConfig {
    /// Whether every requested metric can be computed chunk by chunk (static bins or sums).
    pub fn can_stream(&self) -> bool {
        self.metrics.iter().all(|m| {
            !m.uses_pairs()
                && self.binned(*m).is_none_or(|c| !matches!(c.binning, Binning::Adaptive { .. }))
        })
    }

    /// An evaluation to feed chunk by chunk.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for settings [`Self::evaluate`] refuses, and for adaptive
    /// metrics, which need every row at once (naming them).
    pub fn streaming(&self) -> Result<StreamingEvaluation> {
        self.validate()?;
        if !self.can_stream() {
            let adaptive: Vec<&str> = self
                .metrics
                .iter()
                .filter(|m| !EvaluationConfig::new().with_metrics(vec![**m]).can_stream())
                .map(|m| m.name())
                .collect();
            return Err(CalibError::InvalidConfig(format!(
                "{} use adaptive ranges or sorted scores, which need all rows at once; they \
                 cannot be computed in chunks",
                adaptive.join(", ")
            )));
        }
        let (plan, binned) = self.plan();
        Ok(StreamingEvaluation {
            config: self.clone(),
            plan,
            binned,
            outcome: None,
            n_samples: 0,
            shape: None,
        })
    }
}

impl StreamingEvaluation {
    /// Adds the rows of `chunk`.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] when K or the kind of scores differs from earlier chunks;
    /// engine errors as [`EvaluationConfig::evaluate`].
    pub fn update(&mut self, chunk: &Predictions) -> Result<()> {
        let shape = (chunk.n_classes(), chunk.kind());
        match self.shape {
            Some(s) if s != shape => {
                return Err(CalibError::InvalidConfig(format!(
                    "chunk has K = {} {:?} scores, earlier chunks K = {} {:?}",
                    shape.0, shape.1, s.0, s.1
                )));
            }
            _ => self.shape = Some(shape),
        }
        let workspace = &mut crate::engine::Workspace::new();
        let o = run(chunk, &self.plan, self.config.precision, self.config.engine, workspace)?;
        self.n_samples += chunk.n_samples();
        match &mut self.outcome {
            None => self.outcome = Some(o),
            Some(acc) => {
                for (a, b) in acc.stats.iter_mut().zip(&o.stats) {
                    a.accumulate(b);
                }
                acc.nll_sum += o.nll_sum;
                acc.nll_clipped_sum += o.nll_clipped_sum;
                acc.brier_sum += o.brier_sum;
                acc.correct += o.correct;
            }
        }
        Ok(())
    }

    /// Rows seen so far.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// The report of every row seen.
    ///
    /// # Errors
    /// [`CalibError::Empty`] when no rows were added.
    pub fn finish(&self) -> Result<Report> {
        let (Some(outcome), Some((n_classes, kind))) = (&self.outcome, self.shape) else {
            return Err(CalibError::Empty);
        };
        Ok(self.config.assemble(&self.binned, outcome, self.n_samples, n_classes, kind))
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::input::InputConfig;
    use crate::metrics::Metric;

    fn preds(z: &[f32], y: &[i64], k: usize) -> Predictions {
        Predictions::from_host(z, k, y, InputConfig::new(ScoreKind::Logits), &Device::flex())
            .unwrap()
    }

    #[test]
    fn chunks_of_any_size_equal_the_whole() {
        let k = 7;
        let (z, y) = crate::synthetic::overconfident_logits(2_345, k, 0.8, 2.0, 11);
        let static_metrics: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|m| EvaluationConfig::new().with_metrics(vec![*m]).can_stream())
            .collect();
        assert_eq!(
            static_metrics,
            [
                Metric::Ece,
                Metric::Mce,
                Metric::Sce,
                Metric::ToplabelEce,
                Metric::Nll,
                Metric::Brier,
                Metric::BrierDecomposition,
                Metric::Accuracy
            ]
        );
        let config = EvaluationConfig::new().with_metrics(static_metrics).with_nll_eps(Some(1e-15));
        let whole = config.evaluate(&preds(&z, &y, k)).unwrap();
        for rows in [1, 100, 1_000, 2_345] {
            let mut stream = config.streaming().unwrap();
            for (zc, yc) in z.chunks(rows * k).zip(y.chunks(rows)) {
                stream.update(&preds(zc, yc, k)).unwrap();
            }
            let got = stream.finish().unwrap();
            assert_eq!(got.n_samples, 2_345);
            for (a, b) in got.values.iter().zip(&whole.values) {
                assert!(
                    (a.value - b.value).abs() < 1e-12,
                    "{:?} by {rows}: {} vs {}",
                    a.metric,
                    a.value,
                    b.value
                );
                for (pa, pb) in a.per_class.iter().zip(&b.per_class) {
                    assert!((pa - pb).abs() < 1e-12);
                }
            }
            let (da, db) = (got.brier_decomposition.unwrap(), whole.brier_decomposition.unwrap());
            assert!((da.resolution - db.resolution).abs() < 1e-12);
        }
    }

    #[test]
    fn adaptive_metrics_and_mixed_chunks_are_refused() {
        let err = EvaluationConfig::new().streaming().unwrap_err().to_string();
        assert!(err.contains("rmsce") && err.contains("ace") && err.contains("all rows"), "{err}");
        let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece]);
        let mut stream = config.streaming().unwrap();
        assert_eq!(stream.finish().unwrap_err(), CalibError::Empty);
        stream.update(&preds(&[1.0, 0.0, 0.0], &[0], 3)).unwrap();
        let err = stream.update(&preds(&[1.0, 0.0], &[0], 2)).unwrap_err();
        assert!(err.to_string().contains("K = 2"), "{err}");
    }
}
