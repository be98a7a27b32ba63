//! The host's side of the device's radix selection of range cuts: from each pass's
//! histograms it narrows every cut to the digit bucket holding it, until the cut's key is
//! known, then (for a key that repeats across the cut) to the row of the pair at the cut.
//!
//! A group of `n` pairs split into `R` ranges has cuts at the sorted positions
//! `floor(r n / R)`, `r = 1 .. R - 1` ([`range_start`]); a cut is the pair at that position,
//! `(key, row)`, pairs ordered by key and then by row (a stable sort). The first pass counts
//! every group's pairs by the top [`DIGITS`]`[0]` bits of their keys; each later pass counts,
//! for each bucket still holding an unsettled cut, the next digit of the pairs in that bucket.
//! A cut whose rank within its bucket is 0 settles at once: it is the bucket's smallest key,
//! and every pair with a key at least that is at or above it, whatever its row. A cut still
//! unsettled after the last digit sits inside a run of equal keys: [`TieSearch`] finds the
//! row of the run's `rank`-th pair by counting the run's pairs in blocks of rows, the block
//! holding it narrowed pass after pass.

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
    /// The cuts located by the first pass's histograms `counts` (`n_groups x 2^DIGITS[0]`).
    pub fn first(n_groups: usize, n_ranges: usize, counts: &[u32]) -> Self {
        let buckets = 1usize << DIGITS[0];
        assert_eq!(counts.len(), n_groups * buckets, "first-pass histograms");
        let per_group = n_ranges.saturating_sub(1);
        let mut cuts = Vec::with_capacity(n_groups * per_group);
        for g in 0..n_groups {
            let hist = &counts[g * buckets..(g + 1) * buckets];
            let n: u64 = hist.iter().map(|&c| c as u64).sum();
            for r in 1..n_ranges {
                let at = range_start(r, n as usize, n_ranges) as u64;
                let mut cut = Cut { prefix: 0, rank: at, settled: None };
                if n == 0 {
                    cut.settled = Some((0, 0)); // no pairs: any cut will do
                } else {
                    narrow(&mut cut, hist, shift_of(0));
                }
                cuts.push(cut);
            }
        }
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

    /// Narrows the unsettled cuts by the histograms `hist` (`n_slots x 2^width`) of `table`.
    pub fn refine(&mut self, table: &DigitTable, hist: &[u32]) {
        let buckets = 1usize << DIGITS[table.level];
        assert_eq!(hist.len(), table.n_slots * buckets, "digit histograms");
        let per_cut = self.per_group();
        let half = table.entries.len() / 2;
        for (i, cut) in self.cuts.iter_mut().enumerate() {
            if cut.settled.is_some() {
                continue;
            }
            let base = (i / per_cut) * table.per_group;
            let j = (0..table.per_group)
                .find(|&j| table.entries[base + j] == cut.prefix)
                .expect("every unsettled cut's prefix is in the table");
            let slot = table.entries[half + base + j] as usize;
            narrow(cut, &hist[slot * buckets..(slot + 1) * buckets], shift_of(table.level));
        }
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

/// Moves `cut` into the bucket of `hist` (the counts of its prefix's next digit, lowest bit
/// `shift`) that holds it; settles it when it is that bucket's first pair.
fn narrow(cut: &mut Cut, hist: &[u32], shift: u32) {
    let mut below = 0u64;
    for (d, &count) in hist.iter().enumerate() {
        if below + count as u64 > cut.rank {
            cut.prefix = (cut.prefix << hist.len().trailing_zeros()) | d as u32;
            cut.rank -= below;
            if cut.rank == 0 {
                cut.settled = Some((cut.prefix << shift, 0));
            }
            return;
        }
        below += count as u64;
    }
    unreachable!("a cut's rank is below its bucket's count");
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

    /// Keeps each tie's block holding its pair, from the pass's counts (`ties x n_blocks`).
    pub fn refine(&mut self, pass: &TiePass, counts: &[u32]) {
        assert_eq!(counts.len(), self.ties.len() * pass.n_blocks, "tie counts");
        for (id, tie) in self.ties.iter_mut().enumerate() {
            let blocks = &counts[id * pass.n_blocks..(id + 1) * pass.n_blocks];
            let mut below = 0u64;
            let b = blocks
                .iter()
                .position(|&c| {
                    let hit = below + c as u64 > tie.rank;
                    if !hit {
                        below += c as u64;
                    }
                    hit
                })
                .expect("a tie's rank is below its run's count");
            tie.rank -= below;
            self.start[id] += (b * pass.block) as u64;
        }
        self.span = pass.block as u64;
    }
}

#[cfg(test)]
#[path = "selection_tests.rs"]
mod tests;
