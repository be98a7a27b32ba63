//! The kernels of pool-adjacent-violators on the device ([`super::pav_ops`]), over pairs the
//! segmented sort ([`super::sort_kernels`]) left in score order: 0/1 outcomes without
//! weights, so a block is its first item's position, its positives (its count is where the
//! next block starts) and where its last run starts (the point's score is its run's first, as
//! on the host), and every comparison is exact.
//!
//! PAV pools in any order to the same blocks (the pooled blocks of a concatenation are the
//! pooled blocks of the parts' blocks), so it runs in two levels: one thread per tile of a
//! segment pools the tile's points, then one thread per segment pools the tiles' blocks. A
//! point is a run of tied scores (within `tie` of the run's first, the host's rule on the f32
//! scores): a tile starts at the first item at least `tie` above the one before it, so no run
//! crosses a tile's bounds and each tile's runs are the host's. Blocks are written over the
//! items they pool (a segment's stack never passes the item being read).

use cubecl::prelude::*;

use super::kernels::flat_index;
use super::sort_kernels::{HIT_BIT, tile_start};

/// The score of order key `key` (the inverse of [`super::range_kernels::order_key`]).
#[cube]
pub(crate) fn key_score(key: u32) -> f32 {
    let mut bits = key ^ 0x8000_0000u32;
    if key < 0x8000_0000u32 {
        bits = 0xFFFF_FFFFu32 - key;
    }
    f32::reinterpret(bits)
}

/// The high word of the 64-bit product `a b` (16-bit halves: no u64 on every device).
#[cube]
fn mul_hi(a: u32, b: u32) -> u32 {
    let (a1, a0, b1, b0) = (a >> 16, a & 0xFFFFu32, b >> 16, b & 0xFFFFu32);
    let m1 = a1 * b0 + ((a0 * b0) >> 16);
    let m2 = a0 * b1 + (m1 & 0xFFFFu32);
    a1 * b1 + (m1 >> 16) + (m2 >> 16)
}

/// Whether `a b > c d`, exactly.
#[cube]
fn product_above(a: u32, b: u32, c: u32, d: u32) -> bool {
    let (h1, h2) = (mul_hi(a, b), mul_hi(c, d));
    h1 > h2 || (h1 == h2 && a * b > c * d)
}

/// The first item at or after `p` that begins a run: the segment's start, or an item at least
/// `tie` above the one before it (the run rule then starts a run there); `seg_end` if none.
#[cube]
fn run_start_from(keys: &Tensor<u32>, p: u32, seg_start: u32, seg_end: u32, tie: f32) -> u32 {
    let mut q = p;
    let mut searching = q > seg_start;
    while searching && q < seg_end {
        let gap = key_score(keys[q as usize]) - key_score(keys[(q - 1) as usize]);
        if gap >= tie {
            searching = false;
        } else {
            q += 1;
        }
    }
    q
}

/// Pools the block `[start, end)` with `positives` and its last run from `last` onto the
/// stack of `len` blocks at `base..` (`starts`, `sums`, `lasts`), pooling while the top's mean
/// is above the block's; the stack's new length.
#[cube]
fn push_block(
    starts: &mut Tensor<u32>,
    sums: &mut Tensor<u32>,
    lasts: &mut Tensor<u32>,
    base: u32,
    len: u32,
    start: u32,
    end: u32,
    positives: u32,
    last: u32,
) -> u32 {
    let (mut n, mut at, mut pos) = (len, start, positives);
    let mut pooling = n > 0;
    while pooling {
        let top = (base + n - 1) as usize;
        let (top_start, top_pos) = (starts[top], sums[top]);
        // top_pos / (at - top_start) > pos / (end - at)
        if product_above(top_pos, end - at, pos, at - top_start) {
            pos += top_pos;
            at = top_start;
            n -= 1;
            pooling = n > 0;
        } else {
            pooling = false;
        }
    }
    starts[(base + n) as usize] = at;
    sums[(base + n) as usize] = pos;
    lasts[(base + n) as usize] = last;
    n + 1
}

