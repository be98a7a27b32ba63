//! Running a host kernel compiled for the widest vector unit the CPU has, and prefetching
//! the memory it reads next.
//!
//! The crate is built for the baseline target (SSE2 on x86-64); [`dispatch`] runs a closure in
//! a copy compiled with AVX2 when the CPU has it (checked once by `std`). The kernels use no
//! fused multiply-add and no reassociation the compiler could choose differently, so both
//! copies give the same bits; only the speed differs.
//!
//! This is the workspace's one use of `unsafe` (the lint is `deny` everywhere else): calling a
//! `#[target_feature]` function is only sound on a CPU with the feature, which is checked
//! right before the call; a prefetch hint is given the address of a live slice (the hint
//! itself never faults and changes no value).
#![allow(unsafe_code)]

/// Whether [`dispatch`] takes the AVX2 copy on this CPU.
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `kernel`, compiled for AVX2 where the CPU has it.
///
/// Mark the closure and what it calls `#[inline(always)]` so they are compiled into the
/// AVX2 copy.
///
/// ```
/// use calib_core::kernels::{dispatch, exp_nonpositive};
/// let x: Vec<f64> = (0..100).map(|i| -0.1 * i as f64).collect();
/// let total = dispatch(
///     #[inline(always)]
///     || x.iter().map(|&v| exp_nonpositive(v)).sum::<f64>(),
/// );
/// assert!((total - x.iter().map(|v| v.exp()).sum::<f64>()).abs() < 1e-12);
/// ```
#[inline(always)]
pub fn dispatch<R>(kernel: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 (checked just above), which is all `with_avx2` needs.
        return unsafe { with_avx2(kernel) };
    }
    kernel()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn with_avx2<R>(kernel: impl FnOnce() -> R) -> R {
    kernel()
}

/// Cache line size assumed by [`prefetch`] (bytes).
const CACHE_LINE: usize = 64;

/// Hints the CPU to bring every cache line of `data` into the L1 cache; it returns at once and
/// changes no value.
///
/// For reads the hardware prefetcher cannot foresee: it stops at 4 KiB page boundaries, so a
/// loop over a few hundred bytes from each row of a row-major matrix (a group of class
/// columns) waits on memory at every row. Measured on the class-column build at
/// 50,000 x 1,000: prefetching the slice 8 rows ahead halved its cost per entry.
/// A no-op on targets other than x86-64.
///
/// ```
/// use calib_core::kernels::prefetch;
/// let rows = vec![0.5f32; 4096];
/// prefetch(&rows[1024..1152]);
/// ```
#[inline(always)]
pub fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let bytes = std::mem::size_of_val(data);
        let start = data.as_ptr() as *const i8;
        for offset in (0..bytes).step_by(CACHE_LINE) {
            // SAFETY: `offset < size_of_val(data)`, so the address lies inside the slice; a
            // prefetch reads nothing the program sees and cannot fault.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}
