//! The host's side of the device's radix selection of range cuts: from each pass's
//! histograms it narrows every cut to the digit bucket holding it, until the cut's key is
//! known, then (for a key that repeats across the cut) to the row of the pair at the cut.
//!
//! A group of `n` pairs split into `R` ranges has cuts at the sorted positions
//! `floor(r n / R)`, `r = 1 .. R - 1` ([`crate::binning::range_start`]); a cut is the pair at that position,
//! `(key, row)`, pairs ordered by key and then by row (a stable sort). The first pass counts
//! every group's pairs by the top [`DIGITS`]`[0]` bits of their keys; each later pass counts,
//! for each bucket still holding an unsettled cut, the next digit of the pairs in that bucket.
//! A cut whose rank within its bucket is 0 settles at once: it is the bucket's smallest key,
//! and every pair with a key at least that is at or above it, whatever its row. A cut still
//! unsettled after the last digit sits inside a run of equal keys: [`TieSearch`] finds the
//! row of the run's `rank`-th pair by counting the run's pairs in blocks of rows, the block
//! holding it narrowed pass after pass.

#[cfg(test)]
use crate::binning::range_start;

/// Digit widths, top bits first (32 bits in all).
pub(crate) const DIGITS: [u32; 4] = [11, 7, 7, 7];
/// Most blocks a tie is counted in per pass.
const TIE_BLOCKS: usize = 4096;
/// About the most tie counters one pass keeps.
const TIE_WORDS: usize = 1 << 22;
/// A table entry not in use (see the kernels).
const UNUSED: u32 = super::range_kernels::UNUSED;

/// The lowest bit of digit `level`.
pub(crate) fn shift_of(level: usize) -> u32 {
    32 - DIGITS[..=level].iter().sum::<u32>()
}

/// One cut while it is being selected.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cut {
    /// The digits of its key found so far.
    prefix: u32,
    /// Pairs with the same prefix sorted before it.
    rank: u64,
    /// Its `(key, row)` once known.
    settled: Option<(u32, u32)>,
}

/// The cuts of every group.
#[derive(Debug, Clone)]
pub(crate) struct Selection {
    n_groups: usize,
    n_ranges: usize,
    /// `n_groups x (n_ranges - 1)` cuts.
    cuts: Vec<Cut>,
    /// The digit the last pass counted.
    level: usize,
}

/// The table of one digit pass: for each group, the prefixes it counts and their slots.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DigitTable {
    /// The digit counted.
    pub level: usize,
    /// Entries per group.
    pub per_group: usize,
    /// `n_groups x per_group` prefixes, then as many slots ([`UNUSED`] where empty).
    pub entries: Vec<u32>,
    /// Number of slots (histograms of `2^width` buckets).
    pub n_slots: usize,
}

impl Selection {
    /// The cuts located by the first pass's histograms `counts` (`n_groups x 2^DIGITS[0]`),
    /// on the host ([`locate`]); the device locates them with the kernel and calls
    /// [`Self::first_located`].
    #[cfg(test)]
    pub fn first(n_groups: usize, n_ranges: usize, counts: &[u32]) -> Self {
        let buckets = 1usize << DIGITS[0];
        assert_eq!(counts.len(), n_groups * buckets, "first-pass histograms");
        let queries = Self::first_queries(n_groups, n_ranges);
        let m = queries.len() / 2;
        let located: Vec<Located> = (0..m)
            .map(|q| {
                let hist = &counts[queries[q] as usize..][..buckets];
                let n: u64 = hist.iter().map(|&c| c as u64).sum();
                let at = range_start(queries[m + q] as usize, n as usize, n_ranges);
                locate(hist, at as u64)
            })
            .collect();
        Self::first_located(n_groups, n_ranges, &located)
    }

