//! [`Dataset`]: scores and labels of one split of a data file, whatever its format, and what the
//! scores mean.
//!
//! Key rules for files of named arrays (`.npz`, `.safetensors`): `--logits-key` / `--labels-key`
//! when given; else `{split}_logits` / `{split}_labels` (the layout of the shared CIFAR dumps);
//! else, when no split was asked for explicitly, `logits` / `labels`. With `--input probs` the
//! names `{split}_probs` / `probs` are tried as well. A `.npy` holds only scores; its labels come
//! from `--labels FILE.npy`. CSV: see [`super::csv`]; Parquet and Arrow IPC: [`super::table`].
//!
//! One score column, or a 1-D score array, is binary input: the positive-class score
//! (docs/conventions.md, "positive-class convention"). With `--input logits` (the default) binary
//! scores are log-odds and become probabilities by the logistic function.

use std::path::Path;

use burn::tensor::Device;
use calib_core::input::{InputConfig, Predictions, ScoreKind};

use calib_io::{
    Array, ArrayStore, NpzStore, SafetensorsStore, Scores, is_table, read_csv, read_npy_file,
};

use super::spec::{DataSpec, ScoreInput};
use crate::error::{CliError, Result};

/// Scores and labels of one split, validated for shape and meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// `file [split]`, for messages and reports.
    pub origin: String,
    /// The split read (`None` for files without splits).
    pub split: Option<String>,
    /// Scores `[N, C]` row-major, as stored (binary log-odds already mapped to probabilities).
    pub scores: Scores,
    /// N.
    pub n_samples: usize,
    /// C: K, or 1 for binary input.
    pub n_columns: usize,
    /// Class labels.
    pub labels: Vec<i64>,
    /// Per-row sample weights (`--weights`, `--weights-key`), checked when the predictions
    /// are made.
    pub weights: Option<Vec<f64>>,
    /// What the scores are now.
    pub kind: ScoreKind,
    /// Things worth a user's attention (probabilities passed as logits, ...).
    pub warnings: Vec<String>,
}

impl Dataset {
    /// Reads the data `spec` names; `default_split` is used when the user gave none.
    ///
    /// # Errors
    /// [`CliError::Input`] naming the file and the problem (missing file or key, unknown
    /// format, wrong dtype or rank, mismatched lengths).
    pub fn load(spec: &DataSpec, default_split: &str) -> Result<Self> {
        let path = &spec.path;
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if !path.exists() {
            return Err(CliError::input(path.display(), "no such file"));
        }
        let split = spec.split.clone().unwrap_or_else(|| default_split.to_string());
        let mut weights = None;
        let (scores, labels, used_split) = match ext.as_deref() {
            Some("npz") => {
                let mut store = NpzStore::open(path)?;
                weights =
                    weights_from_store(&mut store, spec, &split)?.map(read_weights).transpose()?;
                from_store(&mut store, spec, &split)?
            }
            Some("safetensors") => {
                let mut store = SafetensorsStore::open(path)?;
                weights =
                    weights_from_store(&mut store, spec, &split)?.map(read_weights).transpose()?;
                from_store(&mut store, spec, &split)?
            }
            Some("npy") => {
                let labels_path = spec.labels_path.as_ref().ok_or_else(|| {
                    CliError::input(
                        path.display(),
                        "a .npy file holds only scores; give the labels with --labels FILE.npy",
                    )
                })?;
                (read_npy_file(path)?, read_labels_file(labels_path)?, None)
            }
            _ if is_table(path) => {
                let (scores, labels, column) = spec.read_table()?;
                weights = column;
                (scores, labels, None)
            }
            Some("csv") => {
                let (scores, labels) = read_csv(path)?;
                let labels = match &spec.labels_path {
                    Some(p) => read_labels_file(p)?,
                    None => labels,
                };
                (scores, labels, None)
            }
            _ => {
                return Err(CliError::input(
                    path.display(),
                    "unknown file type; expected .npz, .npy, .safetensors, .csv, .parquet or \
                     .arrow/.feather/.ipc",
                ));
            }
        };
        let origin = match &used_split {
            Some(s) => format!("{} [{s}]", path.display()),
            None => path.display().to_string(),
        };
        let scores_origin = scores.origin.clone();
        let (mut values, n, c) = scores.into_scores()?;
        let labels = labels.into_labels()?;
        if labels.len() != n {
            return Err(CliError::input(
                &origin,
                format!("{n} score rows but {} labels", labels.len()),
            ));
        }
        let weights = match (&spec.weights_path, weights, &spec.weights_key) {
            (Some(p), ..) => Some(read_weights_file(p)?),
            (None, Some(w), _) => Some(w),
            (None, None, Some(_)) => {
                return Err(CliError::input(
                    &origin,
                    "--weights-key reads .npz and .safetensors files and table columns; give \
                     the weights of other files with --weights W.npy",
                ));
            }
            (None, None, None) => None,
        };
        if let Some(w) = &weights
            && w.len() != n
        {
            return Err(CliError::input(
                &origin,
                format!("{n} score rows but {} weights (one weight per row)", w.len()),
            ));
        }
        let mut warnings = Vec::new();
        let kind = interpret(&mut values, n, c, spec.input, &scores_origin, &mut warnings);
        Ok(Self {
            origin,
            split: used_split,
            scores: values,
            n_samples: n,
            n_columns: c,
            labels,
            weights,
            kind,
            warnings,
        })
    }

