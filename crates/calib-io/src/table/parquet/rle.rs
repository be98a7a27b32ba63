//! Parquet's RLE / bit-packed hybrid encoding (levels and dictionary indices), read run by
//! run: the fast Parquet path checks level runs without expanding them and expands only what
//! it must (bit-packed runs, dictionary indices).

/// One run of a hybrid stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run<'a> {
    /// `count` copies of `value`.
    Repeat { value: u32, count: usize },
    /// `count` values of `bit_width` bits, packed LSB first (a multiple of 8).
    Packed { bytes: &'a [u8], count: usize },
}

/// The runs of a hybrid stream of `bit_width`-bit values; `None` from [`Self::next_run`] at its
/// end, `Err(())` for a stream cut short.
pub(super) struct Runs<'a> {
    data: &'a [u8],
    bit_width: u8,
}

impl<'a> Runs<'a> {
    pub fn new(data: &'a [u8], bit_width: u8) -> Self {
        Self { data, bit_width }
    }

    /// The next run.
    pub fn next_run(&mut self) -> Result<Option<Run<'a>>, ()> {
        if self.data.is_empty() {
            return Ok(None);
        }
        let header = self.varint()?;
        let width = usize::from(self.bit_width);
        if header & 1 == 1 {
            let groups = usize::try_from(header >> 1).map_err(|_| ())?;
            let len = groups.checked_mul(width).ok_or(())?;
            let bytes = self.take(len.min(self.data.len()))?;
            return Ok(Some(Run::Packed { bytes, count: groups * 8 }));
        }
        let count = usize::try_from(header >> 1).map_err(|_| ())?;
        let bytes = self.take(width.div_ceil(8))?;
        let value = bytes.iter().rev().fold(0u32, |v, &b| (v << 8) | u32::from(b));
        Ok(Some(Run::Repeat { value, count }))
    }

    fn varint(&mut self) -> Result<u64, ()> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.data.split_first().ok_or(())?;
            self.data = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ()> {
        if n > self.data.len() {
            return Err(());
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }
}

/// Value `i` of `bit_width`-bit values packed LSB first in `bytes` (0 past the end, as a
/// short final group is zero-padded).
#[inline(always)]
pub(super) fn unpack(bytes: &[u8], bit_width: u8, i: usize) -> u32 {
    let bit = i * usize::from(bit_width);
    let mut window = [0u8; 8];
    let start = bit / 8;
    let end = (start + 8).min(bytes.len());
    if start < end {
        window[..end - start].copy_from_slice(&bytes[start..end]);
    }
    let mask = if bit_width >= 32 { u64::from(u32::MAX) } else { (1u64 << bit_width) - 1 };
    ((u64::from_le_bytes(window) >> (bit % 8)) & mask) as u32
}

/// Bits of a level up to `max`.
pub(super) fn level_width(max: i16) -> u8 {
    (16 - (max as u16).leading_zeros()) as u8
}

/// Whether the first `n` levels of `runs` all equal `max` (no null, no empty list).
pub(super) fn all_defined(mut runs: Runs<'_>, max: i16, n: usize) -> bool {
    let (max, width) = (max as u32, runs.bit_width);
    let mut seen = 0;
    while seen < n {
        let take = match runs.next_run() {
            Ok(Some(Run::Repeat { value, count })) if value == max => count.min(n - seen),
            Ok(Some(Run::Packed { bytes, count })) => {
                let take = count.min(n - seen);
                if (0..take).any(|i| unpack(bytes, width, i) != max) {
                    return false;
                }
                take
            }
            _ => return false,
        };
        if take == 0 {
            return false;
        }
        seen += take;
    }
    true
}

/// Whether `n` repetition levels (width 1) starting at level `first` of a column whose rows
/// hold `k` values each are 0 exactly at row starts (`position % k == 0`).
pub(super) fn rows_of(mut runs: Runs<'_>, k: usize, first: usize, n: usize) -> bool {
    let starts_row = |p: usize| p.is_multiple_of(k);
    let mut p = first;
    let end = first + n;
    while p < end {
        let took = match runs.next_run() {
            Ok(Some(Run::Repeat { value, count })) => {
                let c = count.min(end - p);
                let ok = match value {
                    0 => k == 1 || (c == 1 && starts_row(p)),
                    1 => !starts_row(p) && p % k + c <= k,
                    _ => false,
                };
                if !ok {
                    return false;
                }
                c
            }
            Ok(Some(Run::Packed { bytes, count })) => {
                let c = count.min(end - p);
                if !packed_rows(bytes, k, p, c) {
                    return false;
                }
                c
            }
            _ => return false,
        };
        if took == 0 {
            return false;
        }
        p += took;
    }
    true
}

/// Whether the first `c` one-bit levels of `bytes`, starting at level `p`, are 0 exactly at
/// row starts: every 0 sits at a multiple of `k`, and there are as many 0s as multiples of `k`
/// in `p..p + c`. Zeros are one level in `k`, so this visits bytes, not levels.
fn packed_rows(bytes: &[u8], k: usize, p: usize, c: usize) -> bool {
    let Some(bytes) = bytes.get(..c.div_ceil(8)) else { return false };
    let mut zeros = 0;
    for (j, &b) in bytes.iter().enumerate() {
        let left = c - j * 8;
        let mut z = if left < 8 { !b & ((1u8 << left) - 1) } else { !b };
        while z != 0 {
            if !(p + j * 8 + z.trailing_zeros() as usize).is_multiple_of(k) {
                return false;
            }
            zeros += 1;
            z &= z - 1;
        }
    }
    zeros == (p + c).div_ceil(k) - p.div_ceil(k)
}

