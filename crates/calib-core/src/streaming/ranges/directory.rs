//! A [`Directory`]: per group, a table from the first pass's bucket of a key's high half
//! (first.rs) to what the pair loop would find by searching the group's intervals.
//!
//! Every cell is a key prefix. A cell that no interval touches sends each of its pairs
//! outside, above the intervals below it; a cell wholly inside one interval sends them into
//! that interval; a cell an interval's end crosses leaves its pairs to a search of the few
//! intervals that touch it (a speculative pass's windows put ~20 in one cell). After the
//! first pass the intervals are first-pass buckets or parts of them, so with as many cells as
//! the first pass had buckets almost every pair is decided by one table read, where the search
//! compares it with every interval of its group.

use super::first;

/// Cell kinds, in a cell's two low bits; the rest holds the interval index.
const OUTSIDE: u32 = 0;
const INSIDE: u32 = 1;
const CROSSED: u32 = 2;

/// Cells of one search over all its groups (2 MiB of `u32`).
const CELLS: usize = 1 << 19;

/// Most bits per group: 16,384 cells, 256 per octave of probabilities.
const MAX_BITS: u32 = 14;

/// What a cell says of the pairs in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cell {
    /// Outside every interval, above intervals `0..i`.
    Outside(usize),
    /// Inside interval `i`.
    Inside(usize),
    /// An interval's end lies in the cell: search intervals `from..to`, the ones touching it
    /// (every interval before `from` lies below the cell, every one from `to` on above it).
    Crossed { from: usize, to: usize },
}

/// The cells of every group of one search, group `g`'s at `g << bits`.
#[derive(Debug, Clone, Default)]
pub(super) struct Directory {
    bits: u32,
    cells: Vec<u32>,
    /// Per crossed cell: the group's intervals touching it, `from..to`.
    spans: Vec<(u32, u32)>,
}

impl Directory {
    /// An empty directory for `n_groups` groups: `None` where fewer than
    /// [`first::MIN_BITS`] bits per group fit.
    pub fn new(n_groups: usize) -> Option<Self> {
        let per_group = CELLS / n_groups.max(1);
        let bits = per_group.checked_ilog2()?.min(MAX_BITS);
        (bits >= first::MIN_BITS).then(|| Self { bits, cells: Vec::new(), spans: Vec::new() })
    }

    /// Appends the cells of the next group, whose intervals' high halves span
    /// `first_hi[i]..=last_hi[i]` (sorted, disjoint).
    pub fn push_group(&mut self, first_hi: &[u64], last_hi: &[u64]) {
        let Self { bits, cells, spans } = self;
        let (bits, start) = (*bits, cells.len());
        cells.resize(start + (1 << bits), code(OUTSIDE, first_hi.len()));
        let cells = &mut cells[start..];
        // First cell no interval has written.
        let mut next = 0;
        for (i, (&lo, &hi)) in first_hi.iter().zip(last_hi).enumerate() {
            let (b0, b1) = (first::bucket(lo, bits), first::bucket(hi, bits));
            if next < b0 {
                cells[next..b0].fill(code(OUTSIDE, i));
            }
            for (c, cell) in cells.iter_mut().enumerate().take(b1 + 1).skip(b0) {
                let within = c > b0 && c < b1 || covers(c, bits, lo, hi);
                if c >= next && within {
                    *cell = code(INSIDE, i);
                } else if c < next && *cell & 3 == CROSSED {
                    spans[(*cell >> 2) as usize].1 = i as u32 + 1;
                } else {
                    *cell = code(CROSSED, spans.len());
                    spans.push((i as u32, i as u32 + 1));
                }
            }
            next = next.max(b1 + 1);
        }
    }

    /// Group `group`'s cells.
    #[inline(always)]
    pub fn group(&self, group: usize) -> &[u32] {
        &self.cells[group << self.bits..(group + 1) << self.bits]
    }

