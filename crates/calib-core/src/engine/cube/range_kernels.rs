//! The kernels of the device's adaptive ranges ([`super::ranges`]): histograms of the
//! scores' order keys for the radix selection of each group's cuts, counts of tied keys by
//! block of rows, and the range sums.
//!
//! A *pair* is a class-wise score `p[i, c]` (group `c`, hit when `y_i = c`) or a row's
//! top-label score (group 0, or the predicted class when grouped), kept when it is above the
//! threshold. Its order key is the f32's bits made order-preserving (the order of
//! `total_cmp`), so keys compare as the scores do and equal keys are equal scores. A cut is
//! the pair `(key, row)` at a range's first sorted position; a pair is at or above it when
//! its key is larger, or equal with a row at or after the cut's (ties in row order, as a
//! stable sort puts them).

use cubecl::prelude::*;

use super::fixed_bins::{RegisterBins, add_bin, fixed};
use super::kernels::{CONF, HIT, MAX, SUM, flat_index};

/// A table entry not in use (no prefix or key the kernels compare with is this large).
pub(crate) const UNUSED: u32 = 0xFFFF_FFFF;

/// The order-preserving key of `s`: the sign bit flipped for positive values, every bit for
/// negative ones (so `-0.0 < +0.0`, as `total_cmp` orders them).
#[cube]
pub(crate) fn order_key(s: f32) -> u32 {
    let bits = u32::reinterpret(s);
    let mut key = bits | 0x8000_0000u32;
    if bits >= 0x8000_0000u32 {
        key = 0xFFFF_FFFFu32 - bits;
    }
    key
}

/// Number of pairs in `n_rows` rows: every (row, class) class-wise, every row top-label.
#[cube]
pub(crate) fn n_items(n_rows: u32, n_classes: u32, #[comptime] classes: bool) -> u32 {
    let mut items = n_rows;
    if classes {
        items = n_rows * n_classes;
    }
    items
}

/// Row `i` and class `c` of flat item `t` (class-wise: `t = i K + c`; top-label: `t = i`).
#[cube]
pub(crate) fn item_row(t: u32, n_classes: u32, #[comptime] classes: bool) -> u32 {
    let mut i = t;
    if classes {
        i = t / n_classes;
    }
    i
}

#[cube]
pub(crate) fn item_class(t: u32, n_classes: u32, #[comptime] classes: bool) -> u32 {
    let mut c = 0u32;
    if classes {
        c = t % n_classes;
    }
    c
}

/// The score of row `i`'s pair for class `c` (class-wise) or its top-label score; the same
/// expression as the static-bin kernels, so a pair's score is the same in every pass.
#[cube]
fn pair_score(
    values: &Tensor<f32>,
    rows: &Tensor<f32>,
    n: usize,
    k: usize,
    i: usize,
    c: usize,
    #[comptime] classes: bool,
    #[comptime] logits: bool,
) -> f32 {
    if classes {
        let z = values[i * k + c];
        if logits { f32::exp(z - rows[MAX * n + i]) / rows[SUM * n + i] } else { z }
    } else {
        rows[CONF * n + i]
    }
}

/// The group of a pair: its class (class-wise), the predicted class (top-label, grouped) or 0.
#[cube]
fn pair_group(
    pred: &Tensor<i32>,
    i: usize,
    c: u32,
    #[comptime] classes: bool,
    #[comptime] grouped: bool,
) -> u32 {
    let mut g = 0u32;
    if classes {
        g = c;
    } else if grouped {
        g = u32::cast_from(pred[i]);
    }
    g
}

