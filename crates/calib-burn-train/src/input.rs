//! [`CalibrationInput`]: what the calibration metrics read from a model's output.

use burn::tensor::{Int, Tensor};
use burn_train::ClassificationOutput;
use burn_train::metric::Adaptor;

/// A batch of outputs (logits by default, `[batch, K]`) and their labels (`[batch]`).
#[derive(Debug, Clone)]
pub struct CalibrationInput {
    /// Logits (or probabilities, see [`crate::CalibrationMetric::probabilities`]).
    pub outputs: Tensor<2>,
    /// Class labels in `[0, K)`.
    pub targets: Tensor<1, Int>,
}

impl CalibrationInput {
    /// A batch of outputs and labels.
    pub fn new(outputs: Tensor<2>, targets: Tensor<1, Int>) -> Self {
        Self { outputs, targets }
    }
}

impl Adaptor<CalibrationInput> for ClassificationOutput {
    fn adapt(&self) -> CalibrationInput {
        CalibrationInput::new(self.output.clone(), self.targets.clone())
    }
}
