//! Class columns of the probability matrix, rebuilt from the rows for the adaptive ranges.
//!
//! The fused row pass keeps, per row, `(max logit, 1 / sum exp)`; a column is then
//! `exp(z_ij - max_i) * inv_i`, the row pass's own expression, so it is bit-identical without
//! an `[N, K]` copy. Classes are rebuilt in groups ([`group_width`]); one read of a group's
//! rows gives its full columns (requests without a threshold, ACE) and, per distinct
//! threshold, its filtered columns (TACE), each with its hits and value range
//! ([`GroupColumns`]).

use std::ops::Range;

use super::value_ranges::accumulate_value_ranges_within;
use crate::input::ScoreKind;
use crate::stats::BinStats;
use calib_kernels::{
    Score, copy_streaming, exp_nonpositive, for_each_above, prefetch, stream_fence,
};

/// Class columns one thread holds at once, at most (bytes), unless 16 classes need more.
///
/// Wider groups save a few percent at most past 48 classes, while the columns are the engine's
/// largest working memory: at 50,000 x 1,000 two threads' columns add ~19 % to the input's own
/// size (the whole `calib eval` process peaks under 1.3x the file, docs/benchmarks.md).
const COLUMN_BUDGET: usize = 18 << 20;

/// Cache line size (bytes): full columns start at a multiple of it.
const CACHE_LINE: usize = 64;

/// How many rows ahead the column build prefetches its slice of a row ([`prefetch`]).
const PREFETCH_ROWS: usize = 8;

/// Classes rebuilt together: a multiple of 16 (a cache line of f32 logits) from 16 to 128,
/// as wide as `COLUMN_BUDGET` allows and narrow enough to give every thread 4 groups.
///
/// Wide groups matter: each row's slice is a separate page of the row-major matrix, so a
/// 16-class group pays a TLB miss and a cache miss per row per 16 classes, and at large K
/// those misses dominate the build; 128 classes share each miss eight times more.
pub(super) fn group_width(n: usize, k: usize, threads: usize) -> usize {
    let by_memory = COLUMN_BUDGET / (8 * n.max(1));
    let by_balance = k.div_ceil(4 * threads.max(1));
    (by_memory.min(by_balance).div_ceil(16) * 16).clamp(16, 128)
}

/// One class column of a group: scores in sample order, the positions of its hits
/// (`y == class`) and its value range.
#[derive(Debug, Default)]
pub(super) struct Column {
    /// The scores are `buf[start..]`; a column built from row blocks starts at a cache-line
    /// boundary ([`Column::zeros_aligned`]), so its runs fill whole lines.
    buf: Vec<f64>,
    start: usize,
    hits: Vec<usize>,
    /// Smallest and largest value in [`f64::total_cmp`] order (`lo > hi` when empty).
    lo: f64,
    hi: f64,
}

impl Column {
    /// The scores, in sample order.
    fn values(&self) -> &[f64] {
        &self.buf[self.start..]
    }

    /// Forgets the hits and the range, keeping the values (a full column's build overwrites
    /// them in place).
    fn reset(&mut self) {
        self.hits.clear();
        (self.lo, self.hi) = (f64::INFINITY, f64::NEG_INFINITY);
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
        self.reset();
    }

    /// Makes the values `n` entries starting at a cache-line boundary (for
    /// [`copy_streaming`]), keeping the allocation when it already is that; the entries are
    /// to be overwritten.
    fn zeros_aligned(&mut self, n: usize) {
        const PER_LINE: usize = CACHE_LINE / size_of::<f64>();
        let aligned = |c: &Self| c.values().as_ptr().align_offset(CACHE_LINE) == 0;
        if self.buf.len() != self.start + n || !aligned(self) {
            // Zeroed allocation: fresh pages from the system, no memset.
            self.buf = vec![0.0; n + PER_LINE - 1];
            // At most PER_LINE - 1 for an 8-byte-aligned pointer (`align_offset` may also
            // answer usize::MAX, "cannot": then unaligned, which is only slower).
            self.start = self.buf.as_ptr().align_offset(CACHE_LINE).min(PER_LINE - 1);
            self.buf.truncate(self.start + n);
        }
    }

    /// Appends a score (a hit when `hit`), tracking the range.
    #[inline(always)]
    fn push(&mut self, s: f64, hit: bool) {
        if hit {
            self.hits.push(self.buf.len() - self.start);
        }
        self.buf.push(s);
        if s.total_cmp(&self.lo).is_lt() {
            self.lo = s;
        }
        if s.total_cmp(&self.hi).is_gt() {
            self.hi = s;
        }
    }
}

/// The columns of one group of classes, reused from group to group (no fresh pages per
/// group): unfiltered, and filtered per distinct threshold.
#[derive(Debug, Default)]
pub(super) struct GroupColumns {
    /// Every score (when some request has no threshold).
    full: Vec<Column>,
    /// How many of `full` the current group uses (the rest are kept for a wider group).
    n_full: usize,
    /// `kept[t]`: the scores `> thresholds[t]`.
    kept: Vec<Vec<Column>>,
    thresholds: Vec<f64>,
}