/// Number of the group's `n_cuts` cuts (from `base` in `cuts`: keys, then rows in the second
/// half) at or below the pair `(key, row)`: its range. A group's cuts ascend in `(key, row)`
/// (sorted positions), so a binary search counts them.
#[cube]
fn range_of(key: u32, row: u32, cuts: &Tensor<u32>, base: usize, n_cuts: u32) -> u32 {
    let half = cuts.len() / 2;
    let mut lo = 0u32;
    let mut hi = n_cuts;
    while lo < hi {
        let mid = (lo + hi) / 2;
        let at = base + mid as usize;
        let ck = cuts[at];
        if key > ck || (key == ck && row >= cuts[half + at]) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// One thread per pair: adds it to the histogram of its key's digit
/// `(key >> shift) & (buckets - 1)`. The first pass counts every pair in its group's
/// histogram; later ones only pairs whose key's bits above the digit (`key >> above`) equal
/// one of their group's `per_group` prefixes in `table` (ascending, found by binary search;
/// then at `half` the histogram slot each counts into).
#[cube(launch, launch_unchecked)]
pub(crate) fn range_histogram(
    values: &Tensor<f32>,
    rows: &Tensor<f32>,
    pred: &Tensor<i32>,
    table: &Tensor<u32>,
    hist: &mut Tensor<Atomic<u32>>,
    n_rows: u32,
    n_classes: u32,
    threshold: f32,
    shift: u32,
    above: u32,
    buckets: u32,
    per_group: u32,
    half: u32,
    #[comptime] first: bool,
    #[comptime] classes: bool,
    #[comptime] grouped: bool,
    #[comptime] logits: bool,
) {
    let t = flat_index();
    if t >= n_items(n_rows, n_classes, classes) {
        terminate!();
    }
    let (i, c) = (item_row(t, n_classes, classes), item_class(t, n_classes, classes));
    let (n, k) = (n_rows as usize, n_classes as usize);
    let s = pair_score(values, rows, n, k, i as usize, c as usize, classes, logits);
    if s > threshold {
        let key = order_key(s);
        let g = pair_group(pred, i as usize, c, classes, grouped);
        let digit = (key >> shift) & (buckets - 1);
        if first {
            hist[(g * buckets + digit) as usize].fetch_add(1);
        } else {
            // A group's prefixes ascend (padded with UNUSED): a binary search finds the one.
            let prefix = key >> above;
            let base = (g * per_group) as usize;
            let mut lo = 0u32;
            let mut hi = per_group;
            while lo < hi {
                let mid = (lo + hi) / 2;
                if table[base + mid as usize] < prefix {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo < per_group && table[base + lo as usize] == prefix {
                let slot = table[half as usize + base + lo as usize];
                hist[(slot * buckets + digit) as usize].fetch_add(1);
            }
        }
    }
}

/// One thread per query: in the histogram of `width` counts from the query's offset, the
/// bucket holding the pair of the query's rank (0-based), that pair's rank inside the bucket
/// and the bucket's count, written to `out[q]`, `out[m + q]` and `out[2 m + q]` (the bucket is
/// `width` when the histogram is empty). The queries are `m` offsets, then `m` ranks; with
/// `first` a query's rank is a cut number `r`, and the rank located is the range start
/// `floor(r n / n_ranges)` among the histogram's `n` pairs (`crate::binning::range_start`,
/// computed as `r (n / R) + r (n mod R) / R` so that no product passes 32 bits). The host's
/// twin is `super::selection::locate`.
#[cube(launch, launch_unchecked)]
pub(crate) fn range_locate(
    counts: &Tensor<u32>,
    queries: &Tensor<u32>,
    out: &mut Tensor<u32>,
    m: u32,
    width: u32,
    n_ranges: u32,
    #[comptime] first: bool,
) {
    let q = flat_index();
    if q >= m {
        terminate!();
    }
    let offset = queries[q as usize] as usize;
    let mut rank = queries[(m + q) as usize];
    if first {
        let mut n = 0u32;
        for b in 0..width as usize {
            n += counts[offset + b];
        }
        rank = rank * (n / n_ranges) + rank * (n % n_ranges) / n_ranges;
    }
    let mut below = 0u32;
    let mut bucket = width;
    let mut count = 0u32;
    for b in 0..width {
        let c = counts[offset + b as usize];
        if bucket == width {
            if below + c > rank {
                bucket = b;
                count = c;
            } else {
                below += c;
            }
        }
    }
    out[q as usize] = bucket;
    out[(m + q) as usize] = rank - below;
    out[(2 * m + q) as usize] = count;
}

/// One thread per pair: a pair whose key equals one of its group's `per_group` tied cut keys
/// in `table` (keys, then at `half` the ties' ids, then at `2 half` each tie's first row)
/// counts in that tie's block of rows `(row - start) / block`, of `n_blocks`.
#[cube(launch, launch_unchecked)]
pub(crate) fn range_tie_counts(
    values: &Tensor<f32>,
    rows: &Tensor<f32>,
    pred: &Tensor<i32>,
    table: &Tensor<u32>,
    counts: &mut Tensor<Atomic<u32>>,
    n_rows: u32,
    n_classes: u32,
    first_row: u32,
    threshold: f32,
    block: u32,
    n_blocks: u32,
    per_group: u32,
    half: u32,
    #[comptime] classes: bool,
    #[comptime] grouped: bool,
    #[comptime] logits: bool,
) {
    let t = flat_index();
    if t >= n_items(n_rows, n_classes, classes) {
        terminate!();
    }
    let (i, c) = (item_row(t, n_classes, classes), item_class(t, n_classes, classes));
    let (n, k) = (n_rows as usize, n_classes as usize);
    let s = pair_score(values, rows, n, k, i as usize, c as usize, classes, logits);
    if s > threshold {
        let key = order_key(s);
        let g = pair_group(pred, i as usize, c, classes, grouped);
        let row = first_row + i;
        let (base, half) = ((g * per_group) as usize, half as usize);
        for j in 0..per_group as usize {
            let id = table[half + base + j];
            if id != UNUSED && table[base + j] == key {
                let start = table[2 * half + id as usize];
                if row >= start {
                    let b = (row - start) / block;
                    if b < n_blocks {
                        counts[(id * n_blocks + b) as usize].fetch_add(1);
                    }
                }
            }
        }
    }
}

/// One thread per (class, chunk of rows), as the static class-wise kernel: adds each pair to
/// its range (`n_ranges - 1` cuts per class) in registers, then the non-empty ranges to the
/// global accumulator.
#[cube(launch, launch_unchecked)]
pub(crate) fn class_ranges(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    rows: &Tensor<f32>,
    cuts: &Tensor<u32>,
    bins: &mut Tensor<Atomic<u32>>,
    n_rows: u32,
    n_classes: u32,
    chunk: u32,
    first_row: u32,
    threshold: f32,
    #[comptime] logits: bool,
    #[comptime] n_ranges: u32,
) {
    let c = ABSOLUTE_POS_X;
    if c >= n_classes {
        terminate!();
    }
    let mut registers = RegisterBins::new(n_ranges);
    let start = CUBE_POS_Y * chunk;
    let mut end = start + chunk;
    if end > n_rows {
        end = n_rows;
    }
    let (n, k) = (n_rows as usize, n_classes as usize);
    let base = (c * (n_ranges - 1)) as usize;
    for r in start..end {
        let i = r as usize;
        let p = pair_score(values, rows, n, k, i, c as usize, true, logits);
        if p > threshold {
            let b = range_of(order_key(p), first_row + r, cuts, base, n_ranges - 1) as usize;
            registers.add(b, p, u32::cast_from(labels[i]) == c);
        }
    }
    registers.flush(bins, (c * n_ranges) as usize, n_ranges);
}

/// One thread per row: adds its top-label pair to its range (`n_ranges - 1` cuts per group).
#[cube(launch, launch_unchecked)]
pub(crate) fn top_label_ranges(
    rows: &Tensor<f32>,
    pred: &Tensor<i32>,
    cuts: &Tensor<u32>,
    bins: &mut Tensor<Atomic<u32>>,
    n_rows: u32,
    first_row: u32,
    n_ranges: u32,
    threshold: f32,
    #[comptime] grouped: bool,
) {
    let row = flat_index();
    if row >= n_rows {
        terminate!();
    }
    let (n, i) = (n_rows as usize, row as usize);
    let s = rows[CONF * n + i];
    if s > threshold {
        let g = pair_group(pred, i, 0u32, false, grouped);
        let base = (g * (n_ranges - 1)) as usize;
        let r = range_of(order_key(s), first_row + row, cuts, base, n_ranges - 1);
        let mut hit = 0u32;
        if rows[HIT * n + i] > 0.5 {
            hit = 1;
        }
        add_bin(bins, (g * n_ranges + r) as usize, 1, hit, fixed(s), 0);
    }
}
