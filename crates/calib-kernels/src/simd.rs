//! Running a host kernel compiled for the widest vector unit the CPU has, and prefetching
//! the memory it reads next.
//!
//! The crate is built for the baseline target (SSE2 on x86-64); [`dispatch`] runs a closure in
//! a copy compiled with AVX-512 (F, DQ, VL) or else AVX2 when the CPU has it (checked once by
//! `std`). The kernels use no fused multiply-add and no reassociation the compiler could
//! choose differently, so every copy gives the same bits; only the speed differs (the
//! AVX-512 copy: ln and exp over 10^6 values 1.1 and 0.9 ms against 1.6 and 1.2 ms with AVX2,
//! on this project's 2-core Xeon VM).
//!
//! One of the crate's two uses of `unsafe` (with `pool.rs`; the lint is `deny`): calling a
//! `#[target_feature]` function is only sound on a CPU with the feature, which is checked
//! right before the call; a prefetch hint is given the address of a live slice (the hint
//! itself never faults and changes no value).
#![allow(unsafe_code)]

/// Whether [`dispatch`] takes the AVX2 copy on this CPU.
#[inline]
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

/// Runs `kernel`, compiled for AVX-512 or AVX2 where the CPU has it.
///
/// Mark the closure and what it calls `#[inline(always)]` so they are compiled into the
/// vector copies.
///
/// ```
/// use calib_kernels::{dispatch, exp_nonpositive};
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
    if has_avx512() {
        // SAFETY: the CPU supports AVX-512 F/DQ/VL and AVX2 (checked just above).
        return unsafe { with_avx512(kernel) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 (checked just above), which is all `with_avx2` needs.
        return unsafe { with_avx2(kernel) };
    }
    kernel()
}

/// Whether [`dispatch`] takes the AVX-512 copy on this CPU.
#[inline]
fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && has_avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2")]
unsafe fn with_avx512<R>(kernel: impl FnOnce() -> R) -> R {
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
/// use calib_kernels::prefetch;
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

/// Bit `l` set where `chunk[l] > floor` (clear for NaN, as `>`).
///
/// Written with SSE2 compares and move-masks (part of every x86-64 CPU; the AVX2 copy of a
/// [`dispatch`] kernel widens them): left to itself, LLVM built this mask from a mix of scalar
/// and vector compares, ~30 instructions per 8 values, 5% of the metric set at 50,000 x
/// 1,000. A plain loop elsewhere.
///
/// ```
/// use calib_kernels::mask_above;
/// let chunk = [0.5, 0.01, 0.2, f64::NAN, 0.3, 0.0, 0.1, 0.11];
/// assert_eq!(mask_above(&chunk, 0.1), 0b1001_0101);
/// ```
#[inline(always)]
pub fn mask_above(chunk: &[f64; 8], floor: f64) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_cmpgt_pd, _mm_movemask_pd, _mm_set_pd, _mm_set1_pd};
        // SAFETY: SSE2 is part of every x86-64 CPU; the intrinsics take values, no pointers.
        unsafe {
            let f = _mm_set1_pd(floor);
            let mut mask = 0u32;
            for q in 0..4 {
                let v = _mm_set_pd(chunk[2 * q + 1], chunk[2 * q]);
                mask |= (_mm_movemask_pd(_mm_cmpgt_pd(v, f)) as u32) << (2 * q);
            }
            mask
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        chunk.iter().enumerate().fold(0, |m, (l, &v)| m | ((v > floor) as u32) << l)
    }
}

/// Alignment `copy_streaming` needs for its non-temporal stores (bytes).
const STREAM_ALIGN: usize = 16;

/// `dst.copy_from_slice(src)` with non-temporal stores: the values go to memory without first
/// reading the destination's cache lines and without evicting what the cache holds.
///
/// For filling buffers far larger than the cache that are read again only later, in runs
/// that cover whole 64-byte lines (the CPU merges a line's streaming stores into one write),
/// as the class-column build's transposition does: plain stores would first read every
/// destination line and evict the rows still to be read. Needs `dst` aligned to
/// 16 bytes for the fast path; otherwise, for an odd last value, and on targets
/// other than x86-64 it is a plain copy. The stores become visible to other threads after
/// [`stream_fence`] (the writing thread sees them at once).
///
/// ```
/// use calib_kernels::{copy_streaming, stream_fence};
/// let mut dst = vec![0.0; 17];
/// let src: Vec<f64> = (0..17).map(f64::from).collect();
/// copy_streaming(&mut dst, &src);
/// stream_fence();
/// assert_eq!(dst, src);
/// ```
///
/// # Panics
/// When the lengths differ (as `copy_from_slice`).
#[inline(always)]
pub fn copy_streaming(dst: &mut [f64], src: &[f64]) {
    assert_eq!(dst.len(), src.len(), "copy_streaming: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if (dst.as_ptr() as usize).is_multiple_of(STREAM_ALIGN) {
        use std::arch::x86_64::{_mm_loadu_pd, _mm_stream_pd};
        let pairs = dst.len() / 2;
        for q in 0..pairs {
            // SAFETY: `2 q + 1 < len` for both slices (equal lengths, checked above); `dst +
            // 2 q` is 16-byte aligned (`dst` is, checked above, and each step is 16 bytes), as
            // `_mm_stream_pd` requires; `_mm_loadu_pd` takes any alignment. SSE2 is part of
            // every x86-64 CPU.
            unsafe {
                _mm_stream_pd(dst.as_mut_ptr().add(2 * q), _mm_loadu_pd(src.as_ptr().add(2 * q)));
            }
        }
        dst[2 * pairs..].copy_from_slice(&src[2 * pairs..]);
        return;
    }
    dst.copy_from_slice(src);
}

/// Orders every earlier [`copy_streaming`] store before every later store of this thread
/// (`sfence`), so another thread that synchronises with it sees them. A no-op on targets
/// other than x86-64.
#[inline(always)]
pub fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` only orders stores; SSE is part of every x86-64 CPU.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_mask_equals_the_plain_comparison() {
        let special = [0.1, -0.0, 0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-300];
        let mut x = 7u64;
        for _ in 0..10_000 {
            let mut chunk = [0.0; 8];
            for v in &mut chunk {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                *v = match x >> 61 {
                    0 => special[(x >> 20) as usize % special.len()],
                    _ => (x >> 11) as f64 / (1u64 << 53) as f64 * 0.3 - 0.05,
                };
            }
            for floor in [0.1, 0.0, -0.0, -1.0, f64::NAN] {
                let plain =
                    chunk.iter().enumerate().fold(0, |m, (l, &v)| m | ((v > floor) as u32) << l);
                assert_eq!(mask_above(&chunk, floor), plain, "{chunk:?} > {floor}");
            }
        }
    }

    #[test]
    fn streaming_copy_equals_a_plain_copy_at_any_alignment_and_length() {
        let src: Vec<f64> = (0..40).map(|i| i as f64 * 0.5 - 3.0).collect();
        let mut buf = vec![f64::NAN; 48];
        // Offsets 0..4 from a 16-byte-aligned start: both the streaming and the plain path.
        let base = buf.as_ptr().align_offset(16);
        for offset in 0..4 {
            for len in 0..=33 {
                buf.fill(f64::NAN);
                let at = base + offset;
                copy_streaming(&mut buf[at..at + len], &src[..len]);
                stream_fence();
                assert_eq!(&buf[at..at + len], &src[..len], "offset {offset} len {len}");
                assert!(buf[..at].iter().chain(&buf[at + len..]).all(|v| v.is_nan()));
            }
        }
    }
}
