//! `calib eval` over a `.npy` too large to hold: row chunks through
//! [`calib_core::StreamingEvaluation`] (a pass for the sums, more for adaptive ranges), the
//! calibrator (if any) applied per chunk.

use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::{CalibError, EvaluationConfig, EvaluationState, Report};
use calib_train::AnyCalibrator;
use indicatif::{ProgressBar, ProgressStyle};

use super::Context;
use crate::cli::EvalArgs;
use crate::error::{CliError, Result};
use crate::io::{NpyChunks, Scores, interpret, read_labels_file, to_log_probabilities};

/// .npy score files above this size are read in chunks when the metrics allow it.
pub(super) const AUTO_CHUNK_BYTES: u64 = 256 << 20;

/// Elements per automatic chunk (8 Mi values: 32 MiB of f32).
const AUTO_CHUNK_ELEMENTS: usize = 8 << 20;

/// Whether `args` asks for (or qualifies for) chunked reading.
pub(super) fn wanted(args: &EvalArgs, config: &EvaluationConfig) -> Result<bool> {
    let path = &args.data.data;
    let is_npy =
        path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    match args.chunk_rows {
        Some(0) => Err(CliError::Usage("--chunk-rows must be at least 1".into())),
        Some(_) if !is_npy => {
            Err(CliError::Usage("--chunk-rows reads .npy score files only".into()))
        }
        Some(_) => config.streaming().map(|_| true).map_err(|e| CliError::Usage(super::plain(e))),
        None => Ok(is_npy
            && config.can_stream()
            && std::fs::metadata(path).is_ok_and(|m| m.len() > AUTO_CHUNK_BYTES)),
    }
}

/// Evaluates `args`' .npy in chunks, pass after pass while adaptive ranges need it; returns
/// the report, the origin string and the final state.
pub(super) fn run(
    args: &EvalArgs,
    config: &EvaluationConfig,
    calibrator: Option<&AnyCalibrator>,
    ctx: &Context,
) -> Result<(Report, String, EvaluationState)> {
    let path = &args.data.data;
    let origin = path.display().to_string();
    let labels_path = args.data.labels.as_ref().ok_or_else(|| {
        CliError::input(
            &origin,
            "a .npy file holds only scores; give the labels with --labels FILE.npy",
        )
    })?;
    let labels = read_labels_file(labels_path)?.into_labels()?;
    let chunks = NpyChunks::open(path)?;
    let (n, c) = (chunks.n_rows, chunks.n_columns);
    if labels.len() != n {
        return Err(CliError::input(
            &origin,
            format!("{n} score rows but {} labels", labels.len()),
        ));
    }
    let rows = args.chunk_rows.unwrap_or((AUTO_CHUNK_ELEMENTS / c).max(1));
    ctx.note(&format!("reading {origin} in chunks of {rows} rows"));
    let mut stream = config.streaming().map_err(|e| CliError::Usage(super::plain(e)))?;
    let bar = progress(ctx, n);
    let mut warnings = Vec::new();
    loop {
        bar.set_position(0);
        bar.set_message(format!("pass {}", stream.pass()));
        let mut chunks = NpyChunks::open(path)?;
        while let Some((start, scores)) = chunks.next_chunk(rows)? {
            let len = scores.len() / c;
            let preds = chunk_predictions(
                args,
                calibrator,
                ctx,
                scores,
                &labels[start..start + len],
                start,
                &mut warnings,
            )?;
            stream.update(&preds).map_err(|e| CliError::core(&origin, e))?;
            bar.inc(len as u64);
        }
        if !stream.end_pass().map_err(|e| CliError::core(&origin, e))? {
            break;
        }
    }
    bar.finish_and_clear();
    warnings.iter().for_each(|w| ctx.warn(&format!("{w} (judged on the first chunk)")));
    let report = stream.finish().map_err(|e| CliError::core(&origin, e))?;
    Ok((report, origin, stream.state().clone()))
}

/// A progress bar over the rows of each pass on stderr (drawn only on a terminal).
fn progress(ctx: &Context, rows: usize) -> ProgressBar {
    if ctx.quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(rows as u64);
    let style =
        ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} rows ({per_sec}, {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// The predictions of one chunk starting at row `start`: scores interpreted as `--input`
/// says, the calibrator applied; warnings of the first chunk kept in `warnings`.
fn chunk_predictions(
    args: &EvalArgs,
    calibrator: Option<&AnyCalibrator>,
    ctx: &Context,
    mut scores: Scores,
    y: &[i64],
    start: usize,
    warnings: &mut Vec<String>,
) -> Result<Predictions> {
    let origin = args.data.data.display().to_string();
    let (len, c) = (y.len(), scores.len() / y.len().max(1));
    let mut chunk_warnings = Vec::new();
    let mut kind = interpret(&mut scores, len, c, args.data.input, &origin, &mut chunk_warnings);
    if calibrator.is_some() && kind == ScoreKind::Probabilities {
        to_log_probabilities(&mut scores, c, &origin, start)?;
        kind = ScoreKind::Logits;
    }
    if start == 0 {
        *warnings = chunk_warnings;
    }
    let config_in = InputConfig::new(kind);
    let preds = match &scores {
        Scores::F32(v) => Predictions::from_host(v, c, y, config_in, &ctx.device),
        Scores::F64(v) => Predictions::from_host(v, c, y, config_in, &ctx.device),
    }
    .map_err(|e| CliError::core(&origin, shift_row(e, start)))?;
    match calibrator {
        Some(cal) => cal.calibrate(&preds).map_err(|e| CliError::train(&origin, e)),
        None => Ok(preds),
    }
}

/// A validation error of a chunk starting at row `start`, with the row in the whole file.
fn shift_row(e: CalibError, start: usize) -> CalibError {
    match e {
        CalibError::NonFinite { row, column, value } => {
            CalibError::NonFinite { row: row + start, column, value }
        }
        CalibError::LabelOutOfRange { row, label, n_classes } => {
            CalibError::LabelOutOfRange { row: row + start, label, n_classes }
        }
        CalibError::ProbabilityOutOfRange { row, column, value } => {
            CalibError::ProbabilityOutOfRange { row: row + start, column, value }
        }
        CalibError::RowSum { row, sum, tolerance } => {
            CalibError::RowSum { row: row + start, sum, tolerance }
        }
        other => other,
    }
}
