//! `calib eval` over a `.npy` or a table (Parquet, Arrow IPC) too large to hold: row chunks
//! through [`calib_core::StreamingEvaluation`] (a pass for the sums, more for adaptive ranges),
//! the calibrator (if any) applied per chunk.

use calib_core::input::{HostValues, InputConfig, Predictions, SampleWeights, ScoreKind};
use calib_core::{CalibError, EvaluationConfig, EvaluationState, Report, StreamingEvaluation};
use calib_kernels::trace::step;
use calib_train::AnyCalibrator;
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::EvalArgs;
use crate::commands::context::Context;
use crate::error::{CliError, Result};
use crate::io::{
    NpyChunks, RowChunk, Scores, TableChunks, interpret, is_table, read_labels_file,
    to_log_probabilities,
};

/// Score files above this size are read in chunks when the metrics allow it.
pub(super) const AUTO_CHUNK_BYTES: u64 = 256 << 20;

/// Elements per automatic chunk, at least (2 Mi values: 8 MiB of f32). glibc serves
/// allocations of 32 MiB and more by a fresh `mmap` each time (its dynamic threshold stops
/// there), so a chunk that size would page-fault through zeroed memory on every read were its
/// buffer not reused (docs/benchmarks.md, "Chunk size").
const AUTO_CHUNK_ELEMENTS: usize = 2 << 20;

/// Rows per automatic chunk, at least, where [`MAX_CHUNK_ELEMENTS`] allows: 16 of the engine's
/// blocks of 4,096 rows, so that 16 threads share every chunk's row passes.
const PARALLEL_CHUNK_ROWS: usize = 16 * 4096;

/// Elements per automatic chunk, at most (8 Mi values: 32 MiB of f32).
const MAX_CHUNK_ELEMENTS: usize = 8 << 20;

/// Whether `args` asks for (or qualifies for) chunked reading.
pub(super) fn wanted(args: &EvalArgs, config: &EvaluationConfig) -> Result<bool> {
    let path = &args.data.data;
    let streams = streams(path);
    match args.chunk_rows {
        Some(0) => Err(CliError::Usage("--chunk-rows must be at least 1".into())),
        Some(_) if !streams => Err(CliError::Usage(
            "--chunk-rows reads .npy score files and Parquet/Arrow tables only".into(),
        )),
        Some(_) => config.streaming().map(|_| true).map_err(|e| CliError::Usage(super::plain(e))),
        None => Ok(streams
            && config.can_stream()
            && std::fs::metadata(path).is_ok_and(|m| m.len() > AUTO_CHUNK_BYTES)),
    }
}

/// Whether `path` can be read in row chunks: a `.npy` of scores or a table.
pub(super) fn streams(path: &std::path::Path) -> bool {
    let is_npy =
        path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    is_npy || is_table(path)
}

/// Where the chunks come from: a `.npy` of scores with its labels, or a table.
enum Source {
    Npy { chunks: NpyChunks, labels: Vec<i64> },
    Table(TableChunks),
}

impl Source {
    /// Opens `args`' data for a pass; `labels` are a `.npy`'s, read once for every pass.
    fn open(args: &EvalArgs, rows: usize, labels: &mut Option<Vec<i64>>) -> Result<Self> {
        let path = &args.data.data;
        if is_table(path) {
            return args.data.spec().open_table(rows).map(Self::Table);
        }
        let origin = path.display().to_string();
        let chunks = NpyChunks::open(path)?;
        let labels = match labels.take() {
            Some(l) => l,
            None => {
                let labels_path = args.data.labels.as_ref().ok_or_else(|| {
                    CliError::input(
                        &origin,
                        "a .npy file holds only scores; give the labels with --labels FILE.npy",
                    )
                })?;
                read_labels_file(labels_path)?.into_labels()?
            }
        };
        if labels.len() != chunks.n_rows {
            return Err(CliError::input(
                &origin,
                format!("{} score rows but {} labels", chunks.n_rows, labels.len()),
            ));
        }
        Ok(Self::Npy { chunks, labels })
    }

