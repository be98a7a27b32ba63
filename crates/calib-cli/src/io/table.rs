//! Parquet and Arrow IPC tables (`.parquet`; `.arrow`, `.feather`, `.ipc` files or streams),
//! read batch by batch: a Parquet file's row groups decoded on several threads and handed out
//! in file order ([`ParallelRowGroups`]), so evaluating a table larger than memory needs
//! memory for a few batches per thread.
//!
//! Columns: scores are one list column (`FixedSizeList`/`List` of floats; K classes), one float
//! column (binary), or K float columns; labels one integer or boolean column. `--logits-key`
//! names the score column, a comma-separated list of columns, or a prefix whose numbered
//! columns (`p_0, p_1, ...` or `p0, p1, ...`) are the classes in number order; without it,
//! `logits` (`probs` with `--input probs`), then numbered `logits_*`/`probs_*` columns, then
//! every float column but the labels, in order. `--labels-key` names the label column; without it,
//! `labels`, then `label`. Row meaning and checks are [`calib_datafusion::rows`]', the same as
//! the SQL aggregates'.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use calib_datafusion::RowsError;
use calib_datafusion::datafusion::arrow::array::RecordBatch;
use calib_datafusion::datafusion::arrow::datatypes::SchemaRef;
use calib_datafusion::datafusion::arrow::error::ArrowError;
use calib_datafusion::datafusion::arrow::ipc::reader::{FileReader, StreamReader};
use calib_datafusion::datafusion::parquet::arrow::ProjectionMask;
use calib_datafusion::datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use calib_datafusion::rows::{
    RowScores, Rows, gather, gather_columns, is_label_type, is_score_type,
};

use super::array::{Array, Scores, Values};
use super::parquet_groups::ParallelRowGroups;
use super::parquet_pages::PageColumns;
use super::spec::{DataSpec, ScoreInput};
use crate::error::{CliError, Result};

/// Whether `path` names a table file by its extension.
pub fn is_table(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    matches!(ext.as_deref(), Some("parquet" | "arrow" | "arrows" | "feather" | "ipc"))
}

type Batches = Box<dyn Iterator<Item = std::result::Result<RecordBatch, ArrowError>> + Send>;

/// Which columns hold the scores and the labels.
#[derive(Debug, Clone)]
struct Layout {
    scores: Vec<String>,
    label: String,
}

/// Rows read at once from a table or a `.npy` (with its labels).
#[derive(Debug, Clone, PartialEq)]
pub struct RowChunk {
    /// Its first row in the file.
    pub start: usize,
    /// Scores `[n, C]` row-major.
    pub scores: Scores,
    /// C.
    pub n_columns: usize,
    /// Labels.
    pub labels: Vec<i64>,
}

/// A table read in row chunks.
pub struct TableChunks {
    origin: String,
    layout: Layout,
    batches: Batches,
    pending: Option<RecordBatch>,
    next_row: usize,
    /// N, when the file says (Parquet and IPC files do; IPC streams do not).
    pub n_rows: Option<usize>,
}

impl TableChunks {
    /// Opens the table `spec` names, to be read in chunks of at most `rows` rows.
    ///
    /// # Errors
    /// [`CliError::Input`] for a missing or unreadable file, and for score or label columns
    /// that are missing or of the wrong type (naming the columns there are).
    pub fn open(spec: &DataSpec, rows: usize) -> Result<Self> {
        let origin = spec.path.display().to_string();
        let fail = |e: String| CliError::input(&origin, e);
        if spec.labels_path.is_some() {
            return Err(CliError::Usage(
                "a table holds its labels (--labels-key); --labels is for .npy scores".into(),
            ));
        }
        if spec.split.is_some() {
            return Err(CliError::Usage("a table has no splits; drop --split".into()));
        }
        let file = File::open(&spec.path).map_err(|e| fail(e.to_string()))?;
        let ext = spec.path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let (layout, batches, n_rows) = if ext.eq_ignore_ascii_case("parquet") {
            open_parquet(file, spec, rows).map_err(fail)?
        } else {
            open_ipc(file, spec).map_err(fail)?
        };
        Ok(Self { origin, layout, batches, pending: None, next_row: 0, n_rows })
    }

