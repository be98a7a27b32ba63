//! The kernels of histogram binning on the device ([`super::bin_ops`]), over pairs the
//! segmented sort ([`super::sort_kernels`]) left in score order: the pairs' hits as words
//! (for their running count), the scores at given places, each bin's place in its segment
//! with the positives before it, and each pair's bin value at its row.

use cubecl::prelude::*;

use super::kernels::flat_index;
use super::pav_kernels::{key_score, last_at_or_below, write_fitted};
use super::sort_kernels::HIT_BIT;

/// One thread per pair (and one past the last, which writes 0): its hit as a word, so that
/// the exclusive scan of `hits` (`n + 1` words) counts the positives before each pair.
#[cube(launch, launch_unchecked)]
pub(crate) fn hit_words(payload: &Tensor<u32>, hits: &mut Tensor<u32>, n: u32) {
    let t = flat_index();
    if t > n {
        terminate!();
    }
    let mut hit = 0u32;
    if t < n {
        hit = payload[t as usize] / HIT_BIT;
    }
    hits[t as usize] = hit;
}

/// One thread per query: the order key at sorted place `at[q]`.
#[cube(launch, launch_unchecked)]
pub(crate) fn key_gather(keys: &Tensor<u32>, at: &Tensor<u32>, out: &mut Tensor<u32>, m: u32) {
    let q = flat_index();
    if q >= m {
        terminate!();
    }
    out[q as usize] = keys[at[q as usize] as usize];
}

/// One thread per segment `s` and edge `j` of `n_edges` (`edge_keys[s n_edges + j]`, the
/// order key of the largest f32 at or below the edge): the number of the segment's pairs at
/// or below the edge (0 for the first edge, the segment's length for the last), into
/// `out[s n_edges + j]`, and the positives among them (`prefix`, the scanned hits) into
/// `out[n_segs n_edges + s n_edges + j]`.
#[cube(launch, launch_unchecked)]
pub(crate) fn bin_places(
    keys: &Tensor<u32>,
    prefix: &Tensor<u32>,
    edge_keys: &Tensor<u32>,
    out: &mut Tensor<u32>,
    n_segs: u32,
    seg_len: u32,
    n_edges: u32,
) {
    let q = flat_index();
    if q >= n_segs * n_edges {
        terminate!();
    }
    let (s, j) = (q / n_edges, q % n_edges);
    let base = s * seg_len;
    let mut place = seg_len;
    if j == 0 {
        place = 0;
    } else if j + 1 < n_edges {
        // The first pair above the edge.
        let edge = edge_keys[q as usize];
        let (mut lo, mut hi) = (0u32, seg_len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if keys[(base + mid) as usize] <= edge {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        place = lo;
    }
    out[q as usize] = place;
    out[(n_segs * n_edges + q) as usize] = prefix[(base + place) as usize] - prefix[base as usize];
}

/// One thread per sorted pair: its bin's mean outcome (its own score where the segment has
/// one outcome only, which keeps the identity map) at its row's place in `out` (`[N, n_segs]`
/// class-wise, `[N]` binary), from `places` (`bin_places`' output).
#[cube(launch, launch_unchecked)]
pub(crate) fn bin_spread(
    keys: &Tensor<u32>,
    payload: &Tensor<u32>,
    places: &Tensor<u32>,
    out: &mut Tensor<f32>,
    n_segs: u32,
    seg_len: u32,
    n_edges: u32,
) {
    let t = flat_index();
    if t >= n_segs * seg_len {
        terminate!();
    }
    let s = t / seg_len;
    let local = t - s * seg_len;
    let row0 = s * n_edges;
    let sums = n_segs * n_edges + row0;
    // The last bin whose start is at or before the pair (an empty bin starts where the next
    // one does, so the pair's own bin is the last).
    let lo = last_at_or_below(places, row0, n_edges - 1, local);
    let count = places[(row0 + lo + 1) as usize] - places[(row0 + lo) as usize];
    let hits = places[(sums + lo + 1) as usize] - places[(sums + lo) as usize];
    let value = f32::cast_from(hits) / f32::cast_from(count);
    let total = places[(sums + n_edges - 1) as usize];
    let score = key_score(keys[t as usize]);
    write_fitted(payload, out, t, s, n_segs, seg_len, total, value, score);
}
