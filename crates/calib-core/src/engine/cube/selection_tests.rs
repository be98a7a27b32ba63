//! The selection's bookkeeping against a stable sort, with the kernels' counting done by a
//! host loop (so these run without a device).

use super::*;
use crate::synthetic::SplitMix64;

/// `(group, key, row)` pairs; counts as the histogram kernel would.
fn histogram(pairs: &[(usize, u32, u32)], n_groups: usize, table: Option<&DigitTable>) -> Vec<u32> {
    let level = table.map_or(0, |t| t.level);
    let (shift, buckets) = (shift_of(level), 1u32 << DIGITS[level]);
    let n_slots = table.map_or(n_groups, |t| t.n_slots);
    let mut hist = vec![0u32; n_slots * buckets as usize];
    for &(g, key, _) in pairs {
        let digit = (key >> shift) & (buckets - 1);
        let slot = match table {
            None => Some(g as u32),
            Some(t) => {
                let half = t.entries.len() / 2;
                let prefix = key >> (shift + DIGITS[level]);
                (0..t.per_group)
                    .find(|&j| t.entries[g * t.per_group + j] == prefix)
                    .map(|j| t.entries[half + g * t.per_group + j])
            }
        };
        if let Some(s) = slot {
            hist[(s * buckets + digit) as usize] += 1;
        }
    }
    hist
}

/// Counts as the tie kernel would.
fn tie_counts(pairs: &[(usize, u32, u32)], pass: &TiePass, n_groups: usize) -> Vec<u32> {
    let half = n_groups * pass.per_group;
    let n_ties = pass.entries.len() - 2 * half;
    let mut counts = vec![0u32; n_ties * pass.n_blocks];
    for &(g, key, row) in pairs {
        for j in 0..pass.per_group {
            let id = pass.entries[half + g * pass.per_group + j];
            if id == UNUSED || pass.entries[g * pass.per_group + j] != key {
                continue;
            }
            let start = pass.entries[2 * half + id as usize];
            if row >= start {
                let b = ((row - start) as usize) / pass.block;
                if b < pass.n_blocks {
                    counts[id as usize * pass.n_blocks + b] += 1;
                }
            }
        }
    }
    counts
}

/// The whole selection as the device runs it, passes counted on the host.
fn select(
    pairs: &[(usize, u32, u32)],
    n_groups: usize,
    n_ranges: usize,
    n_rows: usize,
) -> (Vec<u32>, usize) {
    let mut selection = Selection::first(n_groups, n_ranges, &histogram(pairs, n_groups, None));
    while let Some(table) = selection.next_pass() {
        let hist = histogram(pairs, n_groups, Some(&table));
        selection.refine(&table, &hist);
    }
    let mut ties = selection.ties();
    ties.begin(n_rows);
    while let Some(pass) = ties.next_pass(n_groups) {
        let counts = tie_counts(pairs, &pass, n_groups);
        ties.refine(&pass, &counts);
    }
    (selection.cut_table(&ties), ties.ties.len())
}

/// The cuts by a stable sort: the pair at each range's first position.
fn sorted_cuts(pairs: &[(usize, u32, u32)], n_groups: usize, n_ranges: usize) -> Vec<(u32, u32)> {
    let mut cuts = Vec::new();
    for g in 0..n_groups {
        let mut members: Vec<(u32, u32)> =
            pairs.iter().filter(|p| p.0 == g).map(|p| (p.1, p.2)).collect();
        members.sort();
        for r in 1..n_ranges {
            let at = range_start(r, members.len(), n_ranges);
            cuts.push(members.get(at).copied().unwrap_or((0, 0)));
        }
    }
    cuts
}

/// Checks the selection against a sort; returns the number of cuts inside runs of equal keys.
fn check(pairs: &[(usize, u32, u32)], n_groups: usize, n_ranges: usize, n_rows: usize) -> usize {
    let (table, n_ties) = select(pairs, n_groups, n_ranges, n_rows);
    let want = sorted_cuts(pairs, n_groups, n_ranges);
    let half = want.len();
    // Every pair lands in the range the sort gives it (a settled cut may carry the smallest
    // key of its bucket instead of the pair's own key: same ranges).
    for g in 0..n_groups {
        let mut members: Vec<(u32, u32)> =
            pairs.iter().filter(|p| p.0 == g).map(|p| (p.1, p.2)).collect();
        members.sort();
        for (j, &(key, row)) in members.iter().enumerate() {
            let base = g * (n_ranges - 1);
            let got = (0..n_ranges - 1)
                .filter(|&c| (key, row) >= (table[base + c], table[half + base + c]))
                .count();
            let want_r = crate::binning::adaptive_range_of(j, members.len(), n_ranges);
            assert_eq!(got, want_r, "group {g} position {j} of {}", members.len());
        }
    }
    n_ties
}

#[test]
fn selection_finds_the_cuts_of_a_stable_sort() {
    let mut rng = SplitMix64(7);
    // Spread keys, keys from a few values (long tie runs), and keys sharing their top digits.
    for (n_rows, n_groups, n_ranges, values) in
        [(1_000, 3, 15, u32::MAX), (5_000, 2, 7, 5), (3_000, 4, 10, 300), (200, 1, 50, 2)]
    {
        let pairs: Vec<(usize, u32, u32)> = (0..n_rows)
            .flat_map(|row| {
                let k = if values == 300 { 0x3F80_0000 + (rng.next_u64() % 300) as u32 } else { 0 };
                let key = if values == u32::MAX {
                    rng.next_u64() as u32
                } else if values == 300 {
                    k
                } else {
                    0x4000_0000 + (rng.next_u64() % values as u64) as u32 * 0x1000
                };
                (0..n_groups).map(move |g| (g, key.rotate_left(g as u32 * 3), row as u32))
            })
            .collect();
        let n_ties = check(&pairs, n_groups, n_ranges, n_rows);
        // Few distinct keys put cuts inside runs (the tie search runs); spread ones do not.
        assert_eq!(n_ties > 0, values <= 300, "{values} values: {n_ties} ties");
    }
}

#[test]
fn selection_handles_small_and_empty_groups() {
    // Group 0 empty, group 1 with fewer pairs than ranges, group 2 all equal.
    let mut pairs = vec![(1, 5, 0), (1, 3, 4)];
    pairs.extend((0..40).map(|row| (2, 77, row)));
    assert!(check(&pairs, 3, 15, 40) > 0);
    assert_eq!(check(&pairs, 3, 1, 40), 0);
}