    /// The next chunk of at most `rows` rows: its first row, scores `[n, C]`, C and labels.
    ///
    /// # Errors
    /// [`CliError::Input`] for unreadable batches, nulls, ragged score lists (naming the row).
    pub fn next_chunk(&mut self, rows: usize) -> Result<Option<RowChunk>> {
        let batch = loop {
            let batch = match self.pending.take() {
                Some(b) => b,
                None => match self.batches.next() {
                    None => return Ok(None),
                    Some(b) => b.map_err(|e| CliError::input(&self.origin, e.to_string()))?,
                },
            };
            if batch.num_rows() > 0 {
                break batch;
            }
        };
        let rows = rows.max(1);
        let batch = if batch.num_rows() > rows {
            self.pending = Some(batch.slice(rows, batch.num_rows() - rows));
            batch.slice(0, rows)
        } else {
            batch
        };
        let start = self.next_row;
        let gathered =
            self.gather(&batch).map_err(|e| CliError::input(&self.origin, shift_row(e, start)))?;
        self.next_row += batch.num_rows();
        let scores = match gathered.scores {
            RowScores::F32(v) => Scores::F32(v),
            RowScores::F64(v) => Scores::F64(v),
        };
        Ok(Some(RowChunk { start, scores, n_columns: gathered.n_columns, labels: gathered.labels }))
    }

    fn gather(&self, batch: &RecordBatch) -> std::result::Result<Rows, RowsError> {
        let column = |name: &str| batch.column_by_name(name).expect("projected").clone();
        let labels = column(&self.layout.label);
        match &self.layout.scores[..] {
            [one] => gather(column(one).as_ref(), labels.as_ref(), None),
            many => {
                let columns: Vec<_> = many.iter().map(|n| column(n)).collect();
                let refs: Vec<&dyn calib_datafusion::datafusion::arrow::array::Array> =
                    columns.iter().map(|c| c.as_ref()).collect();
                gather_columns(&refs, labels.as_ref(), None)
            }
        }
    }
}

/// The whole table as a score array (`[N, C]`, or `[N]` for one column) and a label array.
///
/// # Errors
/// As [`TableChunks::open`] and [`TableChunks::next_chunk`]; an empty table.
pub fn read_table(spec: &DataSpec) -> Result<(Array, Array)> {
    let mut chunks = TableChunks::open(spec, 1 << 16)?;
    let origin = chunks.origin.clone();
    let (mut f32s, mut f64s, mut labels, mut width) = (Vec::new(), Vec::new(), Vec::new(), None);
    while let Some(chunk) = chunks.next_chunk(1 << 16)? {
        width.get_or_insert(chunk.n_columns);
        // Every batch has the schema's type; should f64 rows follow f32 ones, widen in order.
        match chunk.scores {
            Scores::F32(v) if f64s.is_empty() => f32s.extend(v),
            Scores::F32(v) => f64s.extend(v.into_iter().map(f64::from)),
            Scores::F64(v) => {
                f64s.extend(f32s.drain(..).map(f64::from));
                f64s.extend(v);
            }
        }
        labels.extend(chunk.labels);
    }
    let c = width.ok_or_else(|| CliError::input(&origin, "the table has no rows"))?;
    let n = labels.len();
    let values = if f64s.is_empty() { Values::F32(f32s) } else { Values::F64(f64s) };
    let shape = if c == 1 { vec![n] } else { vec![n, c] };
    let dtype = if matches!(values, Values::F32(_)) { "float32" } else { "float64" };
    let scores = Array::new(format!("{origin}:scores"), dtype.into(), shape, values)?;
    let labels =
        Array::new(format!("{origin}:labels"), "int64".into(), vec![n], Values::Int(labels))?;
    Ok((scores, labels))
}

/// A file's columns for `spec`, its batches (projected to those columns where the format
/// allows) and N when the file says.
type Opened = (Layout, Batches, Option<usize>);

fn open_parquet(file: File, spec: &DataSpec, rows: usize) -> std::result::Result<Opened, String> {
    let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::default())
        .map_err(|e| format!("not a readable Parquet file ({e})"))?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone());
    let schema = builder.schema().clone();
    let layout = resolve(&schema, spec)?;
    let n_rows = usize::try_from(builder.metadata().file_metadata().num_rows()).ok();
    let roots = layout_indices(&schema, &layout);
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let fast = match layout.scores.as_slice() {
        [scores] => PageColumns::find(builder.metadata(), scores, &layout.label),
        _ => None,
    };
    let batches = ParallelRowGroups::start(&spec.path, metadata, mask, rows.max(1), fast);
    Ok((layout, Box::new(batches), n_rows))
}

fn open_ipc(mut file: File, spec: &DataSpec) -> std::result::Result<Opened, String> {
    let mut magic = [0u8; 6];
    let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
    let reopen = || File::open(&spec.path).map_err(|e| e.to_string());
    if is_file {
        let reader = FileReader::try_new(reopen()?, None)
            .map_err(|e| format!("not a readable Arrow IPC file ({e})"))?;
        let schema = reader.schema();
        let layout = resolve(&schema, spec)?;
        let projection = layout_indices(&schema, &layout);
        let reader = FileReader::try_new(reopen()?, Some(projection)).map_err(|e| e.to_string())?;
        return Ok((layout, Box::new(reader), None));
    }
    let reader = StreamReader::try_new(BufReader::new(reopen()?), None)
        .map_err(|e| format!("not a readable Arrow IPC file or stream ({e})"))?;
    let layout = resolve(&reader.schema(), spec)?;
    Ok((layout, Box::new(reader), None))
}

