//! Adaptive ranges on the device, without a sort: each group's cuts by radix selection
//! ([`Selection`]: a histogram pass per digit of the scores' order keys, each reading back
//! only the buckets' counts), the rows of cuts inside runs of equal scores by counting the
//! run in blocks of rows ([`TieSearch`]), then the range sums in the evaluation's last visit
//! of the rows ([`RangeCuts::add_sums`]). Ties follow the stable order of the convention
//! (docs/conventions.md, "Adaptive ranges"), so the ranges are those of the host's radix
//! ranges on the same f32 scores.
//!
//! Every adaptive request of an evaluation is cut at once ([`select_cuts`]): a round launches
//! each unfinished request's next pass on every chunk, then a kernel that finds each cut's
//! bucket in the pass's counts (`range_locate`; the host's twin is `selection::locate`), and
//! one read-back of three words per cut serves them all (never the histograms: at K = 1,000
//! the first pass's are 8 MB). So an evaluation synchronises once per round, not once per
//! request and pass: 1 to 4 digit rounds (fewer when every cut is the first of its bucket
//! early), then a tie round per factor of 4,096 rows while a cut falls inside a run of equal
//! scores. A class-wise request's pass reads the scores once; a top-label one reads the row
//! pass's fields only.

use burn::backend::Dispatch;
use burn::tensor::{DType, Device, Int, Tensor};

use super::fixed_bins::{MAX_CLASS_BINS, WORDS};
use super::range_ops::{DigitPass, PairSource, RangeKernels, TieBlocks};
use super::rows::{Chunk, Chunks};
use super::selection::{DIGITS, DigitTable, Selection, TiePass, TieSearch, located_of, shift_of};
use super::words::{read_words_all, u32_tensor};
use crate::binning::{Binning, f32_below};
use crate::engine::plan::StatRequest;
use crate::error::Result;
use crate::metrics::ScoreSet;

/// Whether the device ranges take `request` (class-wise ranges are kept in registers).
pub(super) fn takes(request: &StatRequest) -> bool {
    matches!(request.binning, Binning::Adaptive { n_ranges } if n_ranges <= MAX_CLASS_BINS)
}

/// Where one request's selection stands.
enum Stage {
    /// No pass yet.
    Start,
    /// Digit passes.
    Digits(Selection),
    /// Tie passes, after the last digit.
    Ties(Selection, TieSearch),
    /// Every cut known: keys, then rows ([`Selection::cut_table`]).
    Done(Vec<u32>),
}

/// The pass a request needs next.
enum Step {
    First,
    Digit(DigitTable),
    Tie(TiePass),
}

/// One adaptive request's cuts, selected pass by pass, and its range sums.
pub(super) struct RangeCuts {
    /// The request's index in the plan.
    pub request: usize,
    source: PairSource,
    n_groups: usize,
    n_ranges: usize,
    stage: Stage,
}

impl RangeCuts {
    /// The selection of the cuts of `request`, the plan's request `at` (see [`takes`]), on
    /// `k`-class rows.
    pub fn new(at: usize, request: &StatRequest, k: usize, logits: bool) -> Self {
        let n_groups = request.n_groups(k, false);
        let source = PairSource {
            classes: request.scores == ScoreSet::AllClasses,
            grouped: n_groups > 1 && request.scores == ScoreSet::TopLabel,
            logits,
            threshold: request.threshold.map_or(-1.0, f32_below),
            first_row: 0,
        };
        let n_ranges = request.binning.n_bins();
        // One range has no cut to select.
        let stage = if n_ranges > 1 { Stage::Start } else { Stage::Done(Vec::new()) };
        Self { request: at, source, n_groups, n_ranges, stage }
    }

    /// The next pass over `n_rows` rows, or `None` once every cut is known.
    fn next_step(&mut self, n_rows: usize) -> Option<Step> {
        if let Stage::Digits(selection) = &self.stage {
            if let Some(table) = selection.next_pass() {
                return Some(Step::Digit(table));
            }
            let mut ties = selection.ties();
            ties.begin(n_rows);
            self.stage = Stage::Ties(selection.clone(), ties);
        }
        if let Stage::Ties(selection, ties) = &self.stage {
            if let Some(pass) = ties.next_pass(self.n_groups) {
                return Some(Step::Tie(pass));
            }
            self.stage = Stage::Done(selection.cut_table(ties));
        }
        matches!(self.stage, Stage::Start).then_some(Step::First)
    }

