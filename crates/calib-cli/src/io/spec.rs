//! [`DataSpec`]: which file, split and keys to read, and [`ScoreInput`]: what its scores are.

use std::path::PathBuf;

/// What the scores in a file are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ScoreInput {
    /// Logits (log-odds for one column).
    #[default]
    Logits,
    /// Probabilities.
    Probs,
}

/// Where to find the data and how to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSpec {
    /// The data file.
    pub path: PathBuf,
    /// The split, when the user asked for one.
    pub split: Option<String>,
    /// Key of the scores (overrides the split rule).
    pub logits_key: Option<String>,
    /// Key of the labels (overrides the split rule).
    pub labels_key: Option<String>,
    /// A separate labels file (`.npy`).
    pub labels_path: Option<PathBuf>,
    /// What the scores are.
    pub input: ScoreInput,
}

impl DataSpec {
    /// A spec for `path` with the default rules.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            split: None,
            logits_key: None,
            labels_key: None,
            labels_path: None,
            input: ScoreInput::Logits,
        }
    }

    /// Sets the split.
    pub fn with_split(mut self, split: impl Into<String>) -> Self {
        self.split = Some(split.into());
        self
    }
}
