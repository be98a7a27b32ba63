//! Why a method's held-out ECE can end above the uncalibrated one, measured rather than
//! guessed: the ECE that perfectly calibrated confidences show on as many rows (sampling
//! noise), and the method's ECE on the split it was fitted on (over-fitting).
//!
//! ```text
//! noise ECE = the 95th percentile, over 100 draws, of the ECE of (c_i, y_i ~ Bernoulli(c_i))
//!             where c_i are the method's own held-out confidences (SplitMix64, seed 0)
//! ```

use burn::tensor::Device;
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::synthetic::SplitMix64;
use calib_core::{EvaluationConfig, Metric};
use calib_train::TopLabelPrediction;

use crate::error::{CliError, Result};

/// Draws of the noise ECE.
const DRAWS: usize = 100;

/// Each row's prediction (`None` for binary input) and the confidence it is measured on: a
/// top-label calibrator's `pred` and `confidence`; else the argmax (the first largest) and the
/// largest probability of K-class rows (softmax of logits), the score of binary input
/// ([`Predictions::top_labels`]: computed where the rows live; two words a row come back from
/// a device).
///
/// # Errors
/// [`CliError::Core`] when the rows cannot be read back.
pub fn predictions_and_confidences(
    preds: &Predictions,
    top: Option<&TopLabelPrediction>,
) -> Result<(Option<Vec<u32>>, Vec<f64>)> {
    if let Some(top) = top {
        return Ok((Some(top.pred.iter().map(|&p| p as u32).collect()), top.confidence.clone()));
    }
    preds.top_labels().map_err(|e| CliError::core("predictions", e))
}

/// The ECE (`n_bins` even bins) that calibrated confidences `c` show through sampling alone:
/// the 95th percentile over `DRAWS` (100) draws of outcomes `y_i ~ Bernoulli(c_i)`.
///
/// # Errors
/// [`CliError::Core`] when a confidence is outside `[0, 1]`.
pub fn noise_ece(c: &[f64], n_bins: usize, device: &Device) -> Result<f64> {
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece]).with_n_bins(n_bins);
    let mut rng = SplitMix64(0);
    let mut values = Vec::with_capacity(DRAWS);
    for _ in 0..DRAWS {
        let y: Vec<i64> = c.iter().map(|&p| i64::from(rng.uniform() < p)).collect();
        let preds = Predictions::from_host(c, 1, &y, InputConfig::new(ScoreKind::Binary), device)
            .map_err(|e| CliError::core("noise ECE", e))?;
        let report = config.evaluate(&preds).map_err(|e| CliError::core("noise ECE", e))?;
        values.push(report.get(Metric::Ece).unwrap_or(0.0));
    }
    values.sort_by(f64::total_cmp);
    Ok(values[(DRAWS * 95) / 100 - 1])
}
