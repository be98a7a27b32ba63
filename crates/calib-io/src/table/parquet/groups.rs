//! A Parquet file's row groups decoded on several threads, their batches handed out in file
//! order.
//!
//! Decoding a list column (repetition and definition levels, validity, offsets) costs more
//! than the metrics: on one thread it held a table to about 0.4 GB/s of scores. Each worker
//! opens the file itself (clones of one `File` share its offset, and Parquet's reader seeks),
//! takes the next row group in file order and sends its batches down that group's bounded
//! channel; the reader drains the channels in group order. At most one group per worker is in
//! flight, each with at most [`BUFFERED`] batches waiting, so memory stays a few batches per
//! worker whatever the file's size.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};

use super::pages::{Ended, PageColumns, decode_group};
use crate::table::decoder_panics::guarded;

/// Decoded batches waiting per row group.
const BUFFERED: usize = 2;
/// Most decoding threads.
const MAX_WORKERS: usize = 8;

type Item = Result<RecordBatch, ArrowError>;
/// Row groups not yet taken, each with the sender of its channel.
type Queue = Mutex<VecDeque<(usize, SyncSender<Item>)>>;

/// What every worker reads with.
struct Job {
    path: PathBuf,
    metadata: ArrowReaderMetadata,
    mask: ProjectionMask,
    batch_rows: usize,
    /// The fast path's columns, when the file has its layout.
    fast: Option<PageColumns>,
}

/// The batches of a Parquet file's row groups in file order, decoded by worker threads.
pub(super) struct ParallelRowGroups {
    groups: VecDeque<Receiver<Item>>,
    /// Row groups not yet taken by a worker (cleared on drop, so the workers stop).
    queue: Arc<Queue>,
    workers: Vec<JoinHandle<()>>,
}

impl ParallelRowGroups {
    /// Starts decoding the row groups of the file at `path` (whose metadata is `metadata`),
    /// columns `mask` (or `fast`'s, through the fast path where it can), in batches of at most
    /// `batch_rows` rows.
    pub fn start(
        path: &Path,
        metadata: ArrowReaderMetadata,
        mask: ProjectionMask,
        batch_rows: usize,
        fast: Option<PageColumns>,
    ) -> Self {
        let n_groups = metadata.metadata().num_row_groups();
        let (senders, groups): (VecDeque<_>, VecDeque<_>) = (0..n_groups)
            .map(|g| (g, sync_channel(BUFFERED)))
            .map(|(g, (s, r))| ((g, s), r))
            .unzip();
        let queue = Arc::new(Mutex::new(senders));
        let job = Arc::new(Job { path: path.to_path_buf(), metadata, mask, batch_rows, fast });
        let cores = calib_kernels::threads();
        let workers = (0..cores.min(MAX_WORKERS).min(n_groups))
            .map(|_| {
                let (queue, job) = (queue.clone(), job.clone());
                thread::spawn(move || work(&job, &queue))
            })
            .collect();
        Self { groups, queue, workers }
    }
}

impl Iterator for ParallelRowGroups {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        while let Some(group) = self.groups.front() {
            match group.recv() {
                Ok(item) => return Some(item),
                Err(_) => drop(self.groups.pop_front()), // the group's worker is done with it
            }
        }
        None
    }
}

impl Drop for ParallelRowGroups {
    fn drop(&mut self) {
        self.queue.lock().map(|mut q| q.clear()).ok();
        self.groups.clear(); // a worker's next send fails, and it stops
        for worker in self.workers.drain(..) {
            worker.join().ok();
        }
    }
}

/// A worker: takes row groups in file order until none is left or the reader is gone.
fn work(job: &Job, queue: &Queue) {
    let file = File::open(&job.path);
    loop {
        let Some((group, tx)) = queue.lock().ok().and_then(|mut q| q.pop_front()) else { return };
        let sent = match &file {
            // A decoder's panic is this group's error, never a group that silently ends early.
            Ok(file) => guarded(|| decode(job, file, group, &tx))
                .unwrap_or_else(|message| tx.send(Err(ArrowError::ParquetError(message))).is_ok()),
            Err(e) => tx.send(Err(ArrowError::IoError(e.to_string(), clone_io(e)))).is_ok(),
        };
        if !sent {
            return;
        }
    }
}

/// Sends row group `group`'s batches, through the fast path as far as it goes, then through
/// arrow-rs; false when the reader is gone.
fn decode(job: &Job, file: &File, group: usize, tx: &SyncSender<Item>) -> bool {
    let mut from = 0;
    if let Some(columns) = &job.fast {
        let mut send = |batch| tx.send(Ok(batch)).is_ok();
        let meta = job.metadata.metadata();
        match decode_group(columns, file, meta, group, job.batch_rows, &mut send) {
            Ended::Done => return true,
            Ended::Stopped => return false,
            Ended::FallBack(row) => from = row,
        }
    }
    let rows = usize::try_from(job.metadata.metadata().row_group(group).num_rows()).unwrap_or(0);
    let rest = RowSelection::from(vec![RowSelector::skip(from), RowSelector::select(rows - from)]);
    let reader =
        file.try_clone().map_err(|e| ArrowError::IoError(e.to_string(), e)).and_then(|f| {
            ParquetRecordBatchReaderBuilder::new_with_metadata(f, job.metadata.clone())
                .with_projection(job.mask.clone())
                .with_row_groups(vec![group])
                .with_row_selection(rest)
                .with_batch_size(job.batch_rows)
                .build()
                .map_err(|e| ArrowError::ParquetError(e.to_string()))
        });
    match reader {
        Err(e) => tx.send(Err(e)).is_ok(),
        Ok(reader) => reader.into_iter().all(|batch| tx.send(batch).is_ok()),
    }
}

fn clone_io(e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), e.to_string())
}
