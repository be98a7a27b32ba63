//! [`DataSpec`]: which file, split and keys to read, and [`ScoreInput`]: what its scores are.

use std::path::PathBuf;

use calib_io::{Array, TableChunks, TableColumns};

use crate::error::{CliError, Result};

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
    /// Per-row sample weights as a separate `.npy` file (one value per row of the split read).
    pub weights_path: Option<PathBuf>,
    /// Key of the weights array in the data file (`{split}_KEY` when the file has it), or a
    /// table's weight column.
    pub weights_key: Option<String>,
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
            weights_path: None,
            weights_key: None,
        }
    }

    /// Sets the split.
    pub fn with_split(mut self, split: impl Into<String>) -> Self {
        self.split = Some(split.into());
        self
    }

    /// The table columns this spec names.
    pub fn table_columns(&self) -> TableColumns {
        TableColumns {
            scores: self.logits_key.clone(),
            labels: self.labels_key.clone(),
            probabilities: self.input == ScoreInput::Probs,
            weights: self.weights_key.clone(),
        }
    }

    /// Opens the table this spec names, to be read in chunks of at most `rows` rows.
    ///
    /// # Errors
    /// [`CliError::Usage`] for a labels file or a split (a table has neither);
    /// [`CliError::Input`] as [`TableChunks::open`].
    pub fn open_table(&self, rows: usize) -> Result<TableChunks> {
        self.check_table()?;
        Ok(TableChunks::open(&self.path, &self.table_columns(), rows)?)
    }

    /// The whole table this spec names: scores, labels and the weight column's values.
    ///
    /// # Errors
    /// As [`Self::open_table`]; an empty table.
    pub fn read_table(&self) -> Result<(Array, Array, Option<Vec<f64>>)> {
        self.check_table()?;
        Ok(calib_io::read_table(&self.path, &self.table_columns())?)
    }

    /// Whether weights were asked for.
    pub fn has_weights(&self) -> bool {
        self.weights_path.is_some() || self.weights_key.is_some()
    }

    /// A table holds its labels and has no splits.
    fn check_table(&self) -> Result<()> {
        if self.labels_path.is_some() {
            return Err(CliError::Usage(
                "a table holds its labels (--labels-key); --labels is for .npy scores".into(),
            ));
        }
        if self.split.is_some() {
            return Err(CliError::Usage("a table has no splits; drop --split".into()));
        }
        Ok(())
    }
}