/// Appends `dict[i]` for the first `n` indices of `runs` to `out`; false for an index
/// outside the dictionary or a stream cut short.
pub(super) fn gather_dictionary<T: Copy>(
    mut runs: Runs<'_>,
    dict: &[T],
    n: usize,
    out: &mut Vec<T>,
) -> bool {
    let width = runs.bit_width;
    let mut left = n;
    while left > 0 {
        match runs.next_run() {
            Ok(Some(Run::Repeat { value, count })) => {
                let Some(&v) = dict.get(value as usize) else { return false };
                let c = count.min(left);
                out.extend(std::iter::repeat_n(v, c));
                left -= c;
            }
            Ok(Some(Run::Packed { bytes, count })) => {
                let c = count.min(left);
                for i in 0..c {
                    let Some(&v) = dict.get(unpack(bytes, width, i) as usize) else { return false };
                    out.push(v);
                }
                left -= c;
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hybrid stream: `(true, value, count)` an RLE run, `(false, _, groups)` packed groups
    /// of `values`.
    fn rle(value: u32, count: u64, width: u8) -> Vec<u8> {
        let mut out = varint(count << 1);
        out.extend(&value.to_le_bytes()[..usize::from(width).div_ceil(8)]);
        out
    }

    fn packed(values: &[u32], width: u8) -> Vec<u8> {
        let groups = values.len().div_ceil(8);
        let mut out = varint(((groups as u64) << 1) | 1);
        let mut bits = vec![0u8; groups * usize::from(width)];
        for (i, &v) in values.iter().enumerate() {
            for b in 0..usize::from(width) {
                if v >> b & 1 == 1 {
                    let at = i * usize::from(width) + b;
                    bits[at / 8] |= 1 << (at % 8);
                }
            }
        }
        out.extend(bits);
        out
    }

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn levels_are_checked_run_by_run() {
        let defined = [rle(3, 300, 2), packed(&[3; 16], 2)].concat();
        assert!(all_defined(Runs::new(&defined, 2), 3, 310));
        assert!(all_defined(Runs::new(&defined, 2), 3, 316));
        assert!(!all_defined(Runs::new(&defined, 2), 3, 317)); // runs out
        let hole = [rle(3, 5, 2), packed(&[3, 3, 2, 3, 3, 3, 3, 3], 2)].concat();
        assert!(!all_defined(Runs::new(&hole, 2), 3, 13));
        assert!(all_defined(Runs::new(&hole, 2), 3, 7));
        // Rows of 3: 0 1 1 | 0 1 1 | 0 1 1, as a packed group then an RLE pair.
        let rows = [packed(&[0, 1, 1, 0, 1, 1, 0, 1], 1), rle(1, 1, 1)].concat();
        assert!(rows_of(Runs::new(&rows, 1), 3, 0, 9));
        assert!(!rows_of(Runs::new(&rows, 1), 4, 0, 9));
        // A page that starts inside a row (level 1 of rows of 3): 1 1 | 0 1 1.
        let mid = [rle(1, 2, 1), rle(0, 1, 1), rle(1, 2, 1)].concat();
        assert!(rows_of(Runs::new(&mid, 1), 3, 1, 5));
        assert!(!rows_of(Runs::new(&mid, 1), 3, 0, 5));
        let long = rle(1, 5, 1); // five 1s cannot sit in one row of 3
        assert!(!rows_of(Runs::new(&long, 1), 3, 1, 5));
        assert!(rows_of(Runs::new(&rle(0, 7, 1), 1), 1, 0, 7)); // rows of one value
        // Packed runs: starting inside a row, a row start missing, a short last group.
        let inside = packed(&[1, 1, 0, 1, 1, 0, 1, 1], 1);
        assert!(rows_of(Runs::new(&inside, 1), 3, 1, 8));
        let missing = packed(&[0, 1, 1, 1, 1, 1, 0, 1], 1);
        assert!(!rows_of(Runs::new(&missing, 1), 3, 0, 8));
        let short = packed(&[0, 1, 1, 0, 1], 1);
        assert!(rows_of(Runs::new(&short, 1), 3, 0, 5));
        assert!(!rows_of(Runs::new(&short, 1), 3, 0, 7)); // the padding is not a row start
    }

    #[test]
    fn dictionary_indices_expand_and_bad_ones_are_refused() {
        let dict = [1.5f32, -2.0, 7.25];
        let ids = [rle(2, 3, 2), packed(&[0, 1, 2, 1, 0, 0, 2, 2], 2)].concat();
        let mut out = Vec::new();
        assert!(gather_dictionary(Runs::new(&ids, 2), &dict, 10, &mut out));
        assert_eq!(out, [7.25, 7.25, 7.25, 1.5, -2.0, 7.25, -2.0, 1.5, 1.5, 7.25]);
        let bad = packed(&[3, 0, 0, 0, 0, 0, 0, 0], 2);
        assert!(!gather_dictionary(Runs::new(&bad, 2), &dict, 8, &mut Vec::new()));
        assert!(!gather_dictionary(Runs::new(&[0x80], 2), &dict, 1, &mut Vec::new()));
        assert_eq!(level_width(0), 0);
        assert_eq!((level_width(1), level_width(3), level_width(4)), (1, 2, 3));
        for w in [1u8, 5, 13, 20, 32] {
            let vals: Vec<u32> =
                (0..8).map(|i| (i * 2_654_435_761u64 % (1u64 << w)) as u32).collect();
            let p = packed(&vals, w);
            let Ok(Some(Run::Packed { bytes, .. })) = Runs::new(&p, w).next_run() else { panic!() };
            assert!((0..8).all(|i| unpack(bytes, w, i) == vals[i]), "width {w}");
        }
    }
}