/// Level one, one thread per tile (of `tile` items; the sort's tile numbering): the pooled
/// blocks of the tile's runs, written from the tile's first run start (`tile_first[j]`) on,
/// their number in `tile_blocks[j]`.
#[cube(launch, launch_unchecked)]
pub(crate) fn pav_tiles(
    keys: &Tensor<u32>,
    payload: &Tensor<u32>,
    starts: &mut Tensor<u32>,
    sums: &mut Tensor<u32>,
    lasts: &mut Tensor<u32>,
    tile_first: &mut Tensor<u32>,
    tile_blocks: &mut Tensor<u32>,
    n_tiles: u32,
    seg_len: u32,
    tiles_per_seg: u32,
    tile: u32,
    tie: f32,
) {
    let j = flat_index();
    if j >= n_tiles {
        terminate!();
    }
    let seg_start = (j / tiles_per_seg) * seg_len;
    let seg_end = seg_start + seg_len;
    let nominal = tile_start(j, seg_len, tiles_per_seg, tile);
    let begin = run_start_from(keys, nominal, seg_start, seg_end, tie);
    let mut end = seg_end;
    if j % tiles_per_seg + 1 < tiles_per_seg {
        end = run_start_from(keys, nominal + tile, seg_start, seg_end, tie);
    }
    let mut len = 0u32;
    let mut t = begin;
    while t < end {
        // One run: the items within `tie` of its first.
        let first = key_score(keys[t as usize]);
        let mut r = t;
        let mut pos = 0u32;
        let mut more = true;
        while more && r < end {
            if key_score(keys[r as usize]) - first < tie {
                pos += payload[r as usize] / HIT_BIT;
                r += 1;
            } else {
                more = false;
            }
        }
        len = push_block(starts, sums, lasts, begin, len, t, r, pos, t);
        t = r;
    }
    tile_first[j as usize] = begin;
    tile_blocks[j as usize] = len;
}

/// Level two, one thread per segment: its tiles' blocks pooled in order, written from the
/// segment's start on, their number in `n_final[s]` and the segment's positives in
/// `n_final[n_segs + s]`.
#[cube(launch, launch_unchecked)]
pub(crate) fn pav_merge(
    starts: &mut Tensor<u32>,
    sums: &mut Tensor<u32>,
    lasts: &mut Tensor<u32>,
    tile_first: &Tensor<u32>,
    tile_blocks: &Tensor<u32>,
    n_final: &mut Tensor<u32>,
    n_segs: u32,
    seg_len: u32,
    tiles_per_seg: u32,
) {
    let s = flat_index();
    if s >= n_segs {
        terminate!();
    }
    let base = s * seg_len;
    let seg_end = base + seg_len;
    let mut len = 0u32;
    let mut hits = 0u32;
    for jj in 0..tiles_per_seg {
        let j = (s * tiles_per_seg + jj) as usize;
        let (first, n_blocks) = (tile_first[j], tile_blocks[j]);
        let mut tile_end = seg_end;
        if jj + 1 < tiles_per_seg {
            tile_end = tile_first[j + 1];
        }
        for b in 0..n_blocks {
            let at = (first + b) as usize;
            let (start, pos, last) = (starts[at], sums[at], lasts[at]);
            let mut end = tile_end;
            if b + 1 < n_blocks {
                end = starts[at + 1];
            }
            hits += pos;
            len = push_block(starts, sums, lasts, base, len, start, end, pos, last);
        }
    }
    n_final[s as usize] = len;
    n_final[(n_segs + s) as usize] = hits;
}

/// The last of the `n` ascending entries of `table` from `base` that is at or below `t` (the
/// first must be): the block holding item `t` among a segment's block starts, the segment of
/// a block among the segments' first blocks, the bin of a place among the bins' places.
#[cube]
pub(crate) fn last_at_or_below(table: &Tensor<u32>, base: u32, n: u32, t: u32) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if table[(base + mid) as usize] <= t {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// One thread per final block `o` (`offsets`: each segment's first, `n_segs + 1` words): the
/// block's count, positives, first key and its last run's first key into
/// `out[stride o..stride o + 4]`; with `offsets_of_means`, a fifth word: the f32 bits of
/// [`mean_offset`] (its mean score less its first).
#[cube(launch, launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn block_gather(
    keys: &Tensor<u32>,
    starts: &Tensor<u32>,
    sums: &Tensor<u32>,
    lasts: &Tensor<u32>,
    offsets: &Tensor<u32>,
    out: &mut Tensor<u32>,
    n_segs: u32,
    seg_len: u32,
    tie: f32,
    #[comptime] offsets_of_means: bool,
) {
    let o = flat_index();
    if o >= offsets[n_segs as usize] {
        terminate!();
    }
    let lo = last_at_or_below(offsets, 0, n_segs, o);
    let b = o - offsets[lo as usize];
    let at = lo * seg_len + b;
    let start = starts[at as usize];
    let mut end = (lo + 1) * seg_len;
    if b + 1 < offsets[(lo + 1) as usize] - offsets[lo as usize] {
        end = starts[(at + 1) as usize];
    }
    let mut stride = 4u32;
    if offsets_of_means {
        stride = 5u32;
    }
    let w = (stride * o) as usize;
    out[w] = end - start;
    out[w + 1] = sums[at as usize];
    out[w + 2] = keys[start as usize];
    out[w + 3] = keys[lasts[at as usize] as usize];
    if offsets_of_means {
        out[w + 4] = u32::reinterpret(mean_offset(keys, start, end, lasts[at as usize], tie));
    }
}

