//! Adaptive ranges (RMSCE, ACE, TACE, the L2 errors) of rows that arrive in chunks, exactly:
//! a [`RangeSet`] holds one [`RangeSearch`] per adaptive request and feeds it the same pairs,
//! computed by the same row arithmetic, as the in-memory fused engine ranks.

mod accumulators;
mod directory;
mod first;
mod index;
mod pairs;
mod search;
mod sparse;

use std::sync::Mutex;
use std::thread;

use serde::{Deserialize, Serialize};

pub(crate) use accumulators::PassAccumulators;
use index::PassIndex;
use pairs::{BlockBuffers, Pass, RangeRequest, Rows};
pub(crate) use search::COLLECT_BUDGET;
pub(crate) use search::{Mode, PassSums, RangeSearch};

use crate::engine::StatRequest;
use crate::error::Result;
use crate::input::{HostValues, Predictions, SampleWeights, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;

/// The adaptive requests of a plan and their searches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RangeSet {
    pub(super) requests: Vec<RangeRequest>,
    pub(crate) searches: Vec<RangeSearch>,
    /// Cut intervals holding at most this many pairs in all are collected by the next pass.
    collect_budget: u64,
    /// Whether the rows carry sample weights (every chunk does, or none).
    #[serde(default)]
    pub(crate) weighted: bool,
}

/// The most blocks a collecting pass splits a chunk into.
const MAX_BLOCKS: usize = 32;

/// The rows of a block of a collecting pass, about.
const BLOCK_ROWS: usize = 4096;

/// What the chunks of one pass reuse; empty again once the pass ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct PassScratch {
    /// The searches' indexes, built at the pass's first chunk (the intervals change only
    /// between passes).
    indexes: Vec<PassIndex>,
    /// Each thread's buffers for its scored blocks.
    blocks: Vec<BlockBuffers>,
}

impl RangeSet {
    /// The searches of `requests` (all adaptive) for `n_classes` classes, of rows with sample
    /// weights if `weighted`.
    pub(crate) fn new(
        requests: &[StatRequest],
        (n_classes, kind): (usize, ScoreKind),
        collect_budget: u64,
        weighted: bool,
    ) -> Self {
        let binary = kind == ScoreKind::Binary;
        let share = requests.len();
        let searches = requests
            .iter()
            .map(|r| {
                let n_groups = r.n_groups(n_classes, binary);
                RangeSearch::new(n_groups, r.binning.n_bins(), share, weighted)
            })
            .collect();
        let requests = requests
            .iter()
            .map(|r| RangeRequest {
                top_label: binary || r.scores == ScoreSet::TopLabel,
                grouped: r.grouped && !binary,
                threshold: r.threshold,
            })
            .collect();
        Self { requests, searches, collect_budget, weighted }
    }

    /// Whether every search is done.
    pub(crate) fn done(&self) -> bool {
        self.searches.iter().all(|s| s.mode == Mode::Done)
    }

    /// Empty accumulators of the current pass, one per search.
    pub(crate) fn empty_sums(&self) -> Vec<Option<PassSums>> {
        self.searches.iter().map(RangeSearch::empty_sums).collect()
    }

    /// Adds the pairs of `preds`, whose first row is sample `first_row`, to `acc` (rows split
    /// over the threads, each adding to its own part of `acc`, which adds up when the pass
    /// ends).
    pub(crate) fn add_rows(
        &self,
        preds: &Predictions,
        first_row: u64,
        acc: &mut PassAccumulators,
        scratch: &mut PassScratch,
    ) -> Result<()> {
        let (values, labels) = preds.host_rows()?;
        let weights = preds.weights().map(SampleWeights::values);
        let (kind, width, k) = (preds.kind(), preds.n_columns(), preds.n_classes());
        let chunk = Rows { kind, width, k, first_row };
        if scratch.indexes.len() != self.searches.len() {
            scratch.indexes = self.searches.iter().map(PassIndex::of).collect();
        }
        let indexes = &scratch.indexes;
        let pass = Pass { requests: &self.requests, searches: &self.searches, indexes, weights };
        let rows = (&values, labels.as_ref(), &chunk);
        if self.searches.iter().any(|s| matches!(s.mode, Mode::Histogram { .. })) {
            self.add_by_threads(&pass, rows, acc, &mut scratch.blocks);
        } else {
            self.add_by_blocks(&pass, rows, acc, &mut scratch.blocks);
        }
        Ok(())
    }