    /// The cell of high half `hi` among a group's `cells`.
    #[inline(always)]
    pub fn cell(&self, cells: &[u32], hi: u64) -> Cell {
        let c = cells[first::bucket(hi, self.bits)];
        let i = (c >> 2) as usize;
        match c & 3 {
            OUTSIDE => Cell::Outside(i),
            INSIDE => Cell::Inside(i),
            _ => {
                let (from, to) = self.spans[i];
                Cell::Crossed { from: from as usize, to: to as usize }
            }
        }
    }
}

fn code(kind: u32, i: usize) -> u32 {
    let i = u32::try_from(i).ok().filter(|&i| i < 1 << 30).expect("intervals per group < 2^30");
    i << 2 | kind
}

/// Whether the high halves `lo..=hi` hold every key of cell `c`.
fn covers(c: usize, bits: u32, lo: u64, hi: u64) -> bool {
    let Some((prefix, shift)) = first::interval(c, bits) else { return false };
    let c_lo = (prefix >> 64) as u64;
    let c_hi = c_lo | (1u64 << (shift - 64)).wrapping_sub(1);
    lo <= c_lo && c_hi <= hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::order_key;

    /// The search the directory stands in for.
    fn search(first_hi: &[u64], last_hi: &[u64], hi: u64) -> Result<usize, usize> {
        let i = last_hi.partition_point(|&l| l < hi);
        if i < last_hi.len() && first_hi[i] <= hi { Ok(i) } else { Err(i) }
    }

    #[test]
    fn cells_agree_with_the_search() {
        let key = order_key;
        // A wide interval, one cell's worth, a narrow one, two sharing one high half, and the
        // whole key space.
        let (a, b) = (key(0.01), key(0.0100001));
        let cases: Vec<Vec<(u64, u64)>> = vec![
            vec![(key(1e-6), key(1e-3)), (a, a), (a + 1, b), (b + 5, b + 5), (key(0.5), key(0.5))],
            vec![(key(0.25), key(0.25)), (key(0.25) + 1, key(0.25) + 1)],
            vec![(0, u64::MAX)],
            vec![],
        ];
        let scores =
            [0.0, 1e-300, 1e-9, 1e-6, 2e-6, 1e-3, 0.01, 0.0100001, 0.25, 0.5, 0.9, 1.0, 3.0];
        for intervals in cases {
            let (first_hi, last_hi): (Vec<u64>, Vec<u64>) = intervals.into_iter().unzip();
            for groups in [1, 100, 40_000] {
                let Some(mut dir) = Directory::new(groups) else {
                    assert!(groups > CELLS >> first::MIN_BITS);
                    continue;
                };
                dir.push_group(&first_hi, &last_hi);
                let cells = dir.group(0);
                let probes = scores.iter().map(|&s| key(s)).chain(first_hi.iter().copied());
                let probes = probes.chain(last_hi.iter().copied());
                for hi in probes.flat_map(|h| [h.wrapping_sub(1), h, h.wrapping_add(1)]) {
                    match dir.cell(cells, hi) {
                        Cell::Outside(i) => assert_eq!(search(&first_hi, &last_hi, hi), Err(i)),
                        Cell::Inside(i) => assert_eq!(search(&first_hi, &last_hi, hi), Ok(i)),
                        Cell::Crossed { from, to } => {
                            let (f, l) = (&first_hi[from..to], &last_hi[from..to]);
                            let within = search(f, l, hi).map(|i| i + from).map_err(|i| i + from);
                            assert_eq!(search(&first_hi, &last_hi, hi), within);
                        }
                    }
                }
                // Cells away from every interval's ends decide their pairs.
                let far = match first_hi.len() {
                    0 => Cell::Outside(0),
                    1 => Cell::Inside(0),
                    n => Cell::Outside(n),
                };
                assert_eq!(dir.cell(cells, key(0.9)), far);
            }
        }
    }
}
