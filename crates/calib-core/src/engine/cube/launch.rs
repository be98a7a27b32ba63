//! How calib's kernels are launched: unchecked by default, as burn launches its own, or with
//! CubeCL's bounds checks on every index and loop ([`set_checked_kernels`]), a debugging aid.
//!
//! Checked launches clamp each read and drop each write outside its buffer and bound every
//! loop; the kernels never rely on that. Each guards its own indices: threads past the last
//! row or item return before any access (`row < n` and alike), rows are read at `i * K + j`
//! with `j < K`, labels are in `[0, K)` (checked when the predictions are made), bins and
//! ranges are indexed by values the kernel has clamped to their count, and every loop runs to
//! a bound passed at launch. The lavapipe parity tests run both ways (`tests.rs`).

use std::sync::atomic::{AtomicU8, Ordering};

/// 0: not yet read from the environment; 1: unchecked; 2: checked.
static MODE: AtomicU8 = AtomicU8::new(0);

/// Whether kernels are launched with CubeCL's bounds checks: [`set_checked_kernels`], else
/// the environment variable `CALIB_CHECKED_KERNELS` (`1` or `true`), read once, else no.
pub fn checked_kernels() -> bool {
    let mut mode = MODE.load(Ordering::Relaxed);
    if mode == 0 {
        let env = std::env::var("CALIB_CHECKED_KERNELS")
            .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
        // A setting made meanwhile wins over the environment.
        let from_env = if env { 2 } else { 1 };
        mode = MODE
            .compare_exchange(0, from_env, Ordering::Relaxed, Ordering::Relaxed)
            .map_or_else(|set| set, |_| from_env);
    }
    mode == 2
}

/// Launches calib's kernels with CubeCL's bounds checks (`true`: each index clamped, each
/// loop bounded, several times slower on a GPU) or without (`false`, the default), from now
/// on and in every thread.
pub fn set_checked_kernels(checked: bool) {
    MODE.store(if checked { 2 } else { 1 }, Ordering::Relaxed);
}

/// `kernel::launch(args)` when [`checked_kernels`], else `kernel::launch_unchecked(args)`; the
/// kernel is declared `#[cube(launch, launch_unchecked)]`.
macro_rules! launch {
    ($($kernel:ident)::+ ($($arg:expr),* $(,)?)) => {{
        if $crate::engine::cube::launch::checked_kernels() {
            $($kernel)::+::launch($($arg),*)
        } else {
            // SAFETY: every calib kernel keeps its indices inside its buffers and its loops
            // bounded by its own guards, the module's doc says how; the parity tests run the
            // kernels checked and unchecked alike.
            #[allow(unsafe_code)]
            unsafe {
                $($kernel)::+::launch_unchecked($($arg),*)
            };
        }
    }};
}
pub(crate) use launch;
