//! Adaptive ranges (RMSCE, ACE, TACE, the L2 errors) of rows that arrive in chunks, exactly:
//! a [`RangeSet`] holds one [`RangeSearch`] per adaptive request and feeds it the same pairs,
//! computed by the same row arithmetic, as the in-memory fused engine ranks.

mod directory;
mod first;
mod index;
mod pairs;
mod search;
mod sparse;

use std::thread;

use serde::{Deserialize, Serialize};

use index::PassIndex;
use pairs::{BlockBuffers, Pass, RangeRequest, Rows};
pub(crate) use search::COLLECT_BUDGET;
pub(crate) use search::{Mode, PassSums, RangeSearch};

use crate::engine::StatRequest;
use crate::error::{CalibError, Result};
use crate::input::{Predictions, SampleWeights, ScoreKind};
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

/// What the chunks of one pass reuse; empty again once the pass ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct PassScratch {
    /// The searches' indexes, built at the pass's first chunk (the intervals change only
    /// between passes).
    indexes: Vec<PassIndex>,
    /// The accumulators of the threads beyond the first, empty between chunks (kept so that
    /// each chunk does not allocate and zero them afresh).
    partials: Vec<Vec<Option<PassSums>>>,
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

    /// Adds the pairs of `preds`, whose first row is sample `first_row`, to `sums` (rows
    /// split over the threads: the first adds to `sums`, each other to its partial sums in
    /// `scratch`, which are then drained into `sums`).
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] when `preds` carry sample weights and earlier rows did
    /// not, or the other way round.
    pub(crate) fn add_rows(
        &self,
        preds: &Predictions,
        first_row: u64,
        sums: &mut [Option<PassSums>],
        scratch: &mut PassScratch,
    ) -> Result<()> {
        if preds.weights().is_some() != self.weighted {
            return Err(CalibError::InvalidConfig(
                "every chunk of a streamed evaluation carries sample weights, or none does".into(),
            ));
        }
        let (values, labels) = preds.host_rows()?;
        let weights = preds.weights().map(SampleWeights::values);
        let (kind, width, k) = (preds.kind(), preds.n_columns(), preds.n_classes());
        let chunk = Rows { kind, width, k, first_row };
        if scratch.indexes.len() != self.searches.len() {
            scratch.indexes = self.searches.iter().map(PassIndex::of).collect();
        }
        let n = labels.len();
        let n_threads = calib_kernels::threads().min(n.div_ceil(4096));
        if n_threads > 1 {
            scratch.partials.resize_with(n_threads - 1, || self.empty_sums());
        }
        scratch.blocks.resize_with(scratch.partials.len() + 1, BlockBuffers::default);
        let PassScratch { indexes, partials, blocks } = scratch;
        let pass = Pass { requests: &self.requests, searches: &self.searches, indexes, weights };
        let (main_block, blocks) = blocks.split_first_mut().expect("one block per thread");
        if n_threads <= 1 {
            pass.add_range(&values, &labels, 0..n, &chunk, sums, main_block);
            return Ok(());
        }
        let per = n.div_ceil(n_threads);
        thread::scope(|scope| {
            let (values, labels, chunk, pass) = (&values, &labels, &chunk, &pass);
            for (t, (part, block)) in partials.iter_mut().zip(blocks).enumerate() {
                let range = ((t + 1) * per).min(n)..((t + 2) * per).min(n);
                scope.spawn(move || pass.add_range(values, labels, range, chunk, part, block));
            }
            pass.add_range(values, labels, 0..per.min(n), chunk, sums, main_block);
        });
        for part in partials.iter_mut() {
            for (acc, p) in sums.iter_mut().zip(part) {
                if let (Some(acc), Some(p)) = (acc, p) {
                    p.drain_into(acc)?;
                }
            }
        }
        Ok(())
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
