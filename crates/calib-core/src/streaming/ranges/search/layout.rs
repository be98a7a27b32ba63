//! How a histogram pass lays out its counters, and how its counts split each cut interval.

use super::interval::{GroupSearch, HISTOGRAM_BUDGET, Interval, Mass};
use crate::streaming::ranges::first;

/// Most bits per interval of a histogram pass: a group's 4,096 counters (32 KiB) stay in the
/// first-level cache while a block's column of the group runs through them. With 2^14 (all
/// the budget gave ACE alone on 10^7 x 100) its first pass took 1.5x as long.
const MAX_BITS: u32 = 12;

/// The first flat (group, interval) index of each group, and the bits per interval a
/// histogram pass can afford within its `1 / share` of the budget.
pub(super) fn layout(groups: &[GroupSearch], share: usize) -> (Vec<usize>, u32) {
    let first = groups
        .iter()
        .scan(0, |next, g| {
            let first = *next;
            *next += g.intervals.len();
            Some(first)
        })
        .collect();
    let intervals: usize = groups.iter().map(|g| g.intervals.len()).sum();
    let per = HISTOGRAM_BUDGET / share.max(1) / intervals.max(1);
    (first, per.max(2).ilog2().min(MAX_BITS))
}

/// Whether `iv`, in a histogram pass of `bits` bits, is the first pass's whole key space,
/// bucketed by [`first::bucket`].
#[inline(always)]
pub(super) fn first_layout(iv: &Interval, bits: u32) -> bool {
    iv.shift >= 128 && bits >= first::MIN_BITS
}

/// The sub-intervals of `iv` (by the next `bits` bits, counts `hist`) that hold its cuts.
pub(super) fn split(iv: &Interval, hist: &[u64], bits: u32, out: &mut Vec<Interval>) {
    let b = bits.min(iv.shift);
    let first = first_layout(iv, bits);
    let (mut below, mut cuts) = (iv.below, iv.cuts.iter().peekable());
    for (j, &count) in hist.iter().enumerate().take(1 << b) {
        let mut inside = Vec::new();
        while let Some(&&c) = cuts.peek() {
            if c >= below + count {
                break;
            }
            inside.push(c);
            cuts.next();
        }
        if !inside.is_empty() {
            let (lo, shift) = sub_interval(iv, j, bits);
            let side = |j: Option<usize>| j.and_then(|j| hist.get(j)).copied().unwrap_or(0);
            let mut around = [side(j.checked_sub(1)), side(Some(j + 1))];
            // As densities per score: across an octave's end a bucket's width in scores
            // doubles or halves.
            let (starts, ends) = if first { first::octave_ends(j, bits) } else { (false, false) };
            around = [around[0] << u8::from(starts), around[1] >> u8::from(ends)];
            out.push(Interval { lo, shift, below, count, cuts: inside, around, mass: None });
        }
        below += count;
    }
}

/// Sub-bucket `j` of `iv` in a histogram pass of `bits` bits, as a prefix interval.
fn sub_interval(iv: &Interval, j: usize, bits: u32) -> (u128, u32) {
    let b = bits.min(iv.shift);
    match first_layout(iv, bits) {
        true => first::interval(j, bits).unwrap_or((0, 0)),
        false => (iv.lo | ((j as u128) << (iv.shift - b)), iv.shift - b),
    }
}

/// [`split`] for a weighted search (`iv.mass` set): the sub-intervals of `iv` (pair counts
/// `counts`, weights `mass`) that hold its cuts. A cut at position `c` lies in the sub-bucket
/// whose running weight `[at, at + mass)` holds it; only sub-buckets with pairs take cuts, and
/// one that rounding leaves past them all goes to the last of them.
pub(super) fn split_weighted(
    iv: &Interval,
    counts: &[u64],
    mass: &[f64],
    bits: u32,
    out: &mut Vec<Interval>,
) {
    let Some(m) = &iv.mass else { return };
    let n = 1 << bits.min(iv.shift);
    let last = counts[..n].iter().rposition(|&c| c > 0);
    let (mut below, mut at, mut cuts) = (iv.below, m.below, m.cuts.iter().peekable());
    for j in 0..n {
        let mut inside = Vec::new();
        while let Some(&&c) = cuts.peek()
            && counts[j] > 0
            && (c < at + mass[j] || Some(j) == last)
        {
            inside.push(c);
            cuts.next();
        }
        if !inside.is_empty() {
            let (lo, shift) = sub_interval(iv, j, bits);
            let (count, mass) =
                (counts[j], Some(Mass { below: at, inside: mass[j], cuts: inside }));
            out.push(Interval { lo, shift, below, count, cuts: vec![], around: [0, 0], mass });
        }
        below += counts[j];
        at += mass[j];
    }
}
