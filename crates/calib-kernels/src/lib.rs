//! calib's host kernels: a vectorisable `exp`, per-row reductions, a radix sort by `f64` keys, Gaussian kernel sums by box
//! moments, running them compiled for AVX2 where the CPU has it, and sharing independent
//! pieces of work out over the cores ([`in_order`]).
//!
//! The hot loops of calib-core's fused CPU engine and of calib-train's host fits, in the crate
//! both depend on. They are deterministic: the same input gives the same bits on every run,
//! thread count and CPU; each states its accuracy against the standard library.

mod exp;
mod gauss_boxes;
mod log;
mod order_key;
mod parallel;
mod pool;
mod radix_sort;
mod row;
mod simd;
pub mod trace;

pub use exp::exp_nonpositive;
pub use gauss_boxes::GaussBoxes;
pub use log::{ln_1p_unit, ln_positive};
pub use order_key::{from_order_key, order_key};
pub use parallel::{for_row_blocks, in_order, set_threads, threads};
pub use radix_sort::sort_by_f64_key;
pub use row::{
    LANES, Score, exp_shifted, for_each_above, lane_dot, lane_sum, max_and_argmax,
    scale_and_square_sum, split_sums_at, tempered_moments,
};
pub use simd::{copy_streaming, dispatch, has_avx2, mask_above, prefetch, stream_fence};

/// Distance in units in the last place.
#[cfg(test)]
fn ulps(a: f64, b: f64) -> u64 {
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
}

/// The largest [`ulps`] between `fast` and `reference` at 2,000,000 seeded points
/// `point(u, i)`, `u` uniform on `[0, 1)`: the kernels' accuracy tests.
#[cfg(test)]
fn worst_ulps(
    point: impl Fn(f64, u64) -> f64,
    fast: impl Fn(f64) -> f64,
    reference: impl Fn(f64) -> f64,
) -> u64 {
    let mut rng = test_rng::SplitMix64(0);
    (0..2_000_000u64)
        .map(|i| {
            let x = point(rng.uniform(), i);
            ulps(fast(x), reference(x))
        })
        .max()
        .unwrap_or(0)
}

/// The seeded generator of the accuracy tests (calib-core's `synthetic::SplitMix64`).
#[cfg(test)]
mod test_rng {
    /// SplitMix64.
    pub struct SplitMix64(pub u64);

    impl SplitMix64 {
        /// Uniform in `[0, 1)`.
        pub fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
    }
}
