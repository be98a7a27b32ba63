//! What the score columns of an input mean.

use serde::{Deserialize, Serialize};

/// What the numbers in a prediction matrix are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScoreKind {
    /// Unnormalised log-probabilities `[N, K]`; probabilities are their (stable) softmax.
    Logits,
    /// Probabilities `[N, K]`, each in `[0, 1]`, rows summing to 1.
    Probabilities,
    /// Binary input: `N` scores of the positive class, outcome = label (docs/conventions.md,
    /// "positive-class convention").
    Binary,
}

impl ScoreKind {
    /// What the scores are, in words (for messages).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Logits => "logits",
            Self::Probabilities => "probabilities",
            Self::Binary => "binary scores",
        }
    }
}