    /// The first pass's queries ([`locate`] with `first`): every cut's histogram offset, then
    /// its cut number `r`.
    pub fn first_queries(n_groups: usize, n_ranges: usize) -> Vec<u32> {
        let per_group = n_ranges.saturating_sub(1);
        let buckets = 1u32 << DIGITS[0];
        let mut queries: Vec<u32> =
            (0..n_groups * per_group).map(|i| (i / per_group) as u32 * buckets).collect();
        queries.extend((0..n_groups * per_group).map(|i| (i % per_group + 1) as u32));
        queries
    }

    /// The cuts from the first pass's located ranks (one per cut, in order).
    pub fn first_located(n_groups: usize, n_ranges: usize, located: &[Located]) -> Self {
        let per_group = n_ranges.saturating_sub(1);
        assert_eq!(located.len(), n_groups * per_group, "first-pass cuts");
        let width = 1u32 << DIGITS[0];
        let cuts = located
            .iter()
            .map(|at| {
                let mut cut = Cut { prefix: 0, rank: 0, settled: None };
                if at.bucket == width {
                    cut.settled = Some((0, 0)); // no pairs: any cut will do
                } else {
                    apply(&mut cut, at, DIGITS[0], shift_of(0));
                }
                cut
            })
            .collect();
        Self { n_groups, n_ranges, cuts, level: 0 }
    }

    /// The table of the next digit pass, or `None` when no cut needs one.
    pub fn next_pass(&self) -> Option<DigitTable> {
        let level = self.level + 1;
        if level >= DIGITS.len() || self.cuts.iter().all(|c| c.settled.is_some()) {
            return None;
        }
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); self.n_groups];
        for (i, cut) in self.cuts.iter().enumerate() {
            let prefixes = &mut groups[i / self.per_group()];
            if cut.settled.is_none() && !prefixes.contains(&cut.prefix) {
                prefixes.push(cut.prefix);
            }
        }
        // Cuts ascend in rank, so their prefixes ascend: the kernel searches them.
        debug_assert!(groups.iter().all(|p| p.windows(2).all(|w| w[0] < w[1])));
        let per_group = groups.iter().map(Vec::len).max().unwrap_or(0);
        let half = self.n_groups * per_group;
        let mut entries = vec![UNUSED; 2 * half];
        let mut n_slots = 0;
        for (g, prefixes) in groups.iter().enumerate() {
            for (j, &p) in prefixes.iter().enumerate() {
                entries[g * per_group + j] = p;
                entries[half + g * per_group + j] = n_slots as u32;
                n_slots += 1;
            }
        }
        Some(DigitTable { level, per_group, entries, n_slots })
    }

    /// Narrows the unsettled cuts by the histograms `hist` (`n_slots x 2^width`) of `table`,
    /// on the host ([`locate`]).
    #[cfg(test)]
    pub fn refine(&mut self, table: &DigitTable, hist: &[u32]) {
        let buckets = 1usize << DIGITS[table.level];
        assert_eq!(hist.len(), table.n_slots * buckets, "digit histograms");
        let queries = self.queries(table);
        let m = queries.len() / 2;
        let located: Vec<Located> = (0..m)
            .map(|q| locate(&hist[queries[q] as usize..][..buckets], queries[m + q] as u64))
            .collect();
        self.refine_located(table, &located);
    }

    /// The queries of `table`'s pass: each unsettled cut's histogram offset (its slot's), then
    /// its rank.
    pub fn queries(&self, table: &DigitTable) -> Vec<u32> {
        let buckets = 1u32 << DIGITS[table.level];
        let per_cut = self.per_group();
        let half = table.entries.len() / 2;
        let unsettled = self.cuts.iter().enumerate().filter(|(_, c)| c.settled.is_none());
        let (mut offsets, mut ranks) = (Vec::new(), Vec::new());
        for (i, cut) in unsettled {
            let base = (i / per_cut) * table.per_group;
            let j = (0..table.per_group)
                .find(|&j| table.entries[base + j] == cut.prefix)
                .expect("every unsettled cut's prefix is in the table");
            offsets.push(table.entries[half + base + j] * buckets);
            ranks.push(cut.rank as u32);
        }
        offsets.extend(ranks);
        offsets
    }

    /// Narrows the unsettled cuts (in order) to their located buckets of `table`'s pass.
    pub fn refine_located(&mut self, table: &DigitTable, located: &[Located]) {
        let unsettled = self.cuts.iter_mut().filter(|c| c.settled.is_none());
        let mut n = 0;
        for (cut, at) in unsettled.zip(located) {
            apply(cut, at, DIGITS[table.level], shift_of(table.level));
            n += 1;
        }
        assert_eq!(n, located.len(), "one located rank per unsettled cut");
        self.level = table.level;
    }

    /// The cuts inside runs of equal keys, once every digit is counted.
    pub fn ties(&self) -> TieSearch {
        assert!(
            self.level + 1 == DIGITS.len() || self.cuts.iter().all(|c| c.settled.is_some()),
            "ties are known after the last digit"
        );
        let ties = (self.cuts.iter().enumerate())
            .filter(|(_, c)| c.settled.is_none())
            .map(|(i, c)| Tie { cut: i, group: i / self.per_group(), key: c.prefix, rank: c.rank })
            .collect();
        TieSearch { ties, start: Vec::new(), span: 0 }
    }

    /// The cuts' keys, then their rows (`2 x n_groups x (n_ranges - 1)`), once all are
    /// settled.
    pub fn cut_table(&self, ties: &TieSearch) -> Vec<u32> {
        let mut settled: Vec<(u32, u32)> =
            self.cuts.iter().map(|c| c.settled.unwrap_or((UNUSED, 0))).collect();
        for (tie, &row) in ties.ties.iter().zip(&ties.start) {
            settled[tie.cut] = (tie.key, row as u32);
        }
        let mut table: Vec<u32> = settled.iter().map(|c| c.0).collect();
        table.extend(settled.iter().map(|c| c.1));
        table
    }

    fn per_group(&self) -> usize {
        self.n_ranges - 1
    }
}

