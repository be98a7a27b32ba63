//! Exact, deterministic bin sums for the kernels: counts and hits are integers, and every score
//! is added as the fixed-point integer `round_down(s * 2^31)` into a 64-bit sum kept as two u32
//! words (`lo` with its carry into `hi`). Integer addition commutes, so the order in which
//! threads and workgroups add up does not change a bit of the result, and no float atomics
//! (an optional feature of Vulkan devices) are needed.

use cubecl::prelude::*;

/// Most bins a class-wise request keeps in registers.
pub(crate) const MAX_CLASS_BINS: usize = 256;

/// u32 words per bin: count, hits, score sum low and high words.
pub(crate) const WORDS: usize = 4;
/// Fixed-point scale of the score sums.
pub(crate) const SCALE: f64 = 2_147_483_648.0;

/// The fixed-point value of a score in `[0, 1]`.
#[cube]
pub(crate) fn fixed(s: f32) -> u32 {
    u32::cast_from(s * 2_147_483_648.0f32)
}

/// Adds a bin's count, hits and fixed-point score sum `(lo, hi)` to the global accumulator.
#[cube]
pub(crate) fn add_bin(
    bins: &mut Tensor<Atomic<u32>>,
    key: usize,
    count: u32,
    hits: u32,
    lo: u32,
    hi: u32,
) {
    let at = key * 4;
    bins[at].fetch_add(count);
    if hits > 0 {
        bins[at + 1].fetch_add(hits);
    }
    let before = bins[at + 2].fetch_add(lo);
    let mut high = hi;
    if before > 0xFFFF_FFFFu32 - lo {
        high += 1;
    }
    if high > 0 {
        bins[at + 3].fetch_add(high);
    }
}

/// A thread's bins in registers: count, hits and the fixed-point score sum `(lo, hi)` of
/// each, flushed to the global accumulator once at the end (the class-wise kernels).
#[derive(CubeType)]
pub(crate) struct RegisterBins {
    count: Array<u32>,
    hits: Array<u32>,
    lo: Array<u32>,
    hi: Array<u32>,
}

#[cube]
impl RegisterBins {
    /// `n_bins` empty bins.
    pub fn new(#[comptime] n_bins: u32) -> RegisterBins {
        let nb = n_bins as usize;
        let mut bins = RegisterBins {
            count: Array::<u32>::new(nb),
            hits: Array::<u32>::new(nb),
            lo: Array::<u32>::new(nb),
            hi: Array::<u32>::new(nb),
        };
        for b in 0..nb {
            bins.count[b] = 0;
            bins.hits[b] = 0;
            bins.lo[b] = 0;
            bins.hi[b] = 0;
        }
        bins
    }

    /// Adds score `p` with outcome `hit` to bin `b`.
    pub fn add(&mut self, b: usize, p: f32, hit: bool) {
        self.count[b] += 1;
        if hit {
            self.hits[b] += 1;
        }
        let before = self.lo[b];
        self.lo[b] = before + fixed(p);
        if self.lo[b] < before {
            self.hi[b] += 1;
        }
    }

    /// Adds the non-empty bins to `bins` from key `first`.
    pub fn flush(&self, bins: &mut Tensor<Atomic<u32>>, first: usize, #[comptime] n_bins: u32) {
        for b in 0..n_bins as usize {
            if self.count[b] > 0 {
                add_bin(bins, first + b, self.count[b], self.hits[b], self.lo[b], self.hi[b]);
            }
        }
    }
}