/// Schema indices of the layout's columns, ascending.
fn layout_indices(schema: &SchemaRef, layout: &Layout) -> Vec<usize> {
    let mut names: Vec<&String> = layout.scores.iter().collect();
    names.push(&layout.label);
    let mut indices: Vec<usize> = names.iter().filter_map(|n| schema.index_of(n).ok()).collect();
    indices.sort_unstable();
    indices.dedup();
    indices
}

/// The score and label columns of `schema`, by the rules of the module docs.
fn resolve(schema: &SchemaRef, spec: &DataSpec) -> std::result::Result<Layout, String> {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let listing = || format!("columns: {}", names.join(", "));
    let type_of = |n: &str| schema.field_with_name(n).map(|f| f.data_type().clone()).ok();
    let label = match &spec.labels_key {
        Some(k) if names.contains(&k.as_str()) => k.clone(),
        Some(k) => return Err(format!("no label column `{k}` ({})", listing())),
        None => ["labels", "label"]
            .into_iter()
            .find(|n| names.contains(n))
            .map(str::to_string)
            .ok_or_else(|| format!("no label column: name it with --labels-key ({})", listing()))?,
    };
    let label_type = type_of(&label).expect("found above");
    if !is_label_type(&label_type) {
        return Err(format!("labels `{label}` must be integers or booleans, found {label_type}"));
    }
    let floats: Vec<&str> = schema
        .fields()
        .iter()
        .filter(|f| f.data_type().is_floating() && *f.name() != label)
        .map(|f| f.name().as_str())
        .collect();
    let scores = score_columns(&names, &floats, spec).ok_or_else(|| match &spec.logits_key {
        Some(k) => format!("no score column or columns `{k}` ({})", listing()),
        None => format!("no score column: name it with --logits-key ({})", listing()),
    })?;
    for s in &scores {
        let t = type_of(s).ok_or_else(|| format!("no score column `{s}` ({})", listing()))?;
        let ok = if scores.len() == 1 { is_score_type(&t) } else { t.is_floating() };
        if !ok {
            let what =
                if scores.len() == 1 { "a float column or a list of floats" } else { "floats" };
            return Err(format!("scores `{s}` must be {what}, found {t}"));
        }
    }
    Ok(Layout { scores, label })
}

/// The score columns `spec` asks for, or the defaults; `None` when there are none.
fn score_columns(names: &[&str], floats: &[&str], spec: &DataSpec) -> Option<Vec<String>> {
    if let Some(key) = &spec.logits_key {
        if key.contains(',') {
            return Some(key.split(',').map(|s| s.trim().to_string()).collect());
        }
        if names.contains(&key.as_str()) {
            return Some(vec![key.clone()]);
        }
        return numbered(names, key);
    }
    let preferred = match spec.input {
        ScoreInput::Probs => ["probs", "logits"],
        ScoreInput::Logits => ["logits", "probs"],
    };
    if let Some(n) = preferred.iter().find(|n| names.contains(n)) {
        return Some(vec![n.to_string()]);
    }
    if let Some(found) = preferred.iter().find_map(|p| numbered(names, p)) {
        return Some(found);
    }
    (!floats.is_empty()).then(|| floats.iter().map(|n| n.to_string()).collect())
}

/// Columns `{prefix}{i}` or `{prefix}_{i}`, in the order of i; `None` when none.
fn numbered(names: &[&str], prefix: &str) -> Option<Vec<String>> {
    let mut found: Vec<(u64, String)> = names
        .iter()
        .filter_map(|n| {
            let rest = n.strip_prefix(prefix)?;
            let digits = rest.strip_prefix('_').unwrap_or(rest);
            let i = digits.parse::<u64>().ok().filter(|_| !digits.is_empty())?;
            Some((i, n.to_string()))
        })
        .collect();
    found.sort();
    (!found.is_empty()).then(|| found.into_iter().map(|(_, n)| n).collect())
}

/// A row error of a chunk starting at `start`, with the row in the whole table.
fn shift_row(e: RowsError, start: usize) -> String {
    match e {
        RowsError::NullScore { row } => RowsError::NullScore { row: row + start }.to_string(),
        RowsError::NullLabel { row } => RowsError::NullLabel { row: row + start }.to_string(),
        RowsError::RowLength { row, found, expected } => {
            RowsError::RowLength { row: row + start, found, expected }.to_string()
        }
        other => other.to_string(),
    }
}
