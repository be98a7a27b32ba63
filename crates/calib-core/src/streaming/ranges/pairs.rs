//! The pair loop of a range pass: rows are scored a block at a time, their class scores kept
//! column by column, and each class column then goes through its group's intervals in one
//! run. A group's counters (or range sums) stay in cache for a whole column, where a row at a
//! time would touch every group's counters once per row.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::index::PassIndex;
use super::search::{PassSums, RangeSearch, pair_key};
use crate::engine::score_row;
use crate::input::{HostValues, ScoreKind};
use calib_kernels::{Score, dispatch};

/// Class scores a block may hold (2 MiB of f64): its rows are `BLOCK_SCORES / K`.
const BLOCK_SCORES: usize = 1 << 18;

/// The shape of a run of rows and the sample position of its first.
#[derive(Clone, Copy)]
pub(super) struct Rows {
    pub kind: ScoreKind,
    pub width: usize,
    pub k: usize,
    pub first_row: u64,
}

/// What pairs an adaptive request ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(in crate::streaming) struct RangeRequest {
    pub(in crate::streaming) top_label: bool,
    pub(in crate::streaming) grouped: bool,
    pub(in crate::streaming) threshold: Option<f64>,
}

/// One chunk's view of a range set: its requests, their searches, the searches' indexes for
/// the current pass and the chunk's sample weights.
pub(super) struct Pass<'a> {
    pub requests: &'a [RangeRequest],
    pub searches: &'a [RangeSearch],
    pub indexes: &'a [PassIndex],
    pub weights: Option<&'a [f64]>,
}

/// A thread's buffers for its blocks, kept across the chunks of a pass: a row's class
/// scores, the block's class columns and its rows' top-label pairs.
#[derive(Debug, Clone, Default)]
pub(super) struct BlockBuffers {
    p: Vec<f64>,
    columns: Vec<f64>,
    tops: Vec<(f64, usize, bool)>,
}

/// One block of scored rows: per row its top-label pair, per class its column of scores.
struct Block<'a> {
    first_row: u64,
    labels: &'a [i64],
    /// Per row: confidence, predicted class, whether the prediction is right.
    tops: &'a [(f64, usize, bool)],
    /// Per row: its sample weight, if any.
    weights: Option<&'a [f64]>,
    /// Class `j`'s scores at `columns[j * stride..][..labels.len()]`.
    columns: &'a [f64],
    stride: usize,
}

