//! `exp` for non-positive arguments, written so the compiler can vectorise it.
//!
//! Every softmax the host engines compute is `exp(z - max z)` with a non-positive argument;
//! the C library's `exp` is a call per element that no loop can vectorise, and `exp` is the
//! largest single cost of the fused metric pass and the temperature solver.
//!
//! Method (Cody & Waite reduction, as in fdlibm): `x = n ln 2 + r` with `n = round(x / ln 2)`
//! and `|r| <= ln 2 / 2`, `ln 2` split in a high part with trailing zeros and a low part so
//! `n ln2_hi` is exact; `exp(r)` by a near-minimax polynomial of degree 11 (relative error 1.6e-17,
//! `COEFFS`: two degrees fewer than Taylor for the same accuracy), evaluated by Estrin's
//! scheme (shorter dependency chains than Horner's); the result scaled by `2^n` built from the bits.
//! Plain multiplications and additions only (no fused multiply-add), so the result is the same
//! bit for bit whatever vector width or CPU runs it.

/// `1 / ln 2`.
const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// High part of `ln 2` (fdlibm's `ln2HI`): its low 32 bits are zero, so `n * LN2_HI` is exact.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
/// `ln 2 - LN2_HI` (fdlibm's `ln2LO`).
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// `1.5 * 2^52`: adding it rounds to an integer held in the low mantissa bits.
const SHIFTER: f64 = 6_755_399_441_055_744.0;
/// Below this the result is flushed to zero (`exp(-708) = 3.3e-308`, the last normal powers).
const FLOOR: f64 = -708.0;

/// Coefficients of `exp(r) ~ sum_k C[k] r^k` on `|r| <= ln 2 / 2`: `1 + r + r^2 g(r)` with `g`
/// the degree-9 Chebyshev interpolant of `(e^r - 1 - r) / r^2` (mpmath's `chebyfit` at 50
/// digits), rounded to f64. Relative error of the polynomial with these rounded coefficients,
/// in exact arithmetic: 1.6e-17 (0.14 ulp); Taylor needs degree 13 for the same.
const COEFFS: [f64; 12] = [
    1.0,
    1.0,
    0.500_000_000_000_000_1,
    0.166_666_666_666_666_69,
    0.041_666_666_666_624_164,
    0.008_333_333_333_330_065,
    0.001_388_888_891_719_671_9,
    0.000_198_412_698_630_405_45,
    2.480_152_132_236_869_2e-5,
    2.755_726_848_031_002_4e-6,
    2.762_007_587_998_336_7e-7,
    2.510_037_583_256_123_4e-8,
];

/// `e^x` for `x <= 0`, within 2 ulp of the exact value for `x >= -708`; `0` below.
///
/// Branch-free, so loops over slices of it vectorise. For `x > 0` the result is meaningless;
/// `-inf` gives `0`. No debug assertion guards the domain: its panic branch would keep the
/// loops scalar in every build with debug assertions on (the dev profile, which the
/// benchmarks and tests use). Every caller passes `z - max z`, or that times `s >= 0`.
///
/// ```
/// use calib_kernels::exp_nonpositive;
/// for x in [0.0, -1e-300, -0.5, -1.0, -20.25, -700.0] {
///     let (fast, libm) = (exp_nonpositive(x), f64::exp(x));
///     assert!((fast - libm).abs() <= 4.0 * f64::EPSILON * libm, "{x}");
/// }
/// assert_eq!(exp_nonpositive(0.0), 1.0);
/// assert_eq!(exp_nonpositive(-1000.0), 0.0);
/// ```
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    // `if` rather than `max`: a plain compare-and-select vectorises without NaN rules.
    let xc = if x > FLOOR { x } else { FLOOR };
    let t = xc * LOG2_E + SHIFTER;
    let n = t - SHIFTER;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let c = &COEFFS;
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    // Estrin: sum_k c_k r^k = sum of pairs (c_2j + c_2j+1 r) r^2j, pairs joined by r^2, r^4, r^8.
    let b0 = (c[0] + c[1] * r) + (c[2] + c[3] * r) * r2;
    let b1 = (c[4] + c[5] * r) + (c[6] + c[7] * r) * r2;
    let b2 = (c[8] + c[9] * r) + (c[10] + c[11] * r) * r2;
    let poly = (b0 + b1 * r4) + b2 * r8;
    // t's low mantissa bits hold n (two's complement); (n + 1023) << 52 is 2^n, normal for
    // n >= -1021 (guaranteed by FLOOR). The shift drops the shifter's own bits.
    let scale = f64::from_bits(t.to_bits().wrapping_add(1023) << 52);
    let e = poly * scale;
    if x >= FLOOR { e } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{ulps, worst_ulps};

    #[test]
    fn within_two_ulp_of_libm_over_the_domain() {
        // Half uniform over [-708, 0], half log-spread near 0.
        let point = |u: f64, i: u64| {
            if i.is_multiple_of(2) { -708.0 * u } else { -(10f64.powf(-300.0 * u)) }
        };
        // libm itself is within 1 ulp of the truth, so 2 + 1 bounds the comparison.
        let worst = worst_ulps(point, exp_nonpositive, f64::exp);
        assert!(worst <= 3, "worst {worst} ulp");
    }

    #[test]
    fn exact_points_and_the_floor() {
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-0.0), 1.0);
        assert!(ulps(exp_nonpositive(-std::f64::consts::LN_2), 0.5) <= 1);
        assert!(ulps(exp_nonpositive(-708.0), (-708.0f64).exp()) <= 3);
        assert_eq!(exp_nonpositive(-708.0000001), 0.0);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive(-1e300), 0.0);
    }

    #[test]
    fn monotone_on_a_fine_grid() {
        let mut prev = 0.0;
        for i in (0..=200_000).rev() {
            let v = exp_nonpositive(-(i as f64) * 1e-4);
            assert!(v >= prev);
            prev = v;
        }
    }
}
