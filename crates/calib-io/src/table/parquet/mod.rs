//! Parquet files: row groups decoded on several threads ([`groups`]), with a fast path that
//! reads the common list layout straight from the pages ([`pages`], [`rle`]); the decoders'
//! panics on damaged data become errors ([`super::decoder_panics`]).

mod groups;
mod pages;
mod rle;

use std::fs::File;
use std::path::Path;

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};

use super::columns::{TableColumns, layout_indices, resolve};
use super::decoder_panics::guarded_try;
use super::source::Source;
use groups::ParallelRowGroups;
use pages::PageColumns;

/// Opens the Parquet file at `path` for the columns `request` asks for, to be read in batches
/// of at most `rows` rows.
pub(super) fn open_parquet(
    path: &Path,
    request: &TableColumns,
    rows: usize,
) -> Result<Source, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let load = || ArrowReaderMetadata::load(&file, ArrowReaderOptions::default());
    let metadata = guarded_try(load).map_err(|e| format!("not a readable Parquet file ({e})"))?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone());
    let schema = builder.schema().clone();
    let layout = resolve(&schema, request)?;
    let n_rows = usize::try_from(builder.metadata().file_metadata().num_rows()).ok();
    let roots = layout_indices(&schema, &layout);
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    // The fast path reads a score list and labels alone.
    let fast = match (layout.scores.as_slice(), &layout.weights) {
        ([scores], None) => PageColumns::find(builder.metadata(), scores, &layout.label),
        _ => None,
    };
    let batches = ParallelRowGroups::start(path, metadata, mask, rows.max(1), fast);
    Ok(Source { layout, batches: Box::new(batches), n_rows })
}
