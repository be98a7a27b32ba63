//! The fast path for the common Parquet layout: scores in one list column of FLOAT or DOUBLE
//! (what pyarrow and arrow-rs write for `fixed_size_list<float>[K]` and `list<float>`), labels
//! in one INT32 or INT64 column, every row K values and no nulls.
//!
//! arrow-rs decodes such a column through its general list machinery: repetition and
//! definition levels expanded to one i16 per value, a validity bitmap, offsets, then a list
//! batch; on 2 cores that held `calib eval` of a table to ~0.4 GB/s against ~1 GB/s for the
//! same rows as `.npy`. Here the levels are checked run by run without expanding them (a
//! run of "defined" covers thousands of values; row starts are checked where they fall) and
//! PLAIN values are copied straight out of the page. Anything else (a null, an empty or
//! ragged list, another encoding, a corrupt page) stops the fast path at the first row it has
//! not sent, and arrow-rs reads the rest of the row group, so every error message and every
//! unusual file is exactly as before.

use std::fs::File;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch,
};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use parquet::basic::{Encoding, Type as Physical};
use parquet::column::page::{Page, PageReader};
use parquet::column::reader::ColumnReader;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::RowGroupReader;
use parquet::file::serialized_reader::SerializedRowGroupReader;

use super::rle::{Runs, all_defined, gather_dictionary, level_width, rows_of};

/// Where the fast path finds the scores and labels of a file.
#[derive(Debug, Clone)]
pub(super) struct PageColumns {
    /// Leaf column indices.
    scores: usize,
    labels: usize,
    /// The scores' definition level of a present value, and the labels'.
    score_def: i16,
    label_def: i16,
    /// DOUBLE scores (else FLOAT).
    wide: bool,
    /// The columns' names, for the batches sent.
    score_name: String,
    label_name: String,
}

impl PageColumns {
    /// The fast layout of `metadata` for score column `score` and label column `label`, if
    /// the file has it.
    pub fn find(metadata: &ParquetMetaData, score: &str, label: &str) -> Option<Self> {
        let schema = metadata.file_metadata().schema_descr();
        let leaves = |name: &str| -> Vec<usize> {
            let columns = schema.columns().iter().enumerate();
            columns.filter(|(_, c)| c.path().parts()[0] == name).map(|(i, _)| i).collect()
        };
        let (&[scores], &[labels]) = (leaves(score).as_slice(), leaves(label).as_slice()) else {
            return None;
        };
        let (s, l) = (schema.column(scores), schema.column(labels));
        let wide = match s.physical_type() {
            Physical::FLOAT => false,
            Physical::DOUBLE => true,
            _ => return None,
        };
        let label_ok = matches!(l.physical_type(), Physical::INT32 | Physical::INT64);
        if s.max_rep_level() != 1 || l.max_rep_level() != 0 || !label_ok || s.max_def_level() < 1 {
            return None;
        }
        Some(Self {
            scores,
            labels,
            score_def: s.max_def_level(),
            label_def: l.max_def_level(),
            wide,
            score_name: score.into(),
            label_name: label.into(),
        })
    }

    /// The item field and the schema of the batches sent: scores a fixed-size list of `k`,
    /// labels int64.
    fn batch_schema(&self, k: i32) -> (FieldRef, SchemaRef) {
        let value = if self.wide { DataType::Float64 } else { DataType::Float32 };
        let item = Arc::new(Field::new("item", value, false));
        let scores = DataType::FixedSizeList(item.clone(), k);
        let schema = Schema::new(vec![
            Field::new(&self.score_name, scores, false),
            Field::new(&self.label_name, DataType::Int64, false),
        ]);
        (item, Arc::new(schema))
    }
}

/// How a row group's fast decoding ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Every row sent.
    Done,
    /// The receiver is gone.
    Stopped,
    /// Rows from this one on need the general reader.
    FallBack(usize),
}