    /// For calibrators, which map logits: probabilities `[N, K]` become log-probabilities
    /// (valid logits: `softmax(ln p) = p`); other kinds are returned as they are.
    ///
    /// # Errors
    /// [`CliError::Input`] naming the first zero probability, which has no logarithm.
    pub fn into_logits(mut self) -> Result<Self> {
        if self.kind != ScoreKind::Probabilities {
            return Ok(self);
        }
        let floored = to_log_probabilities(&mut self.scores, self.n_columns, &self.origin, 0);
        self.warnings.extend(floored);
        self.kind = ScoreKind::Logits;
        Ok(self)
    }

    /// K (2 for binary input).
    pub fn n_classes(&self) -> usize {
        if self.kind == ScoreKind::Binary { 2 } else { self.n_columns }
    }

    /// Validated [`Predictions`] on `device`: held there when it is a GPU and they fit one
    /// buffer ([`Predictions::resident`]), else host rows uploaded in chunks as needed. The
    /// scores and labels move into them without a copy, leaving this dataset's description
    /// (origin, split, kind, warnings) and empty `scores` and `labels`.
    ///
    /// # Errors
    /// [`CliError::Core`] with calib-core's message: labels out of range, NaN/Inf (naming the
    /// first offending row), probabilities outside `[0, 1]` or rows not summing to 1.
    pub fn take_predictions(&mut self, device: &Device) -> Result<Predictions> {
        let config = InputConfig::new(self.kind);
        let (c, labels) = (self.n_columns, std::mem::take(&mut self.labels));
        let preds = match std::mem::replace(&mut self.scores, Scores::F32(Vec::new())) {
            Scores::F32(v) => Predictions::from_host_vec(v, c, labels, config, device),
            Scores::F64(v) => Predictions::from_host_vec(v, c, labels, config, device),
        };
        match self.weights.take() {
            Some(w) => preds.and_then(|p| p.with_weights(w)),
            None => preds,
        }
        .map(Predictions::resident)
        .map_err(|e| CliError::core(&self.origin, e))
    }
}

