//! Adaptive ranges on the device, without a sort: each group's cuts by radix selection
//! ([`Selection`]: a histogram pass per digit of the scores' order keys, each reading back
//! only the buckets' counts), the rows of cuts inside runs of equal scores by counting the
//! run in blocks of rows ([`TieSearch`]), then one pass adding every pair to its range's
//! sums. Ties follow the stable order of the convention (docs/conventions.md, "Adaptive
//! ranges"), so the ranges are those of the host's radix ranges on the same f32 scores.
//!
//! Passes: 1 to 4 digit passes (fewer when every cut is the first of its bucket early), a
//! tie pass per factor of 4,096 rows when a cut falls inside a run of equal scores, and the
//! sums; each visits every chunk of rows.

use burn::backend::Dispatch;
use burn::backend::tensor::IntTensor;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};

use super::fixed_bins::MAX_CLASS_BINS;
use super::fixed_bins::WORDS;
use super::range_ops::{DigitPass, PairSource, RangeKernels, TieBlocks};
use super::rows::{device_rows, row_pass};
use super::selection::{DIGITS, DigitTable, Selection, TiePass, shift_of};
use super::words::{add_bins, read_words};
use crate::binning::{Binning, f32_below};
use crate::engine::plan::StatRequest;
use crate::error::Result;
use crate::input::{Predictions, ScoreKind};
use crate::metrics::ScoreSet;
use crate::stats::BinStats;

/// Whether the device ranges take `request` (class-wise ranges are kept in registers).
pub(super) fn takes(request: &StatRequest) -> bool {
    matches!(request.binning, Binning::Adaptive { n_ranges } if n_ranges <= MAX_CLASS_BINS)
}

/// One chunk of rows on the device, with its row pass.
struct Chunk {
    values: Tensor<2>,
    labels: Tensor<1, Int>,
    rows: Tensor<2>,
    pred: Tensor<1, Int>,
    source: PairSource,
}

/// The input's chunks of rows, uploaded (and their row pass run) again for every pass unless
/// there is only one.
struct Chunks<'a> {
    preds: &'a Predictions,
    ranges: Vec<(usize, usize)>,
    source: PairSource,
    kept: Option<Chunk>,
}

impl<'a> Chunks<'a> {
    fn new(preds: &'a Predictions, ranges: Vec<(usize, usize)>, source: PairSource) -> Self {
        Self { preds, ranges, source, kept: None }
    }

    /// Calls `f` on every chunk in row order.
    fn visit(&mut self, mut f: impl FnMut(&Chunk)) {
        let (preds, source) = (self.preds, self.source);
        if let [range] = self.ranges[..] {
            return f(self.kept.get_or_insert_with(|| load_chunk(preds, range, source)));
        }
        for &range in &self.ranges {
            f(&load_chunk(preds, range, source));
        }
    }
}

/// Rows `range` of `preds` on their device, with their row pass.
fn load_chunk(preds: &Predictions, range: (usize, usize), source: PairSource) -> Chunk {
    let (values, labels) = device_rows(preds, range);
    let (rows, pred) = row_pass(values.clone(), labels.clone(), source.logits);
    let source = PairSource { first_row: range.0 as u32, ..source };
    Chunk { values, labels, rows, pred, source }
}

/// The range statistics of `request` (see [`takes`]) over the rows `ranges` of `preds`.
pub(super) fn device_ranges(
    preds: &Predictions,
    request: &StatRequest,
    ranges: Vec<(usize, usize)>,
) -> Result<BinStats> {
    let k = preds.n_classes();
    let n_groups = request.n_groups(k, false);
    let n_ranges = request.binning.n_bins();
    let source = PairSource {
        classes: request.scores == ScoreSet::AllClasses,
        grouped: n_groups > 1 && request.scores == ScoreSet::TopLabel,
        logits: preds.kind() == ScoreKind::Logits,
        threshold: request.threshold.map_or(-1.0, f32_below),
        first_row: 0,
    };
    let device = preds.device().clone();
    let mut chunks = Chunks::new(preds, ranges, source);
    let selection = select_cuts(&mut chunks, &device, n_groups, n_ranges)?;
    let cuts = u32_tensor(selection, &device);
    let words = accumulate(&mut chunks, &device, n_groups * n_ranges * WORDS, |c, bins| {
        if source.classes {
            <Dispatch as RangeKernels>::calib_class_ranges(
                c.values.clone().into_dispatch(),
                c.labels.clone().into_dispatch(),
                c.rows.clone().into_dispatch(),
                cuts.clone().into_dispatch(),
                bins,
                c.source,
                n_ranges,
            )
        } else {
            <Dispatch as RangeKernels>::calib_top_label_ranges(
                c.rows.clone().into_dispatch(),
                c.pred.clone().into_dispatch(),
                cuts.clone().into_dispatch(),
                bins,
                c.source,
                n_ranges,
            )
        }
    })?;
    let mut stats = request.zeros(k, false);
    add_bins(&mut stats, &words);
    Ok(stats)
}