/// Decodes row group `group` of `file` (whose metadata is `metadata`), sending batches of at
/// most `batch_rows` rows to `send` (false: the receiver is gone).
pub(super) fn decode_group(
    columns: &PageColumns,
    file: &File,
    metadata: &ParquetMetaData,
    group: usize,
    batch_rows: usize,
    send: &mut dyn FnMut(RecordBatch) -> bool,
) -> Ended {
    let meta = metadata.row_group(group);
    let n_rows = usize::try_from(meta.num_rows()).unwrap_or(0);
    let levels = usize::try_from(meta.column(columns.scores).num_values()).unwrap_or(0);
    let Ok(file) = file.try_clone() else { return Ended::FallBack(0) };
    let size = file_bytes(&file);
    let props = Arc::new(ReaderProperties::builder().build());
    let Ok(reader) = SerializedRowGroupReader::new(Arc::new(file), meta, None, props) else {
        return Ended::FallBack(0);
    };
    if n_rows == 0 || levels % n_rows != 0 {
        return Ended::FallBack(0);
    }
    let (Ok(pages), Ok(labels)) =
        (reader.get_column_page_reader(columns.scores), reader.get_column_reader(columns.labels))
    else {
        return Ended::FallBack(0);
    };
    let k = levels / n_rows;
    let (item, schema) = columns.batch_schema(k as i32);
    let mut group = Group {
        columns,
        k,
        n_rows,
        item,
        schema,
        batch_rows: batch_rows.max(1),
        file_bytes: size,
        labels,
        sent: 0,
        levels_seen: 0,
    };
    if columns.wide { group.run::<f64>(pages, send) } else { group.run::<f32>(pages, send) }
}

/// The size of `file` in bytes (0 when unknown).
fn file_bytes(file: &File) -> usize {
    file.metadata().map_or(0, |m| usize::try_from(m.len()).unwrap_or(usize::MAX))
}

/// A float type of a score column.
trait Value: bytemuck::Pod + Default + Send {
    const SIZE: usize;
    fn from_le(bytes: &[u8]) -> Self;
    fn array(values: Vec<Self>) -> ArrayRef;
}