/// Where a rank falls in a histogram: the bucket holding it (the histogram's width when it is
/// empty), the rank inside that bucket and the bucket's count. What the device's
/// `range_locate` kernel writes, three words a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Located {
    pub bucket: u32,
    pub rank: u32,
    pub count: u32,
}

/// The located queries of a `range_locate` read-back (`[3 m]`: buckets, ranks, counts).
pub(crate) fn located_of(words: &[u32]) -> Vec<Located> {
    let m = words.len() / 3;
    (0..m)
        .map(|q| Located { bucket: words[q], rank: words[m + q], count: words[2 * m + q] })
        .collect()
}

/// The host's `range_locate`: the bucket of `hist` holding the pair of rank `rank`.
#[cfg(test)]
pub(crate) fn locate(hist: &[u32], rank: u64) -> Located {
    let mut below = 0u64;
    for (b, &count) in hist.iter().enumerate() {
        if below + count as u64 > rank {
            return Located { bucket: b as u32, rank: (rank - below) as u32, count };
        }
        below += count as u64;
    }
    Located { bucket: hist.len() as u32, rank: (rank - below.min(rank)) as u32, count: 0 }
}

/// Moves `cut` into its located bucket (the next `width` bits of its key, lowest bit
/// `shift`); settles it when it is that bucket's first pair.
fn apply(cut: &mut Cut, at: &Located, width: u32, shift: u32) {
    assert!(at.bucket < 1 << width, "a cut's rank is below its bucket's count");
    cut.prefix = (cut.prefix << width) | at.bucket;
    cut.rank = at.rank as u64;
    if cut.rank == 0 {
        cut.settled = Some((cut.prefix << shift, 0));
    }
}

/// A cut inside a run of pairs with equal keys: the `rank`-th of them in row order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tie {
    cut: usize,
    group: usize,
    key: u32,
    rank: u64,
}