/// Every group's cuts, keys then rows (see [`Selection::cut_table`]).
fn select_cuts(
    chunks: &mut Chunks<'_>,
    device: &Device,
    n_groups: usize,
    n_ranges: usize,
) -> Result<Vec<u32>> {
    let first = count_digits(chunks, device, None, n_groups)?;
    let mut selection = Selection::first(n_groups, n_ranges, &first);
    while let Some(table) = selection.next_pass() {
        let hist = count_digits(chunks, device, Some(&table), n_groups)?;
        selection.refine(&table, &hist);
    }
    let mut ties = selection.ties();
    ties.begin(chunks.preds.n_samples());
    while let Some(pass) = ties.next_pass(n_groups) {
        let counts = count_ties(chunks, device, &pass, n_groups)?;
        ties.refine(&pass, &counts);
    }
    Ok(selection.cut_table(&ties))
}

/// One digit pass over every chunk: the first (`table` = `None`) or the one of `table`.
fn count_digits(
    chunks: &mut Chunks<'_>,
    device: &Device,
    table: Option<&DigitTable>,
    n_groups: usize,
) -> Result<Vec<u32>> {
    let level = table.map_or(0, |t| t.level);
    let n_slots = table.map_or(n_groups, |t| t.n_slots);
    let pass = DigitPass {
        shift: shift_of(level),
        width: DIGITS[level],
        per_group: table.map_or(0, |t| t.per_group as u32),
    };
    let table = u32_tensor(table.map_or_else(Vec::new, |t| t.entries.clone()), device);
    accumulate(chunks, device, n_slots << DIGITS[level], |c, hist| {
        <Dispatch as RangeKernels>::calib_range_histogram(
            c.values.clone().into_dispatch(),
            c.rows.clone().into_dispatch(),
            c.pred.clone().into_dispatch(),
            table.clone().into_dispatch(),
            hist,
            c.source,
            pass,
        )
    })
}

/// One tie pass over every chunk.
fn count_ties(
    chunks: &mut Chunks<'_>,
    device: &Device,
    pass: &TiePass,
    n_groups: usize,
) -> Result<Vec<u32>> {
    let half = n_groups * pass.per_group;
    let n_ties = pass.entries.len() - 2 * half;
    let blocks = TieBlocks {
        block: pass.block as u32,
        n_blocks: pass.n_blocks as u32,
        per_group: pass.per_group as u32,
        half: half as u32,
    };
    let table = u32_tensor(pass.entries.clone(), device);
    accumulate(chunks, device, n_ties * pass.n_blocks, |c, counts| {
        <Dispatch as RangeKernels>::calib_range_tie_counts(
            c.values.clone().into_dispatch(),
            c.rows.clone().into_dispatch(),
            c.pred.clone().into_dispatch(),
            table.clone().into_dispatch(),
            counts,
            c.source,
            blocks,
        )
    })
}

/// A zeroed u32 accumulator of `n_words` on `device`, added to by `add` (a kernel launch) on
/// every chunk in turn, then read back.
fn accumulate(
    chunks: &mut Chunks<'_>,
    device: &Device,
    n_words: usize,
    mut add: impl FnMut(&Chunk, IntTensor<Dispatch>) -> IntTensor<Dispatch>,
) -> Result<Vec<u32>> {
    let mut words = Tensor::<1, Int>::zeros([n_words], (device, DType::U32));
    chunks.visit(|c| words = Tensor::from_dispatch(add(c, words.clone().into_dispatch())));
    read_words(words)
}

/// A u32 tensor of `values` on `device`; an empty table becomes two unused words (kernels
/// take no empty buffer).
fn u32_tensor(mut values: Vec<u32>, device: &Device) -> Tensor<1, Int> {
    if values.is_empty() {
        values = vec![0, 0];
    }
    let n = values.len();
    Tensor::<1, Int>::from_data(TensorData::new(values, [n]), (device, DType::U32))
}