/// Decides what the scores mean, maps binary log-odds to probabilities and warns about
/// probabilities passed as logits.
pub(crate) fn interpret(
    scores: &mut Scores,
    n: usize,
    c: usize,
    input: ScoreInput,
    origin: &str,
    warnings: &mut Vec<String>,
) -> ScoreKind {
    // Lazy: logits usually leave [0, 1] within the first few values.
    let in_unit = || (0..scores.len()).all(|i| (0.0..=1.0).contains(&scores.get(i)));
    let sums_to_one =
        || (0..n).all(|i| ((0..c).map(|j| scores.get(i * c + j)).sum::<f64>() - 1.0).abs() <= 1e-3);
    match (c, input) {
        (1, ScoreInput::Probs) => ScoreKind::Binary,
        (1, ScoreInput::Logits) => {
            if in_unit() {
                warnings.push(format!(
                    "{origin}: every score is in [0, 1]: these look like probabilities, not \
                     log-odds; pass --input probs if they are"
                ));
            }
            scores.map_in_place(|s| 1.0 / (1.0 + (-s).exp()));
            ScoreKind::Binary
        }
        (_, ScoreInput::Probs) => ScoreKind::Probabilities,
        (_, ScoreInput::Logits) => {
            if in_unit() && sums_to_one() {
                warnings.push(format!(
                    "{origin}: every row is in [0, 1] and sums to 1: these look like \
                     probabilities, not logits; pass --input probs if they are"
                ));
            }
            ScoreKind::Logits
        }
    }
}

/// The floor of probabilities before their logarithm: `ln(max(p, 1e-30))`, as probmetrics
/// (`log(p + 1e-30)`) and CalArena do. Float32 softmax underflows to exact zeros far from the
/// argmax; the floor keeps those rows, 69 nats below the top.
pub const PROBABILITY_FLOOR: f64 = 1e-30;

/// Probabilities to log-probabilities in place, zeros (and anything below
/// [`PROBABILITY_FLOOR`]) floored at it; `first_row` numbers the rows in messages. Returns the
/// warning to say once when something was floored.
pub fn to_log_probabilities(
    scores: &mut Scores,
    n_columns: usize,
    origin: &str,
    first_row: usize,
) -> Option<String> {
    let floored = (0..scores.len()).filter(|&i| scores.get(i) < PROBABILITY_FLOOR);
    let (count, first) = floored.fold((0usize, None), |(n, f), i| (n + 1, f.or(Some(i))));
    scores.map_in_place(log_floored);
    first.map(|i| {
        format!(
            "{origin}: {count} probabilities below {PROBABILITY_FLOOR:e} (the first at row {}, \
             column {}) taken as {PROBABILITY_FLOOR:e} before the logarithm",
            first_row + i / n_columns,
            i % n_columns
        )
    })
}

/// `ln(max(p, PROBABILITY_FLOOR))` by calib-kernels' `ln_positive` (within 4 ulp of libm's
/// `ln`, and branch-free, so it vectorises in [`Scores::map_in_place`]). NaN and +inf stay NaN
/// and +inf, for the logits' check to name (`max` would floor a NaN, and `ln_positive` takes
/// finite values).
#[inline(always)]
fn log_floored(p: f64) -> f64 {
    let ln = calib_kernels::ln_positive(p.max(PROBABILITY_FLOOR));
    if p.is_nan() || p == f64::INFINITY { p } else { ln }
}

/// Scores and labels from a file of named arrays, by the key rules of this module.
fn from_store(
    store: &mut dyn ArrayStore,
    spec: &DataSpec,
    split: &str,
) -> Result<(Array, Array, Option<String>)> {
    let names = store.names();
    let has = |k: &str| names.iter().any(|n| n == k);
    let explicit_split = spec.split.is_some();
    let mut score_keys = vec![format!("{split}_logits")];
    if spec.input == ScoreInput::Probs {
        score_keys.push(format!("{split}_probs"));
    }
    if !explicit_split {
        score_keys.push("logits".into());
        if spec.input == ScoreInput::Probs {
            score_keys.push("probs".into());
        }
    }
    let scores_key = match &spec.logits_key {
        Some(k) => k.clone(),
        None => score_keys.iter().find(|k| has(k)).cloned().ok_or_else(|| {
            CliError::input(
                store.origin(),
                format!(
                    "no scores array: looked for {}; the file has {}",
                    quoted(&score_keys),
                    quoted(&names)
                ),
            )
        })?,
    };
    let used_split = scores_key.strip_prefix(&format!("{split}_")).map(|_| split.to_string());
    let labels_key = match &spec.labels_key {
        Some(k) => k.clone(),
        None if used_split.is_some() => format!("{split}_labels"),
        None => "labels".to_string(),
    };
    let scores = read_key(store, &scores_key, &names)?;
    let labels = match &spec.labels_path {
        Some(p) => read_labels_file(p)?,
        None => read_key(store, &labels_key, &names)?,
    };
    Ok((scores, labels, used_split))
}