impl Value for f32 {
    const SIZE: usize = 4;
    fn from_le(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn array(values: Vec<Self>) -> ArrayRef {
        Arc::new(Float32Array::from(values))
    }
}

impl Value for f64 {
    const SIZE: usize = 8;
    fn from_le(b: &[u8]) -> Self {
        f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
    fn array(values: Vec<Self>) -> ArrayRef {
        Arc::new(Float64Array::from(values))
    }
}

/// One row group's decoding state.
struct Group<'a> {
    columns: &'a PageColumns,
    /// Values per row.
    k: usize,
    /// Rows of the row group, as its metadata says.
    n_rows: usize,
    /// The file's size: the metadata's row and value counts are claims, so what is reserved
    /// ahead of decoding stays within what the file could hold.
    file_bytes: usize,
    /// The score list's item field and the schema of the batches sent.
    item: FieldRef,
    schema: SchemaRef,
    batch_rows: usize,
    labels: ColumnReader,
    /// Rows sent.
    sent: usize,
    /// Levels of the score column read so far (positions in its repetition pattern).
    levels_seen: usize,
}

impl Group<'_> {
    fn run<T: Value>(
        &mut self,
        mut pages: Box<dyn PageReader>,
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Ended {
        // A batch's values, reserved ahead up to what the file's bytes could hold (PLAIN).
        let batch = self.batch_rows.saturating_mul(self.k);
        let ahead = batch.min(self.file_bytes / T::SIZE + 1);
        let mut values: Vec<T> = Vec::with_capacity(ahead);
        let mut dict: Option<Vec<T>> = None;
        loop {
            let page = match pages.get_next_page() {
                Ok(Some(page)) => page,
                Ok(None) => break,
                Err(_) => return Ended::FallBack(self.sent),
            };
            if !self.add_page(page, &mut dict, &mut values) {
                return Ended::FallBack(self.sent);
            }
            while values.len() >= batch {
                let rest = values.split_off(batch);
                let full = std::mem::replace(&mut values, rest);
                // The sent values move into the batch; the next batch's start afresh.
                values.reserve(ahead);
                if let Some(end) = self.send_rows(full, send) {
                    return end;
                }
            }
        }
        if !values.len().is_multiple_of(self.k) || self.sent + values.len() / self.k != self.n_rows
        {
            return Ended::FallBack(self.sent);
        }
        if !values.is_empty()
            && let Some(end) = self.send_rows(values, send)
        {
            return end;
        }
        Ended::Done
    }

    /// Checks `page` and appends its values; false when the fast path cannot take it.
    fn add_page<T: Value>(
        &mut self,
        page: Page,
        dict: &mut Option<Vec<T>>,
        out: &mut Vec<T>,
    ) -> bool {
        let (buf, n, encoding, levels) = match &page {
            Page::DictionaryPage { buf, num_values, encoding, .. } => {
                let plain = matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY);
                let n = *num_values as usize;
                if !plain || buf.len() < n * T::SIZE {
                    return false;
                }
                let mut values = Vec::with_capacity(n);
                copy_plain(&buf[..n * T::SIZE], &mut values);
                *dict = Some(values);
                return true;
            }
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            } => {
                if *def_level_encoding != Encoding::RLE || *rep_level_encoding != Encoding::RLE {
                    return false;
                }
                let Some(split) = v1_levels(buf) else { return false };
                (buf, *num_values as usize, *encoding, split)
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                num_nulls,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                let (r, d) = (*rep_levels_byte_len as usize, *def_levels_byte_len as usize);
                if *num_nulls != 0 || r + d > buf.len() {
                    return false;
                }
                (buf, *num_values as usize, *encoding, (0..r, r..r + d, r + d))
            }
        };
        let (rep, def, start) = levels;
        // More levels than the metadata's rows hold: a corrupt chunk, for arrow-rs to name.
        if self.levels_seen + n > self.n_rows * self.k {
            return false;
        }
        let def_width = level_width(self.columns.score_def);
        if !rows_of(Runs::new(&buf[rep], 1), self.k, self.levels_seen, n)
            || !all_defined(Runs::new(&buf[def], def_width), self.columns.score_def, n)
        {
            return false;
        }
        let data = &buf[start..];
        let decoded = match encoding {
            Encoding::PLAIN if data.len() >= n * T::SIZE => {
                copy_plain(&data[..n * T::SIZE], out);
                true
            }
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                match (dict.as_deref(), data.split_first()) {
                    (Some(d), Some((&width, ids))) if width <= 32 => {
                        gather_dictionary(Runs::new(ids, width), d, n, out)
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        self.levels_seen += n;
        decoded
    }

    /// Sends the rows of `values` with their labels; `Some` when decoding must end.
    fn send_rows<T: Value>(
        &mut self,
        values: Vec<T>,
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Option<Ended> {
        let rows = values.len() / self.k;
        let Some(labels) = self.read_labels(rows) else { return Some(Ended::FallBack(self.sent)) };
        let list =
            FixedSizeListArray::try_new(self.item.clone(), self.k as i32, T::array(values), None);
        let batch = list.ok().and_then(|l| {
            RecordBatch::try_new(
                self.schema.clone(),
                vec![Arc::new(l), Arc::new(Int64Array::from(labels))],
            )
            .ok()
        });
        let Some(batch) = batch else { return Some(Ended::FallBack(self.sent)) };
        if !send(batch) {
            return Some(Ended::Stopped);
        }
        self.sent += rows;
        None
    }

    /// The next `rows` labels, when none is null.
    fn read_labels(&mut self, rows: usize) -> Option<Vec<i64>> {
        let mut def = Vec::with_capacity(rows);
        let max = self.columns.label_def;
        let (read, labels) = match &mut self.labels {
            ColumnReader::Int64ColumnReader(r) => {
                let mut v = Vec::with_capacity(rows);
                let (read, _, _) = r.read_records(rows, Some(&mut def), None, &mut v).ok()?;
                (read, v)
            }
            ColumnReader::Int32ColumnReader(r) => {
                let mut v = Vec::with_capacity(rows);
                let (read, _, _) = r.read_records(rows, Some(&mut def), None, &mut v).ok()?;
                (read, v.into_iter().map(i64::from).collect())
            }
            _ => return None,
        };
        let defined = max == 0 || def.iter().all(|&d| d == max);
        (read == rows && labels.len() == rows && defined).then_some(labels)
    }
}

/// Appends the PLAIN (little-endian) values `bytes` to `out`: one copy into `out`'s aligned
/// memory (the page's bytes need not be aligned), then a byte swap on big-endian targets.
fn copy_plain<T: Value>(bytes: &[u8], out: &mut Vec<T>) {
    let start = out.len();
    out.resize(start + bytes.len() / T::SIZE, T::default());
    let tail = &mut out[start..];
    bytemuck::cast_slice_mut::<T, u8>(tail).copy_from_slice(bytes);
    if cfg!(target_endian = "big") {
        for v in tail {
            *v = T::from_le(bytemuck::bytes_of(v));
        }
    }
}

/// The rep-level, def-level and value parts of a v1 data page: each level block is prefixed
/// by its length (u32).
fn v1_levels(buf: &[u8]) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>, usize)> {
    let block = |at: usize| -> Option<std::ops::Range<usize>> {
        let len = u32::from_le_bytes(buf.get(at..at + 4)?.try_into().ok()?) as usize;
        let end = (at + 4).checked_add(len).filter(|&e| e <= buf.len())?;
        Some(at + 4..end)
    };
    let rep = block(0)?;
    let def = block(rep.end)?;
    let start = def.end;
    Some((rep, def, start))
}

#[cfg(test)]
mod tests;
