//! `ln(1 + e)` for `e` in `[0, 1]` and `ln x` for positive `x`, written so the compiler can
//! inline and vectorise them.
//!
//! Every logistic loss the host fits compute is `softplus(z) = max(z, 0) + ln(1 + e^-|z|)`;
//! glibc's `log1p` is a call that costs several times an inline polynomial and was the largest
//! single cost of the spline, beta and Platt fits.
//!
//! Method (fdlibm's `e_log.c`): `1 + e = 2^k (1 + f)` with `k` in `{0, 1}` and `f` in
//! `[sqrt(2)/2 - 1, sqrt(2) - 1]` (`f = e` exactly when `k = 0`, so no rounding of `1 + e`
//! enters for small `e`), `s = f / (2 + f)`, `ln(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2)))`
//! with fdlibm's degree-14 minimax `R` (error below 1 ulp there). [`ln_positive`] splits
//! `x = 2^k (1 + f)` from the bits of `x` the same way.

/// `ln 2`, high part with trailing zeros (fdlibm's `ln2_hi`).
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
/// `ln 2 - LN2_HI` (fdlibm's `ln2_lo`).
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// fdlibm's `Lg1` ... `Lg7`.
const LG: [f64; 7] = [
    6.666_666_666_666_735e-1,
    3.999_999_999_940_942e-1,
    2.857_142_874_366_239e-1,
    2.222_219_843_214_978_4e-1,
    1.818_357_216_161_805e-1,
    1.531_383_769_920_937_3e-1,
    1.479_819_860_511_658_6e-1,
];

/// `ln(1 + e)` for `e` in `[0, 1]`, within 2 ulp of the exact value.
///
/// Branch-free (two selects), so loops over it vectorise; outside `[0, 1]` the result is
/// meaningless (not asserted: a panic branch would keep the loops over it scalar in builds
/// with debug assertions).
///
/// ```
/// use calib_kernels::ln_1p_unit;
/// for e in [0.0, 1e-300, 1e-9, 0.25, 0.5, 1.0] {
///     let (fast, libm) = (ln_1p_unit(e), f64::ln_1p(e));
///     assert!((fast - libm).abs() <= 4.0 * f64::EPSILON * libm, "{e}");
/// }
/// ```
#[inline(always)]
pub fn ln_1p_unit(e: f64) -> f64 {
    let big = e > std::f64::consts::SQRT_2 - 1.0;
    // (1 + e) / 2 - 1: the halving is exact and the subtraction exact (Sterbenz).
    let f = if big { (1.0 + e) * 0.5 - 1.0 } else { e };
    let k = if big { 1.0 } else { 0.0 };
    ln_reduced(k, f)
}

/// `ln x` for finite `x > 0` (subnormals included), within 2 ulp of the exact value;
/// branch-free, so loops over it vectorise. Other inputs give meaningless results.
///
/// ```
/// use calib_kernels::ln_positive;
/// for x in [1e-310, 1e-300, 2.2e-16, 0.3, 0.5, 0.999_999, 1.0, 1.5, 1e300] {
///     let (fast, libm) = (ln_positive(x), x.ln());
///     assert!((fast - libm).abs() <= 4.0 * f64::EPSILON * libm.abs(), "{x}");
/// }
/// ```
#[inline(always)]
pub fn ln_positive(x: f64) -> f64 {
    // Subnormals scaled into the normal range first (by 2^54, exact).
    let tiny = x < f64::MIN_POSITIVE;
    let x = if tiny { x * TWO_54 } else { x };
    let bits = x.to_bits();
    // The biased exponent as an f64 through the bits of 2^52 + e (an integer-to-float
    // conversion of 64-bit lanes has no AVX2 instruction).
    let biased = f64::from_bits(TWO_52_BITS | (bits >> 52)) - TWO_52;
    let exponent = biased - if tiny { 1023.0 + 54.0 } else { 1023.0 };
    // The mantissa in [1, 2), halved above sqrt 2 so that f = m - 1 lies in
    // [sqrt(2)/2 - 1, sqrt(2) - 1] (both steps exact).
    let m = f64::from_bits((bits & MANTISSA) | ONE_BITS);
    let big = m > std::f64::consts::SQRT_2;
    let f = if big { m * 0.5 - 1.0 } else { m - 1.0 };
    ln_reduced(exponent + if big { 1.0 } else { 0.0 }, f)
}

/// 2^52 and its bits.
const TWO_52: f64 = 4_503_599_627_370_496.0;
const TWO_52_BITS: u64 = 0x4330_0000_0000_0000;
/// 2^54.
const TWO_54: f64 = 18_014_398_509_481_984.0;
/// The mantissa bits of an f64.
const MANTISSA: u64 = (1 << 52) - 1;
/// The bits of 1.0.
const ONE_BITS: u64 = 0x3ff0_0000_0000_0000;

/// `k ln 2 + ln(1 + f)` for `f` in `[sqrt(2)/2 - 1, sqrt(2) - 1]` (fdlibm's kernel).
#[inline(always)]
fn ln_reduced(k: f64, f: f64) -> f64 {
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let hfsq = 0.5 * f * f;
    k * LN2_HI - ((hfsq - (s * (hfsq + t1 + t2) + k * LN2_LO)) - f)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{ulps, worst_ulps};

    #[test]
    fn within_two_ulp_of_libm_over_the_domain() {
        // Half uniform over [0, 1], half log-spread near 0.
        let point = |u: f64, i: u64| if i.is_multiple_of(2) { u } else { 10f64.powf(-300.0 * u) };
        let worst = worst_ulps(point, ln_1p_unit, f64::ln_1p);
        assert!(worst <= 3, "worst {worst} ulp");
    }

    #[test]
    fn ln_positive_within_two_ulp_of_libm() {
        // Uniform over (0, 1], log-spread over 1e-320 to 1e300, and near 1 from both sides.
        let point = |u: f64, i: u64| match i % 3 {
            0 => 1.0 - u,
            1 => 10f64.powf(-320.0 + 620.0 * u),
            _ => 1.0 + (u - 0.5) * 1e-6,
        };
        let worst = worst_ulps(point, ln_positive, f64::ln);
        assert!(worst <= 2, "worst {worst} ulp");
        assert_eq!(ln_positive(1.0), 0.0);
        assert!(ulps(ln_positive(2.0), std::f64::consts::LN_2) <= 1);
    }

    #[test]
    fn exact_points() {
        assert_eq!(ln_1p_unit(0.0), 0.0);
        assert!(ulps(ln_1p_unit(1.0), std::f64::consts::LN_2) <= 1);
        assert_eq!(ln_1p_unit(1e-300), 1e-300);
    }
}