impl Pass<'_> {
    /// The pairs of the rows `range` of a chunk whose first row is sample `first_row`, into
    /// `sums`.
    pub fn add_range(
        &self,
        values: &HostValues<'_>,
        labels: &[i64],
        range: Range<usize>,
        chunk: &Rows,
        sums: &mut [Option<PassSums>],
        buffers: &mut BlockBuffers,
    ) {
        let rows = Rows { first_row: chunk.first_row + range.start as u64, ..*chunk };
        let weights = self.weights.map(|w| &w[range.clone()]);
        let (start, labels) = (range.start * chunk.width, &labels[range]);
        let part = (labels, weights);
        match values {
            HostValues::F32(v) => self.add_part(&v[start..], part, &rows, sums, buffers),
            HostValues::F64(v) => self.add_part(&v[start..], part, &rows, sums, buffers),
        }
    }

    /// The pairs of `labels.len()` rows starting at `values[0]` (weighted by `weights`, if
    /// any), into `sums`, a block of rows at a time.
    fn add_part<T: Score>(
        &self,
        values: &[T],
        (labels, weights): (&[i64], Option<&[f64]>),
        rows: &Rows,
        sums: &mut [Option<PassSums>],
        buffers: &mut BlockBuffers,
    ) {
        let columns_needed = self.requests.iter().any(|r| !r.top_label);
        let stride = (BLOCK_SCORES / rows.k.max(1)).clamp(16, 4096);
        let BlockBuffers { p, columns, tops } = buffers;
        // Every row writes all its scores before they are read, so old contents may stay.
        p.resize(rows.width, 0.0);
        columns.resize(if columns_needed { stride * rows.k } else { 0 }, 0.0);
        dispatch(
            #[inline(always)]
            || {
                let blocks = values.chunks(stride * rows.width).zip(labels.chunks(stride));
                for (b, (values, labels)) in blocks.enumerate() {
                    tops.clear();
                    for (i, (row, &y)) in values.chunks_exact(rows.width).zip(labels).enumerate() {
                        let s = score_row(row, y as usize, rows.kind, p);
                        tops.push((s.conf, s.pred, s.outcome > 0.5));
                        if columns_needed {
                            let columns = columns.chunks_exact_mut(stride);
                            columns.zip(&p[..rows.k]).for_each(|(column, &pj)| column[i] = pj);
                        }
                    }
                    let first_row = rows.first_row + (b * stride) as u64;
                    let weights = weights.map(|w| &w[b * stride..][..labels.len()]);
                    let block = Block { first_row, labels, tops, weights, columns, stride };
                    match block.weights {
                        Some(w) => self.add_weighted_block(&block, w, rows.k, sums),
                        None => self.add_block(&block, rows.k, sums),
                    }
                }
            },
        );
    }

    /// The pairs of one scored block, request by request.
    #[inline(always)]
    fn add_block(&self, block: &Block<'_>, k: usize, sums: &mut [Option<PassSums>]) {
        let requests = self.requests.iter().zip(self.searches);
        for (((r, search), index), acc) in requests.zip(self.indexes).zip(&mut *sums) {
            let Some(acc) = acc else { continue };
            if r.top_label {
                let above = |conf: f64| r.threshold.is_none_or(|eps| conf > eps);
                let rows = block.tops.iter().enumerate().filter(|(_, t)| above(t.0));
                let pairs = rows
                    .map(|(i, &(conf, pred, hit))| (pred, (conf, block.first_row + i as u64, hit)));
                if r.grouped {
                    for (g, pair) in pairs {
                        index.add(search, acc, g, pair);
                    }
                } else {
                    index.add_group(search, acc, 0, pairs.map(|(_, pair)| pair));
                }
                continue;
            }
            let eps = r.threshold.unwrap_or(-1.0);
            for j in 0..k {
                let column = &block.columns[j * block.stride..][..block.labels.len()];
                let rows = column.iter().zip(block.labels).enumerate().filter(|(_, p)| *p.0 > eps);
                let hit = |y: i64| y == j as i64;
                if r.grouped {
                    let pairs = rows.map(|(i, (&s, &y))| (s, block.first_row + i as u64, hit(y)));
                    index.add_group(search, acc, j, pairs);
                } else {
                    let position = |i: usize| (block.first_row + i as u64) * k as u64 + j as u64;
                    let pairs = rows.map(|(i, (&s, &y))| (s, position(i), hit(y)));
                    index.add_group(search, acc, 0, pairs);
                }
            }
        }
    }

    /// [`Self::add_block`] for rows with sample weights `weights`: each pair through its
    /// search's exact path with its row's weight.
    fn add_weighted_block(
        &self,
        block: &Block<'_>,
        weights: &[f64],
        k: usize,
        sums: &mut [Option<PassSums>],
    ) {
        let rows = || block.tops.iter().zip(block.labels).zip(weights).enumerate();
        for ((r, search), acc) in self.requests.iter().zip(self.searches).zip(&mut *sums) {
            let Some(acc) = acc else { continue };
            let above = |s: f64| s > r.threshold.unwrap_or(-1.0);
            for (i, ((&(conf, pred, hit), &y), &w)) in rows() {
                let row = block.first_row + i as u64;
                if r.top_label {
                    if above(conf) {
                        let g = if r.grouped { pred } else { 0 };
                        search.add_weighted(acc, g, pair_key(conf, row, hit), w);
                    }
                    continue;
                }
                for j in 0..k {
                    let s = block.columns[j * block.stride + i];
                    let (g, position) = match r.grouped {
                        true => (j, row),
                        false => (0, row * k as u64 + j as u64),
                    };
                    if above(s) {
                        search.add_weighted(acc, g, pair_key(s, position, y == j as i64), w);
                    }
                }
            }
        }
    }
}
