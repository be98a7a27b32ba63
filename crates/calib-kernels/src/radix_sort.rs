//! [`sort_by_f64_key`]: a stable sort by an `f64` key in `total_cmp` order, by least-significant
//! digit radix sort (Knuth, *TAOCP* vol. 3, 5.2.5).
//!
//! Every isotonic-type fit sorts its scores once, and a comparison sort of 10^4 to 10^6
//! triples was the largest part of those fits. The keys are mapped to unsigned integers of the
//! same order ([`crate::order_key`]), then sorted 8 bits a pass (11 from 32,768 items on), least
//! significant first: one counting pass for all the digits, then one scatter per digit,
//! skipping digits that every key shares (probabilities share most of their exponent). `O(8 N)`
//! moves against `O(N log N)` comparisons.

use crate::order_key::order_key;

/// At or below this many items the standard library's stable merge sort is faster.
const SMALL: usize = 512;

/// From this many items on, 11-bit digits (six scatters, 2,048 buckets) beat 8-bit ones
/// (eight scatters, 256 buckets; faster on 10^4 keys, 9 % slower over 1,000 one-vs-rest
/// sorts of 50,000).
const WIDE: usize = 1 << 15;

/// Sorts `items` by `key` (ascending in `f64::total_cmp` order, so `-0.0` before `0.0`),
/// stably: items with equal keys keep their order.
///
/// ```
/// use calib_kernels::sort_by_f64_key;
/// let mut v: Vec<(f64, usize)> = (0..1000).map(|i| (((i * 7919) % 1000) as f64 - 500.0, i)).collect();
/// sort_by_f64_key(&mut v, |p| p.0);
/// assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
/// ```
pub fn sort_by_f64_key<T: Copy>(items: &mut Vec<T>, key: impl Fn(&T) -> f64) {
    let n = items.len();
    if n <= SMALL {
        items.sort_by(|a, b| key(a).total_cmp(&key(b)));
        return;
    }
    let bits = if n >= WIDE { 11 } else { 8 };
    let (digits, buckets) = (64usize.div_ceil(bits), 1usize << bits);
    let digit = |k: u64, d: usize| ((k >> (bits * d)) & (buckets as u64 - 1)) as usize;
    let mut counts = vec![0usize; digits * buckets];
    for item in items.iter() {
        let k = order_key(key(item));
        for d in 0..digits {
            counts[d * buckets + digit(k, d)] += 1;
        }
    }
    let mut src = std::mem::take(items);
    let mut dst = src.clone();
    let mut next = vec![0usize; buckets];
    for (d, c) in counts.chunks_exact(buckets).enumerate() {
        if c.contains(&n) {
            continue; // every key has this digit
        }
        let mut start = 0;
        for (o, &count) in next.iter_mut().zip(c) {
            *o = start;
            start += count;
        }
        for item in &src {
            let b = digit(order_key(key(item)), d);
            dst[next[b]] = *item;
            next[b] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    *items = src;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_a_stable_total_cmp_sort() {
        let mut rng = crate::test_rng::SplitMix64(7);
        for n in [0, 1, 5, 512, 513, 3000, super::WIDE + 17] {
            // Keys with many ties, both signs, zeros of both signs, infinities and tiny values.
            let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1e-300, -1e-300];
            let items: Vec<(f64, usize)> = (0..n)
                .map(|i| {
                    let u = rng.uniform();
                    let key = if i % 11 == 0 {
                        specials[i % specials.len()]
                    } else {
                        ((u * 40.0).floor() - 20.0) * 0.37
                    };
                    (key, i)
                })
                .collect();
            let mut want = items.clone();
            want.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut got = items;
            sort_by_f64_key(&mut got, |p| p.0);
            assert_eq!(
                got.iter().map(|p| (p.0.to_bits(), p.1)).collect::<Vec<_>>(),
                want.iter().map(|p| (p.0.to_bits(), p.1)).collect::<Vec<_>>(),
                "n = {n}"
            );
        }
    }
}