    /// Rows, when known before reading.
    fn n_rows(&self) -> Option<usize> {
        match self {
            Self::Npy { chunks, .. } => Some(chunks.n_rows),
            Self::Table(t) => t.n_rows,
        }
    }

    /// Chunk rows for `--chunk-rows` or the automatic size.
    fn chunk_rows(&self, args: &EvalArgs) -> usize {
        let width = match self {
            Self::Npy { chunks, .. } => chunks.n_columns,
            // K is unknown before the first batch; 16,384 rows keep a batch of K = 100 at
            // 6.5 MB beside the row group the Parquet reader holds.
            Self::Table(_) => 128,
        };
        let auto = (AUTO_CHUNK_ELEMENTS / width).max(PARALLEL_CHUNK_ROWS);
        args.chunk_rows.unwrap_or(auto.min(MAX_CHUNK_ELEMENTS / width).max(1))
    }

    /// The next chunk, a `.npy`'s read into `spare` (an earlier chunk's scores) where it fits.
    fn next(&mut self, rows: usize, spare: Option<Scores>) -> Result<Option<RowChunk>> {
        match self {
            Self::Npy { chunks, labels } => {
                Ok(chunks.next_chunk(rows, spare)?.map(|(start, scores)| {
                    let n_columns = chunks.n_columns;
                    let len = scores.len() / n_columns;
                    RowChunk {
                        start,
                        scores,
                        n_columns,
                        labels: labels[start..start + len].to_vec(),
                        weights: None,
                    }
                }))
            }
            Self::Table(t) => Ok(t.next_chunk(rows)?),
        }
    }

    /// Feeds every chunk of the source to `consume`; returns the source for the next pass.
    /// `consume` hands back the chunk's scores when it is done with them, and the next chunk
    /// is read into them. A `.npy`'s chunk is read by every thread at once, each its own rows
    /// ([`NpyChunks`]); a table is read and decoded on a thread of its own, a chunk ahead of
    /// `consume`, so decoding overlaps the engine.
    fn feed(
        mut self,
        rows: usize,
        mut consume: impl FnMut(RowChunk) -> Result<Option<Scores>>,
    ) -> Result<Self> {
        if matches!(self, Self::Npy { .. }) {
            let mut spare = None;
            while let Some(chunk) = step("read", || self.next(rows, spare.take()))? {
                spare = consume(chunk)?;
            }
            return Ok(self);
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<RowChunk>>(1);
            let (spare_tx, spare_rx) = std::sync::mpsc::channel::<Scores>();
            let reader = scope.spawn(move || {
                loop {
                    let next = self.next(rows, spare_rx.try_recv().ok()).transpose();
                    let end = !matches!(next, Some(Ok(_)));
                    if next.is_none_or(|c| tx.send(c).is_err()) || end {
                        return self;
                    }
                }
            });
            // An error drops `rx` (the iterator owns it), which ends the reader at its next
            // send; a spare sent after the reader has ended is dropped with the channel.
            let next = move || step("read", || rx.recv().ok());
            let consumed = std::iter::from_fn(next).try_for_each(|chunk| {
                if let Some(spare) = consume(chunk?)? {
                    let _ = spare_tx.send(spare);
                }
                Ok(())
            });
            let source = reader.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            consumed.map(|()| source)
        })
    }

    /// The `.npy` labels, kept for the next pass.
    fn into_labels(self) -> Option<Vec<i64>> {
        match self {
            Self::Npy { labels, .. } => Some(labels),
            Self::Table(_) => None,
        }
    }
}

/// Evaluates `args`' data in chunks, pass after pass while adaptive ranges need it; returns
/// the report, the origin string and the state to save (`--save-state`): the first pass's,
/// which merges with other shards' first passes.
pub(super) fn run(
    args: &EvalArgs,
    config: &EvaluationConfig,
    calibrator: Option<&AnyCalibrator>,
    ctx: &Context,
) -> Result<(Report, String, EvaluationState)> {
    let mut stream = config.streaming().map_err(|e| CliError::Usage(super::plain(e)))?;
    let mut reader = PassReader::open(args, ctx)?;
    let mut first_pass = None;
    loop {
        calib_kernels::trace::begin(format!("pass {}", stream.pass()));
        reader.pass(args, calibrator, ctx, &mut stream)?;
        if stream.pass() == 1 && args.save_state.is_some() {
            first_pass = Some(stream.state().clone());
        }
        let more = step("end of pass", || stream.end_pass())
            .map_err(|e| CliError::core(&reader.origin, e))?;
        calib_kernels::trace::end();
        if !more {
            break;
        }
    }
    reader.finish(ctx);
    let report = stream.finish().map_err(|e| CliError::core(&reader.origin, e))?;
    let state = first_pass.unwrap_or_else(|| stream.state().clone());
    Ok((report, reader.origin, state))
}

