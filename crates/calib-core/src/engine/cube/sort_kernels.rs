//! The kernels of the device's segmented radix sort ([`super::sort_ops`]): the pairs of a
//! binary problem set as `(key, payload)` words, per-tile digit counts, an exclusive scan and
//! the stable scatter.
//!
//! The items are `n_segs` segments of `seg_len` items each, laid out one after the other
//! (class `c`'s pairs at `c seg_len..(c + 1) seg_len`). A *tile* is `tile` consecutive items of
//! one segment, taken by one thread in order, which is what makes the scatter stable: the
//! counts are laid out `[segment][digit][tile of the segment]`, so their exclusive scan is
//! every item's place with the segments kept apart, the digits in order inside each, and the
//! tiles (and each tile's items) in their order inside each digit.

use cubecl::prelude::*;

use super::kernels::{MAX, SUM, flat_index};
use super::range_kernels::{n_items, order_key};

/// Bits of one digit pass.
pub(crate) const DIGIT_BITS: u32 = 8;
/// Digits of one pass (`2^DIGIT_BITS`).
pub(crate) const RADIX: u32 = 256;
/// The payload bit that marks a positive outcome (the row is in the bits below it).
pub(crate) const HIT_BIT: u32 = 0x8000_0000;

/// The first item of tile `j` (tile `j % tiles_per_seg` of segment `j / tiles_per_seg`).
#[cube]
pub(crate) fn tile_start(j: u32, seg_len: u32, tiles_per_seg: u32, tile: u32) -> u32 {
    (j / tiles_per_seg) * seg_len + (j % tiles_per_seg) * tile
}

/// The end of tile `j`'s items: `tile` past its start, or its segment's end.
#[cube]
pub(crate) fn tile_end(j: u32, seg_len: u32, tiles_per_seg: u32, tile: u32) -> u32 {
    let seg_end = (j / tiles_per_seg + 1) * seg_len;
    let mut end = tile_start(j, seg_len, tiles_per_seg, tile) + tile;
    if end > seg_end {
        end = seg_end;
    }
    end
}

/// Where tile `j`'s counts start in the `[segment][digit][tile]` layout (digit 0's word; digit
/// `d`'s is `d tiles_per_seg` further on).
#[cube]
pub(crate) fn tile_column(j: u32, tiles_per_seg: u32) -> u32 {
    (j / tiles_per_seg) * RADIX * tiles_per_seg + j % tiles_per_seg
}

/// The count word of `key`'s digit at `shift` in the column of a tile (from [`tile_column`]).
#[cube]
fn digit_slot(key: u32, shift: u32, column: u32, tiles_per_seg: u32) -> usize {
    (column + ((key >> shift) & (RADIX - 1)) * tiles_per_seg) as usize
}

/// The end of piece `j` of `piece` words among `n`.
#[cube]
fn piece_end(j: u32, piece: u32, n: u32) -> u32 {
    let mut end = (j + 1) * piece;
    if end > n {
        end = n;
    }
    end
}

/// One thread per pair: class-wise (`classes`), item `t = c N + i` is row `i`'s probability
/// of class `c` (the row pass's softmax for logits, the same expression as the bins'), with
/// the hit `y_i = c`; binary, item `i` is row `i`'s score with the hit `y_i = 1`. Writes the
/// score's order key and the payload `i | HIT_BIT` (hit) or `i`.
#[cube(launch, launch_unchecked)]
pub(crate) fn class_pairs(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    rows: &Tensor<f32>,
    keys: &mut Tensor<u32>,
    payload: &mut Tensor<u32>,
    n_rows: u32,
    n_classes: u32,
    #[comptime] classes: bool,
    #[comptime] logits: bool,
) {
    let t = flat_index();
    if t >= n_items(n_rows, n_classes, classes) {
        terminate!();
    }
    let (n, k) = (n_rows as usize, n_classes as usize);
    let mut i = t;
    let mut c = 1u32;
    if classes {
        i = t % n_rows;
        c = t / n_rows;
    }
    let iu = i as usize;
    let mut s = values[iu];
    if classes {
        let z = values[iu * k + c as usize];
        s = z;
        if logits {
            s = f32::exp(z - rows[MAX * n + iu]) / rows[SUM * n + iu];
        }
    }
    let mut word = i;
    if labels[iu] == c as i32 {
        word = i | HIT_BIT;
    }
    keys[t as usize] = order_key(s);
    payload[t as usize] = word;
}