/// The search for the rows of the tied cuts: each pass counts every tie's run in blocks of
/// rows from the tie's `start`, and keeps the block holding its pair.
#[derive(Debug, Clone)]
pub(crate) struct TieSearch {
    ties: Vec<Tie>,
    /// Each tie's first row still searched (its pair's row once found).
    start: Vec<u64>,
    /// Rows still searched per tie.
    span: u64,
}

/// One tie pass's table and blocks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TiePass {
    /// Entries per group.
    pub per_group: usize,
    /// Keys (`n_groups x per_group`), then as many tie ids, then each tie's first row.
    pub entries: Vec<u32>,
    /// Rows per block.
    pub block: usize,
    /// Blocks per tie.
    pub n_blocks: usize,
}

impl TieSearch {
    /// Starts the search over `n_rows` rows.
    pub fn begin(&mut self, n_rows: usize) {
        self.start = vec![0; self.ties.len()];
        self.span = n_rows as u64;
    }

    /// The next pass, or `None` when every tie's row is found.
    pub fn next_pass(&self, n_groups: usize) -> Option<TiePass> {
        if self.ties.is_empty() || self.span <= 1 {
            return None;
        }
        let n_blocks = (TIE_WORDS / self.ties.len()).clamp(2, TIE_BLOCKS).min(self.span as usize);
        let block = self.span.div_ceil(n_blocks as u64) as usize;
        let n_blocks = self.span.div_ceil(block as u64) as usize;
        let mut per: Vec<Vec<usize>> = vec![Vec::new(); n_groups];
        for (id, tie) in self.ties.iter().enumerate() {
            per[tie.group].push(id);
        }
        let per_group = per.iter().map(Vec::len).max().unwrap_or(0);
        let half = n_groups * per_group;
        let mut entries = vec![UNUSED; 2 * half];
        for (g, ids) in per.iter().enumerate() {
            for (j, &id) in ids.iter().enumerate() {
                entries[g * per_group + j] = self.ties[id].key;
                entries[half + g * per_group + j] = id as u32;
            }
        }
        entries.extend(self.start.iter().map(|&s| s as u32));
        Some(TiePass { per_group, entries, block, n_blocks })
    }

    /// Keeps each tie's block holding its pair, from the pass's counts (`ties x n_blocks`),
    /// on the host ([`locate`]).
    #[cfg(test)]
    pub fn refine(&mut self, pass: &TiePass, counts: &[u32]) {
        assert_eq!(counts.len(), self.ties.len() * pass.n_blocks, "tie counts");
        let located: Vec<Located> = (self.ties.iter().enumerate())
            .map(|(id, tie)| locate(&counts[id * pass.n_blocks..][..pass.n_blocks], tie.rank))
            .collect();
        self.refine_located(pass, &located);
    }

    /// The queries of a tie pass: each tie's offset among the counts, then its rank.
    pub fn queries(&self, pass: &TiePass) -> Vec<u32> {
        let mut queries: Vec<u32> =
            (0..self.ties.len()).map(|id| (id * pass.n_blocks) as u32).collect();
        queries.extend(self.ties.iter().map(|t| t.rank as u32));
        queries
    }

    /// Keeps each tie's located block (one per tie, in order).
    pub fn refine_located(&mut self, pass: &TiePass, located: &[Located]) {
        assert_eq!(located.len(), self.ties.len(), "one located block per tie");
        for ((tie, start), at) in self.ties.iter_mut().zip(&mut self.start).zip(located) {
            assert!((at.bucket as usize) < pass.n_blocks, "a tie's rank is below its run's count");
            tie.rank = at.rank as u64;
            *start += at.bucket as u64 * pass.block as u64;
        }
        self.span = pass.block as u64;
    }
}

#[cfg(test)]
#[path = "selection_tests.rs"]
mod tests;