/// The weights array `--weights-key KEY` names: `{split}_KEY` when the file has it, else `KEY`.
fn weights_from_store(
    store: &mut dyn ArrayStore,
    spec: &DataSpec,
    split: &str,
) -> Result<Option<Array>> {
    let Some(key) = &spec.weights_key else { return Ok(None) };
    let names = store.names();
    let split_key = format!("{split}_{key}");
    let key = if names.contains(&split_key) { &split_key } else { key };
    read_key(store, key, &names).map(Some)
}

/// Sample weights from a `.npy` file (`--weights W.npy`).
pub(crate) fn read_weights_file(path: &Path) -> Result<Vec<f64>> {
    read_weights(read_npy_file(path)?)
}

/// Sample weights from a 1-D array (or one column) of any number type.
fn read_weights(array: Array) -> Result<Vec<f64>> {
    let n = match array.shape[..] {
        [n] | [n, 1] => n,
        _ => {
            return Err(CliError::input(
                &array.origin,
                format!("weights must be one value per row, found shape {:?}", array.shape),
            ));
        }
    };
    Ok((0..n).map(|i| array.values.get_f64(i)).collect())
}

fn read_key(store: &mut dyn ArrayStore, key: &str, names: &[String]) -> Result<Array> {
    store.read(key)?.ok_or_else(|| {
        CliError::input(store.origin(), format!("no array `{key}`; the file has {}", quoted(names)))
    })
}

pub(crate) fn read_labels_file(path: &Path) -> Result<Array> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("npy") => Ok(read_npy_file(path)?),
        _ => Err(CliError::input(path.display(), "labels files must be .npy")),
    }
}

fn quoted(names: &[String]) -> String {
    if names.is_empty() {
        return "no arrays".into();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorised logarithm is libm's to 4 ulp on probabilities of every scale (also on
    /// blocks shared among threads), floors what is below the floor, and keeps NaN and +inf
    /// for the logits' check to name.
    #[test]
    fn log_probabilities_are_floored_and_keep_what_is_not_a_number() {
        let mut values: Vec<f64> = (0..200_000).map(|i| (i as f64 + 0.5) / 200_000.0).collect();
        values.extend([1.0, 1e-300, 0.0, 1e-31, f64::NAN, f64::INFINITY]);
        let mut scores = Scores::F64(values.clone());
        let said = to_log_probabilities(&mut scores, 2, "t", 0).expect("floored values named");
        assert!(said.contains("3 probabilities below"), "{said}");
        let Scores::F64(logs) = scores else { unreachable!() };
        for (&p, &l) in values.iter().zip(&logs) {
            let libm = p.max(PROBABILITY_FLOOR).ln();
            match p {
                p if p.is_nan() => assert!(l.is_nan()),
                f64::INFINITY => assert_eq!(l, f64::INFINITY),
                _ => assert!((l - libm).abs() <= 4.0 * f64::EPSILON * libm.abs(), "{p}: {l}"),
            }
        }
        let mut single = Scores::F32(vec![0.25, 0.0, 1.0]);
        to_log_probabilities(&mut single, 3, "t", 0);
        assert_eq!(single, Scores::F32(vec![0.25f64.ln() as f32, 1e-30f64.ln() as f32, 0.0]));
    }
}