/// One thread per tile: counts its items' digits `(key >> shift) % RADIX` into its column of
/// `counts` (`[segment][digit][tile]`, zeroed before).
#[cube(launch, launch_unchecked)]
pub(crate) fn digit_counts(
    keys: &Tensor<u32>,
    counts: &mut Tensor<u32>,
    n_tiles: u32,
    seg_len: u32,
    tiles_per_seg: u32,
    tile: u32,
    shift: u32,
) {
    let j = flat_index();
    if j >= n_tiles {
        terminate!();
    }
    let start = tile_start(j, seg_len, tiles_per_seg, tile);
    let end = tile_end(j, seg_len, tiles_per_seg, tile);
    let column = tile_column(j, tiles_per_seg);
    for t in start..end {
        counts[digit_slot(keys[t as usize], shift, column, tiles_per_seg)] += 1;
    }
}

/// One thread per piece of `piece` words of `words`: the piece's sum into `sums`.
#[cube(launch, launch_unchecked)]
pub(crate) fn piece_sums(words: &Tensor<u32>, sums: &mut Tensor<u32>, n: u32, piece: u32) {
    let j = flat_index();
    let start = j * piece;
    if start >= n {
        terminate!();
    }
    let end = piece_end(j, piece, n);
    let mut sum = 0u32;
    for t in start..end {
        sum += words[t as usize];
    }
    sums[j as usize] = sum;
}

/// One thread: the exclusive scan of `sums` (`n` words) in place.
#[cube(launch, launch_unchecked)]
pub(crate) fn scan_sums(sums: &mut Tensor<u32>, n: u32) {
    if flat_index() > 0 {
        terminate!();
    }
    let mut running = 0u32;
    for t in 0..n {
        let v = sums[t as usize];
        sums[t as usize] = running;
        running += v;
    }
}

/// One thread per piece: the exclusive scan of `words` in place, from the piece's offset in
/// `sums` (scanned).
#[cube(launch, launch_unchecked)]
pub(crate) fn scan_pieces(words: &mut Tensor<u32>, sums: &Tensor<u32>, n: u32, piece: u32) {
    let j = flat_index();
    let start = j * piece;
    if start >= n {
        terminate!();
    }
    let end = piece_end(j, piece, n);
    let mut running = sums[j as usize];
    for t in start..end {
        let v = words[t as usize];
        words[t as usize] = running;
        running += v;
    }
}

/// One thread per tile: moves its items, in order, to their places (`offsets`, the scanned
/// counts, advanced as it goes): the stable scatter of one digit pass.
#[cube(launch, launch_unchecked)]
pub(crate) fn digit_scatter(
    keys: &Tensor<u32>,
    payload: &Tensor<u32>,
    offsets: &mut Tensor<u32>,
    out_keys: &mut Tensor<u32>,
    out_payload: &mut Tensor<u32>,
    n_tiles: u32,
    seg_len: u32,
    tiles_per_seg: u32,
    tile: u32,
    shift: u32,
) {
    let j = flat_index();
    if j >= n_tiles {
        terminate!();
    }
    let start = tile_start(j, seg_len, tiles_per_seg, tile);
    let end = tile_end(j, seg_len, tiles_per_seg, tile);
    let column = tile_column(j, tiles_per_seg);
    for t in start..end {
        let key = keys[t as usize];
        let at = digit_slot(key, shift, column, tiles_per_seg);
        let to = offsets[at];
        offsets[at] = to + 1;
        out_keys[to as usize] = key;
        out_payload[to as usize] = payload[t as usize];
    }
}
