//! Host kernels of the fused CPU engines: a vectorisable `exp`, per-row reductions, and
//! running them compiled for AVX2 where the CPU has it.
//!
//! Not part of calib's API (hidden from its documentation, free to change): the hot loops of
//! [`Engine::Fused`](crate::Engine::Fused) and of calib-train's host fits, public only so
//! that calib-train can share them. They are deterministic: the same input gives the same bits on every
//! run, thread count and CPU.

mod exp;
mod log;
mod row;
mod simd;

pub use exp::exp_nonpositive;
pub use log::ln_1p_unit;
pub use row::{
    LANES, Score, exp_shifted, for_each_above, lane_dot, lane_sum, max_and_argmax,
    scale_and_square_sum, tempered_moments,
};
pub use simd::{copy_streaming, dispatch, has_avx2, mask_above, prefetch, stream_fence};