/// Feeds every row of `args`' data to `stream` once, in chunks: one pass.
pub(super) fn one_pass(
    args: &EvalArgs,
    calibrator: Option<&AnyCalibrator>,
    ctx: &Context,
    stream: &mut StreamingEvaluation,
) -> Result<()> {
    let mut reader = PassReader::open(args, ctx)?;
    reader.pass(args, calibrator, ctx, stream)?;
    reader.finish(ctx);
    Ok(())
}

/// What the passes over one file share: the chunk size, a `.npy`'s labels, the sample
/// weights, the progress bar, the first chunk's warnings and the first note of probabilities
/// floored before the log.
struct PassReader {
    origin: String,
    rows: usize,
    labels: Option<Vec<i64>>,
    /// `--weights W.npy`, read whole and checked once (one value per row, 8 bytes a row).
    weights: Option<SampleWeights>,
    bar: ProgressBar,
    warnings: Vec<String>,
    floored: Option<String>,
}

impl PassReader {
    fn open(args: &EvalArgs, ctx: &Context) -> Result<Self> {
        let origin = args.data.data.display().to_string();
        let mut labels = None;
        let probe = Source::open(args, 1, &mut labels)?;
        let rows = probe.chunk_rows(args);
        let bar = progress(ctx, probe.n_rows());
        ctx.note(&format!("reading {origin} in chunks of {rows} rows"));
        let weights = read_weights(args, probe.n_rows(), &origin)?;
        let labels = probe.into_labels();
        let (warnings, floored) = (Vec::new(), None);
        Ok(Self { origin, rows, labels, weights, bar, warnings, floored })
    }

    /// One pass over the rows into `stream`.
    fn pass(
        &mut self,
        args: &EvalArgs,
        calibrator: Option<&AnyCalibrator>,
        ctx: &Context,
        stream: &mut StreamingEvaluation,
    ) -> Result<()> {
        self.bar.set_position(0);
        self.bar.set_message(format!("pass {}", stream.pass()));
        let source = Source::open(args, self.rows, &mut self.labels)?;
        let (bar, origin) = (&self.bar, &self.origin);
        let weights = self.weights.as_ref().map(SampleWeights::values);
        let (warnings, floored) = (&mut self.warnings, &mut self.floored);
        let mut seen = 0;
        let source = source.feed(self.rows, |mut chunk| {
            let len = chunk.labels.len();
            seen = chunk.start + len;
            let weights = match weights {
                Some(w) => Some(chunk_weights(w, chunk.start, len, origin)?),
                None => chunk.weights.take(),
            };
            let chunk = (chunk, weights);
            let preds = step("checks", || {
                chunk_predictions(args, calibrator, ctx, chunk, warnings, floored)
            })?;
            stream.update(&preds).map_err(|e| CliError::core(origin, e))?;
            bar.inc(len as u64);
            Ok(preds.into_host_values().map(|values| match values {
                HostValues::F32(v) => Scores::F32(v.into_owned()),
                HostValues::F64(v) => Scores::F64(v.into_owned()),
            }))
        })?;
        self.labels = source.into_labels();
        match weights.filter(|w| w.len() != seen) {
            Some(w) => Err(weight_count(origin, seen, w.len())),
            None => Ok(()),
        }
    }

    /// Clears the bar and prints the warnings of the first chunk and the floor's note.
    fn finish(&self, ctx: &Context) {
        self.bar.finish_and_clear();
        self.warnings.iter().for_each(|w| ctx.warn(&format!("{w} (judged on the first chunk)")));
        self.floored.iter().for_each(|w| ctx.warn(w));
    }
}