    /// Words of `step`'s accumulator.
    fn n_words(&self, step: &Step) -> usize {
        match step {
            Step::First => self.n_groups << DIGITS[0],
            Step::Digit(table) => table.n_slots << DIGITS[table.level],
            Step::Tie(pass) => {
                let n_ties = pass.entries.len() - 2 * self.n_groups * pass.per_group;
                n_ties * pass.n_blocks
            }
        }
    }

    /// Adds chunk `c`'s pairs to `acc`, the accumulator of `step` (table `table`).
    fn launch(
        &self,
        step: &Step,
        c: &Chunk,
        table: &Tensor<1, Int>,
        acc: Tensor<1, Int>,
    ) -> Tensor<1, Int> {
        let source = PairSource { first_row: c.first_row, ..self.source };
        let (values, rows, pred) = (c.values.clone(), c.rows.clone(), c.pred.clone());
        let (table, acc) = (table.clone().into_dispatch(), acc.into_dispatch());
        let (values, rows, pred) =
            (values.into_dispatch(), rows.into_dispatch(), pred.into_dispatch());
        Tensor::from_dispatch(match step {
            Step::First | Step::Digit(_) => {
                let (level, per_group) = match step {
                    Step::Digit(t) => (t.level, t.per_group as u32),
                    _ => (0, 0),
                };
                let pass = DigitPass { shift: shift_of(level), width: DIGITS[level], per_group };
                <Dispatch as RangeKernels>::calib_range_histogram(
                    values, rows, pred, table, acc, source, pass,
                )
            }
            Step::Tie(pass) => {
                let half = self.n_groups * pass.per_group;
                let blocks = TieBlocks {
                    block: pass.block as u32,
                    n_blocks: pass.n_blocks as u32,
                    per_group: pass.per_group as u32,
                    half: half as u32,
                };
                <Dispatch as RangeKernels>::calib_range_tie_counts(
                    values, rows, pred, table, acc, source, blocks,
                )
            }
        })
    }

    /// Where `step`'s counts are searched: its queries (offsets, then ranks), the width of
    /// each histogram, and whether the ranks are cut numbers (the first pass).
    fn queries(&self, step: &Step) -> (Vec<u32>, usize, bool) {
        match (step, &self.stage) {
            (Step::First, _) => {
                let queries = Selection::first_queries(self.n_groups, self.n_ranges);
                (queries, 1 << DIGITS[0], true)
            }
            (Step::Digit(table), Stage::Digits(selection)) => {
                (selection.queries(table), 1 << DIGITS[table.level], false)
            }
            (Step::Tie(pass), Stage::Ties(_, ties)) => (ties.queries(pass), pass.n_blocks, false),
            _ => unreachable!("a step of the stage that asked for it"),
        }
    }

    /// The located ranks of `step`'s queries in its counts `acc`, on the device.
    fn locate(&self, step: &Step, acc: Tensor<1, Int>, device: &Device) -> Tensor<1, Int> {
        let (queries, width, first) = self.queries(step);
        let queries = u32_tensor(queries, device).into_dispatch();
        Tensor::from_dispatch(<Dispatch as RangeKernels>::calib_range_locate(
            acc.into_dispatch(),
            queries,
            width,
            self.n_ranges,
            first,
        ))
    }

    /// Moves the selection on by `step`'s located ranks `words` (see [`Self::locate`]).
    fn advance(&mut self, step: Step, words: &[u32]) {
        let located = located_of(words);
        match (step, &mut self.stage) {
            (Step::First, _) => {
                let first = Selection::first_located(self.n_groups, self.n_ranges, &located);
                self.stage = Stage::Digits(first);
            }
            (Step::Digit(table), Stage::Digits(selection)) => {
                selection.refine_located(&table, &located);
            }
            (Step::Tie(pass), Stage::Ties(_, ties)) => ties.refine_located(&pass, &located),
            _ => unreachable!("a step advances the stage that asked for it"),
        }
    }

