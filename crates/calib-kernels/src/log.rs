//! `ln(1 + e)` for `e` in `[0, 1]`, written so the compiler can inline and vectorise it.
//!
//! Every logistic loss the host fits compute is `softplus(z) = max(z, 0) + ln(1 + e^-|z|)`;
//! glibc's `log1p` is a call that costs several times an inline polynomial and was the largest
//! single cost of the spline, beta and Platt fits.
//!
//! Method (fdlibm's `e_log.c`): `1 + e = 2^k (1 + f)` with `k` in `{0, 1}` and `f` in
//! `[sqrt(2)/2 - 1, sqrt(2) - 1]` (`f = e` exactly when `k = 0`, so no rounding of `1 + e`
//! enters for small `e`), `s = f / (2 + f)`, `ln(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2)))`
//! with fdlibm's degree-14 minimax `R` (error below 1 ulp there).

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
    fn exact_points() {
        assert_eq!(ln_1p_unit(0.0), 0.0);
        assert!(ulps(ln_1p_unit(1.0), std::f64::consts::LN_2) <= 1);
        assert_eq!(ln_1p_unit(1e-300), 1e-300);
    }
}
