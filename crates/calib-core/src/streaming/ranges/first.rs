//! The first pass's buckets of a group, spent where probabilities lie.
//!
//! Plain top bits of the 64-bit order key would spend them on the sign and the exponent's high
//! bits, which are the same for every probability: 14 bits give four buckets per octave, so on 10^7
//! rows x 100 classes a third of ACE's pairs would share a bucket with a cut. Half of the `2^bits`
//! counters here go to the keys of `[2^-63, 2)` (high-half prefix `101111`), by the exponent's low
//! six bits and then the mantissa's leading bits: `2^(bits - 7)` buckets per octave, 32x finer. Six
//! coarse buckets hold the rest of the key space (zero, tiny scores, scores of 2 and more,
//! negatives), so every key still has its bucket. Every bucket is a key prefix, in key order, so a
//! cut's bucket is an interval the later passes refine as before.

/// Fewest bits per group that hold the layout (6 coarse + `2^(bits - 1)` fine buckets);
/// below, the first pass takes the key's top bits.
pub(super) const MIN_BITS: u32 = 4;

/// High-half prefix of the keys of `[2^-63, 2)`, and its length.
const ROOT: u64 = 0b10_1111;
const ROOT_LEN: u32 = 6;

/// The coarse buckets below the root's keys, as (prefix, length), in key order.
const BELOW: [(u64, u32); 5] = [(0b0, 1), (0b100, 3), (0b1010, 4), (0b1_0110, 5), (0b10_1110, 6)];

/// The coarse bucket above the root's keys: everything from 2 up.
const ABOVE: (u64, u32) = (0b11, 2);

/// The bucket of a key whose high half is `hi`, with `bits >= MIN_BITS` bits per group.
#[inline(always)]
pub(super) fn bucket(hi: u64, bits: u32) -> usize {
    let fine = bits - 1;
    if hi >> (64 - ROOT_LEN) == ROOT {
        BELOW.len() + ((hi << ROOT_LEN) >> (64 - fine)) as usize
    } else if hi >> (64 - ABOVE.1) == ABOVE.0 {
        BELOW.len() + (1 << fine)
    } else {
        let start = |&(prefix, len): &(u64, u32)| prefix << (64 - len);
        BELOW.iter().filter(|b| start(b) <= hi).count() - 1
    }
}

/// Whether fine bucket `j` (at `bits >= 7`) is the first or the last of its octave: its
/// neighbour there spans half or twice its range of scores for the same range of keys.
pub(super) fn octave_ends(j: usize, bits: u32) -> (bool, bool) {
    let Some(sub) = j.checked_sub(BELOW.len()).filter(|&s| bits >= 7 && s < 1 << (bits - 1)) else {
        return (false, false);
    };
    let per_octave = 1usize << (bits - 7);
    (sub % per_octave == 0, sub % per_octave == per_octave - 1)
}

/// Bucket `j`'s keys as a prefix interval `(lo, shift)` of the 128-bit pair keys (`None`:
/// a bucket no key reaches).
pub(super) fn interval(j: usize, bits: u32) -> Option<(u128, u32)> {
    let fine = bits - 1;
    let prefix = |(p, len): (u64, u32)| (u128::from(p) << (128 - len), 128 - len);
    match j.checked_sub(BELOW.len()) {
        None => Some(prefix(BELOW[j])),
        Some(sub) if sub < 1 << fine => {
            let shift = 128 - ROOT_LEN - fine;
            Some(((u128::from(ROOT) << (128 - ROOT_LEN)) | ((sub as u128) << shift), shift))
        }
        Some(sub) if sub == 1 << fine => Some(prefix(ABOVE)),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::order_key;

    /// Every bucket is the prefix interval its keys lie in, and buckets follow key order.
    #[test]
    fn buckets_are_the_key_prefixes_in_order() {
        let scores = [
            -3.0,
            -0.0,
            0.0,
            1e-300,
            5e-20,
            2f64.powi(-63),
            1e-12,
            0.01,
            0.5,
            0.999,
            1.0,
            1.999_999,
            2.0,
            7.5,
            f64::MAX,
        ];
        for bits in [MIN_BITS, 9, 12, 16] {
            let mut last = 0;
            for s in scores {
                let hi = order_key(s);
                let j = bucket(hi, bits);
                assert!(j < 1 << bits && j >= last, "{s} at {bits} bits");
                let (lo, shift) = interval(j, bits).unwrap();
                let key = u128::from(hi) << 64;
                assert_eq!(key >> shift, lo >> shift, "{s} at {bits} bits");
                last = j;
            }
            assert!(interval((1 << bits) - 1, bits).is_none());
        }
        // Between 2^-63 and 2: 2^(bits - 7) buckets per octave.
        assert_eq!(bucket(order_key(0.75), 12) - bucket(order_key(0.5), 12), 16);
        let (half, below_half) = (bucket(order_key(0.5), 12), bucket(order_key(0.4999), 12));
        assert_eq!(
            (octave_ends(half, 12), octave_ends(below_half, 12)),
            ((true, false), (false, true))
        );
        assert_eq!(octave_ends(half + 1, 12), (false, false));
    }
}