    /// The cuts on `device`, once [`select_cuts`] has run.
    pub fn cut_table(&self, device: &Device) -> Tensor<1, Int> {
        let Stage::Done(cuts) = &self.stage else { unreachable!("cuts before their selection") };
        u32_tensor(cuts.clone(), device)
    }

    /// Words of the range sums, `[G R WORDS]`.
    pub fn sum_words(&self) -> usize {
        self.n_groups * self.n_ranges * WORDS
    }

    /// Adds chunk `c`'s pairs to their ranges' sums `bins`, given the cuts.
    pub fn add_sums(
        &self,
        c: &Chunk,
        cuts: &Tensor<1, Int>,
        bins: Tensor<1, Int>,
    ) -> Tensor<1, Int> {
        let source = PairSource { first_row: c.first_row, ..self.source };
        let (cuts, bins) = (cuts.clone().into_dispatch(), bins.into_dispatch());
        Tensor::from_dispatch(if source.classes {
            <Dispatch as RangeKernels>::calib_class_ranges(
                c.values.clone().into_dispatch(),
                c.labels.clone().into_dispatch(),
                c.rows.clone().into_dispatch(),
                cuts,
                bins,
                source,
                self.n_ranges,
            )
        } else {
            <Dispatch as RangeKernels>::calib_top_label_ranges(
                c.rows.clone().into_dispatch(),
                c.pred.clone().into_dispatch(),
                cuts,
                bins,
                source,
                self.n_ranges,
            )
        })
    }
}

/// Selects the cuts of every request in `jobs` over `chunks`, in rounds: each launches every
/// unfinished request's next pass on every chunk, then reads all their counts back at once.
pub(super) fn select_cuts(
    jobs: &mut [RangeCuts],
    chunks: &mut Chunks<'_>,
    device: &Device,
) -> Result<()> {
    let n_rows = chunks.n_rows();
    for round in 0.. {
        let steps: Vec<(usize, Step)> = (jobs.iter_mut().enumerate())
            .filter_map(|(at, job)| job.next_step(n_rows).map(|step| (at, step)))
            .collect();
        if steps.is_empty() {
            return Ok(());
        }
        let tables: Vec<Tensor<1, Int>> =
            (steps.iter()).map(|(_, step)| u32_tensor(table_of(step), device)).collect();
        let mut accs: Vec<Tensor<1, Int>> = (steps.iter())
            .map(|(at, step)| Tensor::zeros([jobs[*at].n_words(step)], (device, DType::U32)))
            .collect();
        chunks.visit(|c| {
            for (((at, step), table), acc) in steps.iter().zip(&tables).zip(&mut accs) {
                *acc = jobs[*at].launch(step, c, table, acc.clone());
            }
        });
        let located = (steps.iter().zip(accs))
            .map(|((at, step), acc)| jobs[*at].locate(step, acc, device))
            .collect();
        // The wait is the round's device time: the launches above do not block.
        let name = ROUNDS[round.min(ROUNDS.len() - 1)];
        let words = calib_kernels::trace::step(name, || read_words_all(located))?;
        for ((at, step), words) in steps.into_iter().zip(words) {
            jobs[at].advance(step, &words);
        }
    }
    unreachable!("the rounds end when every cut is known")
}

/// The traced step of each round (`CALIB_TRACE`): its wait for the device.
const ROUNDS: [&str; 8] = [
    "device ranges: round 1",
    "device ranges: round 2",
    "device ranges: round 3",
    "device ranges: round 4",
    "device ranges: round 5",
    "device ranges: round 6",
    "device ranges: round 7",
    "device ranges: round 8 and later",
];

/// The table `step`'s kernel reads.
fn table_of(step: &Step) -> Vec<u32> {
    match step {
        Step::First => Vec::new(),
        Step::Digit(table) => table.entries.clone(),
        Step::Tie(pass) => pass.entries.clone(),
    }
}