/// A progress bar over the rows of each pass on stderr (drawn only on a terminal; a spinner
/// when the rows are not known ahead).
fn progress(ctx: &Context, rows: Option<usize>) -> ProgressBar {
    if ctx.quiet {
        return ProgressBar::hidden();
    }
    let Some(rows) = rows else {
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{msg} {spinner} {pos} rows ({per_sec})") {
            bar.set_style(style);
        }
        return bar;
    };
    let bar = ProgressBar::new(rows as u64);
    let style =
        ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} rows ({per_sec}, {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// `--weights W.npy` for a file read in chunks (`n_rows` rows, when known ahead), checked as a
/// whole: one finite, non-negative weight per row, at least one positive. A table's weight
/// column (`--weights-key`) comes with each chunk instead.
fn read_weights(
    args: &EvalArgs,
    n_rows: Option<usize>,
    origin: &str,
) -> Result<Option<SampleWeights>> {
    let spec = args.data.spec();
    if spec.weights_key.is_some() && !is_table(&spec.path) {
        return Err(CliError::input(
            origin,
            "--weights-key reads .npz and .safetensors files and table columns; give the \
             weights of a .npy with --weights W.npy",
        ));
    }
    let Some(path) = &spec.weights_path else { return Ok(None) };
    let weights = crate::io::read_weights_file(path)?;
    if let Some(n) = n_rows.filter(|&n| n != weights.len()) {
        return Err(weight_count(origin, n, weights.len()));
    }
    let n = weights.len();
    let checked = SampleWeights::new(weights, n).map_err(|e| CliError::core(path.display(), e))?;
    Ok(Some(checked))
}

/// The weights of the chunk of `len` rows from row `start`.
fn chunk_weights(weights: &[f64], start: usize, len: usize, origin: &str) -> Result<Vec<f64>> {
    match weights.get(start..start + len) {
        Some(w) => Ok(w.to_vec()),
        None => Err(weight_count(origin, start + len, weights.len())),
    }
}

fn weight_count(origin: &str, rows: usize, weights: usize) -> CliError {
    CliError::input(origin, format!("{rows} score rows but {weights} weights (one weight per row)"))
}

/// The predictions of one chunk (with its sample weights, if any): scores interpreted as
/// `--input` says, the calibrator applied; warnings of the first chunk kept in `warnings`, the
/// first chunk's note of floored probabilities in `floored`. The chunk's buffers move into the
/// predictions, uncopied.
fn chunk_predictions(
    args: &EvalArgs,
    calibrator: Option<&AnyCalibrator>,
    ctx: &Context,
    (chunk, weights): (RowChunk, Option<Vec<f64>>),
    warnings: &mut Vec<String>,
    floored: &mut Option<String>,
) -> Result<Predictions> {
    let origin = args.data.data.display().to_string();
    let RowChunk { start, mut scores, n_columns: c, labels, .. } = chunk;
    let mut chunk_warnings = Vec::new();
    let len = labels.len();
    let mut kind = interpret(&mut scores, len, c, args.data.input, &origin, &mut chunk_warnings);
    if calibrator.is_some() && kind == ScoreKind::Probabilities {
        let said = to_log_probabilities(&mut scores, c, &origin, start);
        kind = ScoreKind::Logits;
        if floored.is_none() {
            *floored = said;
        }
    }
    if start == 0 {
        *warnings = chunk_warnings;
    }
    let config_in = InputConfig::new(kind);
    let preds = match scores {
        Scores::F32(v) => Predictions::from_host_vec(v, c, labels, config_in, &ctx.device),
        Scores::F64(v) => Predictions::from_host_vec(v, c, labels, config_in, &ctx.device),
    }
    .map_err(|e| CliError::core(&origin, shift_row(e, start)))?;
    let preds = match weights {
        Some(w) => {
            preds.with_chunk_weights(w).map_err(|e| CliError::core(&origin, shift_row(e, start)))?
        }
        None => preds,
    };
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
        CalibError::BadWeight { row, value } => CalibError::BadWeight { row: row + start, value },
        other => other,
    }
}