/// The mean over the pairs `[start, end)` of their point's score (its run of tied scores'
/// first, within `tie`, as the host's points) less the block's first score `s_0`, with
/// `span` the last point's less `s_0`: each difference `d` as the whole number
/// `round(2^24 d / span)`, summed exactly in two words (no float sum, whose rounding grows
/// with the block), so the mean is within `2^-25 span` plus f32 rounding of the exact one,
/// and exactly 0 for a block of one point. One thread reads the block's pairs in order.
#[cube]
fn mean_offset(keys: &Tensor<u32>, start: u32, end: u32, last: u32, tie: f32) -> f32 {
    let first = key_score(keys[start as usize]);
    let span = key_score(keys[last as usize]) - first;
    let (mut run, mut lo, mut hi) = (first, 0u32, 0u32);
    let mut offset = 0.0f32;
    if span > 0.0f32 {
        for t in start..end {
            let score = key_score(keys[t as usize]);
            if score - run >= tie {
                run = score;
            }
            let step = u32::cast_from((run - first) / span * 16_777_216.0f32 + 0.5f32);
            lo += step;
            if lo < step {
                hi += 1u32;
            }
        }
        let total = f32::cast_from(hi) * 4_294_967_296.0f32 + f32::cast_from(lo);
        offset = total / f32::cast_from(end - start) / 16_777_216.0f32 * span;
    }
    offset
}

/// The mean of block `b` of the segment's `n` from `base` (its count: to the next block's
/// start, or the segment's end at `seg_end`).
#[cube]
fn block_mean(
    starts: &Tensor<u32>,
    sums: &Tensor<u32>,
    base: u32,
    n: u32,
    b: u32,
    seg_end: u32,
) -> f32 {
    let start = starts[(base + b) as usize];
    let mut end = seg_end;
    if b + 1 < n {
        end = starts[(base + b + 1) as usize];
    }
    f32::cast_from(sums[(base + b) as usize]) / f32::cast_from(end - start)
}

/// One thread per sorted pair: the fitted map at its score (its block's mean up to the
/// block's last point; past it, in a run of tied scores, the line to the next block's first
/// point, as the map interpolates; its own score where the segment has one outcome only,
/// which keeps the identity map) at its row's place in `out` (`[N, n_segs]` class-wise, `[N]`
/// binary).
#[cube(launch, launch_unchecked)]
pub(crate) fn block_spread(
    keys: &Tensor<u32>,
    payload: &Tensor<u32>,
    starts: &Tensor<u32>,
    sums: &Tensor<u32>,
    lasts: &Tensor<u32>,
    n_final: &Tensor<u32>,
    out: &mut Tensor<f32>,
    n_segs: u32,
    seg_len: u32,
) {
    let t = flat_index();
    if t >= n_segs * seg_len {
        terminate!();
    }
    let s = t / seg_len;
    let base = s * seg_len;
    let n = n_final[s as usize];
    let b = last_at_or_below(starts, base, n, t);
    let score = key_score(keys[t as usize]);
    let mut value = block_mean(starts, sums, base, n, b, base + seg_len);
    let x0 = key_score(keys[lasts[(base + b) as usize] as usize]);
    if score > x0 && b + 1 < n {
        let x1 = key_score(keys[starts[(base + b + 1) as usize] as usize]);
        let v1 = block_mean(starts, sums, base, n, b + 1, base + seg_len);
        value += (v1 - value) * ((score - x0) / (x1 - x0));
    }
    write_fitted(payload, out, t, s, n_segs, seg_len, n_final[(n_segs + s) as usize], value, score);
}

/// Writes sorted pair `t`'s fitted `value` (segment `s` of `n_segs`, `hits` positives among
/// its `seg_len` pairs) at its row's place in `out`: its `score` instead where the segment has
/// one outcome only, which keeps the identity map.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_fitted(
    payload: &Tensor<u32>,
    out: &mut Tensor<f32>,
    t: u32,
    s: u32,
    n_segs: u32,
    seg_len: u32,
    hits: u32,
    value: f32,
    score: f32,
) {
    let mut fitted = value;
    if hits == 0 || hits == seg_len {
        fitted = score;
    }
    let row = payload[t as usize] % HIT_BIT;
    out[(row * n_segs + s) as usize] = fitted;
}
