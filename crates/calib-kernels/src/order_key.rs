//! Order keys: an `f64` as the unsigned integer that orders like `f64::total_cmp`.
//!
//! Negative values (sign bit set) have every bit flipped, the others only their sign bit set, so
//! that integer comparison, an integer sort and a radix sort on the key's digits all follow
//! `total_cmp` (`-inf < -0.0 < 0.0 < inf`, NaNs at the ends). The map is a bijection:
//! [`from_order_key`] gives back the value, bit for bit.

/// The key of `v`: `a.total_cmp(&b) == order_key(a).cmp(&order_key(b))`.
#[inline(always)]
pub fn order_key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// The value whose [`order_key`] is `k`.
#[inline(always)]
pub fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_like_total_cmp_and_give_the_values_back() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -1e-300,
            -0.0,
            0.0,
            1e-300,
            0.5,
            1.0,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        for &a in &values {
            assert_eq!(from_order_key(order_key(a)).to_bits(), a.to_bits());
            for &b in &values {
                assert_eq!(order_key(a).cmp(&order_key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }
}
