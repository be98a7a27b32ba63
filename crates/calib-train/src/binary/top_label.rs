//! [`TopLabelPrediction`]: what a top-label calibrator says of each row, the model's
//! prediction and its calibrated confidence (Gupta & Ramdas 2021).
//!
//! ```text
//! pred_i = argmax_k p_ik,   confidence_i = m_{pred_i}(p_{i, pred_i})     (no floor at 1/K)
//! ```
//!
//! A probability vector has a largest entry of at least 1/K, so the probabilities a top-label
//! calibrator writes floor the confidence at 1/K and cap the others just below it; where the
//! calibrated confidence is below 1/K those rows are near-uniform and, rounded to float32, tied.
//! Top-label metrics (ECE, MCE, RMSCE, top-label ECE, L2, accuracy, the binning-free tests)
//! are therefore read from `(pred, confidence)`, not from the probabilities.

use burn::tensor::Device;
use calib_core::input::{InputConfig, Predictions, ScoreKind};

use crate::error::Result;

/// Each row's prediction (the model's argmax, unchanged) and calibrated confidence.
#[derive(Debug, Clone, PartialEq)]
pub struct TopLabelPrediction {
    /// The predicted class of each row.
    pub pred: Vec<i64>,
    /// The calibrated probability that the prediction is right.
    pub confidence: Vec<f64>,
    /// The labels.
    pub labels: Vec<i64>,
    /// K.
    pub n_classes: usize,
}

impl TopLabelPrediction {
    /// Predictions whose top-label metrics are those of `(pred, confidence)`: `confidence` at
    /// `pred`, 0 elsewhere. The rows do not sum to 1 (their validation allows any sum), so
    /// only metrics that read a row's argmax and largest entry mean anything on them. A
    /// confidence of 0 is written as the smallest normal f32 (about 1.2e-38) so that `pred`
    /// stays the argmax on every device (same bin, the same sums to 1e-37); the smallest f64
    /// would round to 0 on an f32 device, moving the argmax to class 0.
    ///
    /// # Errors
    /// [`crate::FitError`] when the rows are rejected (a confidence outside `[0, 1]`).
    pub fn as_predictions(&self, device: &Device) -> Result<Predictions> {
        let k = self.n_classes;
        let mut values = vec![0.0; self.pred.len() * k];
        for (i, (&c, &h)) in self.pred.iter().zip(&self.confidence).enumerate() {
            values[i * k + c as usize] = h.max(f64::from(f32::MIN_POSITIVE));
        }
        let config = InputConfig::new(ScoreKind::Probabilities).with_row_sum_tolerance(1.0);
        Ok(Predictions::from_host_vec(values, k, self.labels.clone(), config, device)?)
    }
}