    /// A histogram pass's [`Self::add_rows`]: the chunk split over the threads, the first
    /// adding to the sums of `acc`, each other to its own part, kept for the whole pass. Pair
    /// counts add exactly in any order.
    fn add_by_threads(
        &self,
        pass: &Pass<'_>,
        (values, labels, chunk): (&HostValues<'_>, &[i64], &Rows),
        acc: &mut PassAccumulators,
        blocks: &mut Vec<BlockBuffers>,
    ) {
        let n = labels.len();
        let n_threads = calib_kernels::threads().min(n.div_ceil(4096)).max(1);
        let PassAccumulators { sums, parts: partials } = acc;
        if partials.len() < n_threads - 1 {
            partials.resize_with(n_threads - 1, || self.empty_sums());
        }
        if blocks.len() < n_threads {
            blocks.resize_with(n_threads, BlockBuffers::default);
        }
        let (main_block, blocks) = blocks.split_first_mut().expect("one block per thread");
        let section = calib_kernels::trace::section();
        if n_threads <= 1 {
            section.busy(0, || pass.add_range(values, labels, 0..n, chunk, sums, main_block));
            return;
        }
        let per = n.div_ceil(n_threads);
        thread::scope(|scope| {
            let section = &section;
            let others = partials.iter_mut().zip(blocks).take(n_threads - 1);
            for (t, (part, block)) in others.enumerate() {
                let range = ((t + 1) * per).min(n)..((t + 2) * per).min(n);
                let work = move || pass.add_range(values, labels, range, chunk, part, block);
                scope.spawn(move || section.busy(t + 1, work));
            }
            section
                .busy(0, || pass.add_range(values, labels, 0..per.min(n), chunk, sums, main_block));
        });
    }

    /// A collecting pass's [`Self::add_rows`]: the chunk in equal blocks of about
    /// [`BLOCK_ROWS`] rows (at most [`MAX_BLOCKS`]), sized from its rows alone and shared out
    /// over the threads as a work queue, block `b` summed into part `b` of `acc`, kept for the
    /// whole pass; the parts add in block order when it ends, so the range sums have the same
    /// bits at every thread count.
    fn add_by_blocks(
        &self,
        pass: &Pass<'_>,
        (values, labels, chunk): (&HostValues<'_>, &[i64], &Rows),
        acc: &mut PassAccumulators,
        buffers: &mut Vec<BlockBuffers>,
    ) {
        let partials = &mut acc.parts;
        let n = labels.len();
        let n_blocks = n.div_ceil(BLOCK_ROWS).clamp(1, MAX_BLOCKS);
        let block_rows = n.div_ceil(n_blocks);
        if partials.len() < n_blocks {
            partials.resize_with(n_blocks, || self.empty_sums());
        }
        let n_threads = calib_kernels::threads().min(n_blocks).max(1);
        if buffers.len() < n_threads {
            buffers.resize_with(n_threads, BlockBuffers::default);
        }
        // A work queue of (block, its partial sums): each thread takes the next block.
        let queue = Mutex::new(partials[..n_blocks].iter_mut().enumerate());
        let run = |buffers: &mut BlockBuffers| {
            while let Some((b, part)) = queue.lock().map_or(None, |mut q| q.next()) {
                let range = b * block_rows..((b + 1) * block_rows).min(n);
                pass.add_range(values, labels, range, chunk, part, buffers);
            }
        };
        let section = calib_kernels::trace::section();
        thread::scope(|scope| {
            let (section, run) = (&section, &run);
            let (own, others) = buffers.split_first_mut().expect("one thread at least");
            for (t, buffers) in others.iter_mut().take(n_threads - 1).enumerate() {
                scope.spawn(move || section.busy(t + 1, || run(buffers)));
            }
            section.busy(0, || run(own));
        });
    }

    /// Ends a pass over every row: refines or finishes each search. Returns whether another
    /// pass is needed. `integral`: whether the first pass's sample weights were all whole
    /// numbers.
    pub(crate) fn end_pass(
        &mut self,
        sums: Vec<Option<PassSums>>,
        first_pass: bool,
        integral: bool,
    ) -> Result<bool> {
        let share = self.searches.len();
        let mut inside = 0;
        for (search, s) in self.searches.iter_mut().zip(sums) {
            if let Some(s) = s {
                inside += search.end_pass(s, first_pass, share, integral)?;
            }
        }
        if inside <= self.collect_budget || self.searches.iter().all(RangeSearch::pinned) {
            self.searches.iter_mut().for_each(RangeSearch::collect_next);
        } else if first_pass {
            // A speculative last pass, if every search's windows fit the budget together.
            let busy = self.searches.iter().filter(|s| matches!(s.mode, Mode::Histogram { .. }));
            let load: Option<u64> = busy.map(RangeSearch::window_load).sum();
            if load.is_some_and(|load| load <= self.collect_budget) {
                self.searches.iter_mut().for_each(RangeSearch::speculate);
            }
        }
        Ok(!self.done())
    }

    /// The statistics of each request, once done.
    pub(crate) fn stats(&self) -> Vec<Option<BinStats>> {
        self.searches.iter().map(|s| s.stats.clone()).collect()
    }
}