impl GroupColumns {
    /// Resets the buffers for `width` classes: full columns when `full`, and filtered ones for
    /// each distinct threshold of `wants`.
    fn reset(&mut self, width: usize, full: bool, wants: &[Option<f64>]) {
        self.thresholds.clear();
        for eps in wants.iter().flatten() {
            if !self.thresholds.iter().any(|t| t.to_bits() == eps.to_bits()) {
                self.thresholds.push(*eps);
            }
        }
        // Never shrunk: a narrower last group must not free the columns the next call's
        // first group reuses.
        self.n_full = if full { width } else { 0 };
        if self.full.len() < self.n_full {
            self.full.resize_with(self.n_full, Column::default);
        }
        self.full[..self.n_full].iter_mut().for_each(Column::reset);
        self.kept.resize_with(self.thresholds.len(), Vec::new);
        for kept in &mut self.kept {
            kept.resize_with(width, Column::default);
            kept.iter_mut().for_each(Column::clear);
        }
    }

    /// Bytes of buffer capacity held.
    pub(super) fn bytes(&self) -> usize {
        let column = |c: &Column| {
            size_of::<f64>() * c.buf.capacity() + size_of::<usize>() * c.hits.capacity()
        };
        self.full.iter().chain(self.kept.iter().flatten()).map(column).sum::<usize>()
            + size_of::<f64>() * self.thresholds.capacity()
    }

    /// The columns a request with threshold `want` ranks.
    fn of(&self, want: Option<f64>) -> &[Column] {
        match want {
            None => &self.full[..self.n_full],
            Some(eps) => {
                let t = self.thresholds.iter().position(|t| t.to_bits() == eps.to_bits());
                &self.kept[t.expect("every wanted threshold has its columns")]
            }
        }
    }
}

/// Class columns of the probability matrix, recomputed from the rows on demand.
pub(super) struct ClassColumns<'a, T: Score> {
    pub(super) values: &'a [T],
    pub(super) labels: &'a [i64],
    pub(super) kind: ScoreKind,
    pub(super) k: usize,
    pub(super) scales: &'a [(f64, f64)],
}

