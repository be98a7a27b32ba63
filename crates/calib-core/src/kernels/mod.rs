//! Host kernels of the fused CPU engines: a vectorisable `exp`, per-row reductions, Gaussian
//! kernel sums by box moments, and running them compiled for AVX2 where the CPU has it.
//!
//! Not part of calib's API (hidden from its documentation, free to change): the hot loops of
//! [`Engine::Fused`](crate::Engine::Fused) and of calib-train's host fits, public only so
//! that calib-train can share them. They are deterministic: the same input gives the same bits on every
//! run, thread count and CPU.

mod exp;
mod gauss_boxes;
mod log;
mod row;
mod simd;

pub use exp::exp_nonpositive;
pub use gauss_boxes::GaussBoxes;
pub use log::ln_1p_unit;
pub use row::{
    LANES, Score, exp_shifted, for_each_above, lane_dot, lane_sum, max_and_argmax,
    scale_and_square_sum, tempered_moments,
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
    let mut rng = crate::synthetic::SplitMix64(0);
    (0..2_000_000u64)
        .map(|i| {
            let x = point(rng.uniform(), i);
            ulps(fast(x), reference(x))
        })
        .max()
        .unwrap_or(0)
}