impl<T: Score> ClassColumns<'_, T> {
    /// `p[i, j]`, bit for bit as the row pass computed it.
    #[inline]
    pub(super) fn probability(&self, i: usize, j: usize) -> f64 {
        let v: f64 = self.values[i * self.k + j].into();
        match self.kind {
            ScoreKind::Logits => {
                let (max, inv) = self.scales[i];
                exp_nonpositive(v - max) * inv
            }
            _ => v,
        }
    }

    /// Columns `first .. first + width` in sample order into `out`, one read of the rows for
    /// the whole group: every score when some want is `None`, and the scores `> eps` for
    /// each wanted `Some(eps)`, each column with its hits and value range.
    #[inline(always)]
    fn columns(&self, first: usize, width: usize, wants: &[Option<f64>], out: &mut GroupColumns) {
        let last = (first + width).min(self.k);
        let full = wants.contains(&None);
        out.reset(last - first, full, wants);
        if self.kind == ScoreKind::Logits && full {
            self.columns_by_row_blocks(first..last, out);
        } else {
            self.columns_entry_by_entry(first..last, full, out);
        }
    }

    /// Full columns (and filtered ones) of logits, a block of rows at a time: the group's
    /// logits of each row are contiguous (vectorised exp), then the block is transposed so
    /// each column receives a contiguous run of [`ROW_BLOCK`] values. Scores are `>= +0.0` (no
    /// NaN, no -0.0), so `<` is the total order. Filtered columns take the few scores above
    /// their thresholds straight from the row block.
    #[inline(always)]
    fn columns_by_row_blocks(&self, classes: Range<usize>, out: &mut GroupColumns) {
        let (n, width) = (self.labels.len(), classes.len());
        let GroupColumns { full: cols, n_full, kept, thresholds } = out;
        let cols = &mut cols[..*n_full];
        cols.iter_mut().for_each(|col| col.zeros_aligned(n));
        let mut block = vec![0.0f64; ROW_BLOCK * width];
        let (mut lo, mut hi) = (vec![f64::INFINITY; width], vec![0.0f64; width]);
        for i0 in (0..n).step_by(ROW_BLOCK) {
            let rows = i0..(i0 + ROW_BLOCK).min(n);
            for (i, t) in rows.clone().zip(block.chunks_exact_mut(width)) {
                self.block_row(i, classes.clone(), t);
                for ((l, h), &t) in lo.iter_mut().zip(hi.iter_mut()).zip(t.iter()) {
                    // min/max, not a select: LLVM turns `*l = if t < *l { t } else { *l }`
                    // into a masked store (vmaskmovpd), microcoded and slow on AMD.
                    *l = l.min(t);
                    *h = h.max(t);
                }
                let y = self.labels[i] as usize;
                for (kept, &eps) in kept.iter_mut().zip(thresholds.iter()) {
                    for_each_above(t, eps, |c, s| kept[c].push(s, classes.start + c == y));
                }
            }
            stream_block(&block, width, rows, cols);
        }
        stream_fence();
        for (col, (&l, &h)) in cols.iter_mut().zip(lo.iter().zip(&hi)) {
            (col.lo, col.hi) = (l, h);
        }
        for (i, &y) in self.labels.iter().enumerate() {
            if classes.contains(&(y as usize)) {
                cols[y as usize - classes.start].hits.push(i);
            }
        }
    }

    /// Row `i`'s probabilities of `classes` into `out` (prefetching the row
    /// [`PREFETCH_ROWS`] ahead).
    #[inline(always)]
    fn block_row(&self, i: usize, classes: Range<usize>, out: &mut [f64]) {
        let (max, inv) = self.scales[i];
        let row = &self.values[i * self.k + classes.start..i * self.k + classes.end];
        if i + PREFETCH_ROWS < self.labels.len() {
            let ahead = (i + PREFETCH_ROWS) * self.k;
            prefetch(&self.values[ahead + classes.start..ahead + classes.end]);
        }
        for (t, &v) in out.iter_mut().zip(row) {
            *t = exp_nonpositive(v.into() - max) * inv;
        }
    }

    /// Columns entry by entry (probability input, or only filtered columns). Without full
    /// columns on logits, an entry is only exponentiated when its logit is within 1e-6 of
    /// `max + ln(eps / inv)` for the lowest threshold (the logit at which `p = eps`);
    /// comparisons are always made on the exact `p`.
    #[inline(always)]
    fn columns_entry_by_entry(&self, classes: Range<usize>, full: bool, out: &mut GroupColumns) {
        let GroupColumns { full: cols, n_full, kept, thresholds } = out;
        let cols = &mut cols[..*n_full];
        let lowest = thresholds.iter().copied().fold(f64::INFINITY, f64::min);
        cols.iter_mut().for_each(Column::clear);
        for i in 0..self.labels.len() {
            let y = self.labels[i] as usize;
            let floor = match self.kind {
                ScoreKind::Logits if !full => {
                    let (max, inv) = self.scales[i];
                    max + (lowest / inv).ln() - 1e-6
                }
                _ => f64::NEG_INFINITY,
            };
            let row = &self.values[i * self.k + classes.start..i * self.k + classes.end];
            for (c, &v) in row.iter().enumerate() {
                if v.into() < floor {
                    continue;
                }
                let s = self.probability(i, classes.start + c);
                let hit = classes.start + c == y;
                if full {
                    cols[c].push(s, hit);
                }
                for (kept, &eps) in kept.iter_mut().zip(thresholds.iter()) {
                    if s > eps {
                        kept[c].push(s, hit);
                    }
                }
            }
        }
    }

    /// Adds the equal-mass ranges of classes `first .. first + width` to `parts[w]`, for
    /// each wanted threshold `wants[w]`: one column build (into `columns`, reused between
    /// calls) serves them all. Inlined so a caller's [`dispatch`] compiles it for AVX2.
    ///
    /// [`dispatch`]: calib_kernels::dispatch
    #[inline(always)]
    pub(super) fn ranges(
        &self,
        first: usize,
        width: usize,
        wants: &[Option<f64>],
        parts: &mut [BinStats],
        columns: &mut GroupColumns,
    ) {
        self.columns(first, width, wants, columns);
        let mut scratch = Vec::new();
        for (&want, part) in wants.iter().zip(parts) {
            for (j, col) in (first..).zip(columns.of(want)) {
                if !col.values().is_empty() {
                    let bounds = (col.lo, col.hi);
                    accumulate_value_ranges_within(
                        part,
                        j,
                        col.values(),
                        bounds,
                        &col.hits,
                        &mut scratch,
                    );
                }
            }
        }
    }
}

/// Rows per block of the full-column build: a column's run of 16 f64 is two cache lines.
const ROW_BLOCK: usize = 16;

/// Transposes a block of rows (`block`, row-major, `width` classes) into the columns: each
/// column's run of `rows.len()` values fills whole cache lines, so it is streamed (no read of
/// the lines first, no eviction of the rows being read).
#[inline(always)]
fn stream_block(block: &[f64], width: usize, rows: Range<usize>, cols: &mut [Column]) {
    let mut run = [0.0f64; ROW_BLOCK];
    let run = &mut run[..rows.len()];
    for (c, col) in cols.iter_mut().enumerate() {
        for (r, x) in run.iter_mut().enumerate() {
            *x = block[r * width + c];
        }
        copy_streaming(&mut col.buf[col.start + rows.start..col.start + rows.end], run);
    }
}
