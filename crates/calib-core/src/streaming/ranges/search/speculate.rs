//! A speculative last pass: after the first pass, instead of refining every cut bucket and
//! collecting in a third pass, the second pass collects a window of each cut bucket around
//! the cut's predicted place and sums every other pair into its range at once.
//!
//! The prediction models the density inside a cut bucket as linear in the key, from the
//! counts of the bucket and its two neighbours, and inverts that distribution at the cut's
//! rank. At the end of the pass the range counts give the pairs below each window, so every
//! cut is checked to lie inside its window; then the ranks of the collected keys are exact
//! and the search is done. Where a cut missed its window, the pass counts for nothing: the
//! search goes back to the first pass's cut buckets and refines them as it would have.

use super::interval::{GroupSearch, Interval};
use super::{Mode, RangeSearch, layout};
use crate::error::{CalibError, Result};
use crate::stats::BinStats;

/// Fewest sub-buckets a window reaches on each side of its cut's predicted one: the
/// sub-buckets are fine enough that a window is at most 1/8 wider than it needs to be.
const MIN_REACH: u64 = 8;

/// The windows' shape in a bucket [`window_shape`] finds unpredictable (only a forced
/// speculation, in tests, windows one).
const UNPREDICTABLE: (u32, u64) = (8, MIN_REACH);

impl RangeSearch {
    /// The keys a speculative pass would collect, about: `None` unless a histogram pass comes
    /// next and every cut bucket looks predictable (see [`window_shape`]); `None` for weighted
    /// pairs, whose cuts are not ranks.
    pub(crate) fn window_load(&self) -> Option<u64> {
        if self.weighted || !matches!(self.mode, Mode::Histogram { .. }) {
            return None;
        }
        let intervals = self.groups.iter().flat_map(|g| &g.intervals);
        intervals
            .map(|iv| {
                let (bits, reach) = window_shape(iv)?;
                let share = (iv.cuts.len() as u64 * (2 * reach + 1)) as f64 / (1u64 << bits) as f64;
                Some((share.min(1.0) * iv.count as f64).ceil() as u64)
            })
            .sum()
    }

    /// Makes the next pass a speculative collecting pass (no change unless a histogram pass
    /// comes next). Cut buckets [`window_shape`] finds unpredictable get windows of 17 of
    /// 256 sub-buckets: only tests speculate there, to see the pass miss and fall back.
    pub(crate) fn speculate(&mut self) {
        if !matches!(self.mode, Mode::Histogram { .. }) {
            return;
        }
        let windows = self.groups.iter().map(|g| {
            let mut out = Vec::new();
            g.intervals.iter().for_each(|iv| windows(iv, &mut out));
            GroupSearch::new(out, g.n)
        });
        let windows = windows.collect();
        self.fallback = Some(std::mem::replace(&mut self.groups, windows));
        self.first = layout(&self.groups, 1).0;
        self.mode = Mode::Collect;
    }

    /// After a speculative pass (else `true` at once): checks that every cut fell inside its
    /// window, from the outside pairs' range counts in `sums` and the keys collected per
    /// window; then sets each window's `below` and `count`. Where a cut missed, returns to
    /// the cut buckets for a histogram pass (its bits from the budget's `1 / share`) and
    /// returns `false`.
    pub(super) fn settle_windows(
        &mut self,
        sums: &BinStats,
        inside: &[Vec<u128>],
        share: usize,
    ) -> Result<bool> {
        let Some(fallback) = self.fallback.take() else { return Ok(true) };
        let mut flat = 0;
        let mut hit = true;
        for (gi, g) in self.groups.iter_mut().enumerate() {
            let outside = |r: u64| sums.count[gi * sums.n_bins() + r as usize] as u64;
            let mut below = 0;
            let mut run_start = 0;
            for i in 0..g.intervals.len() {
                if i == run_start {
                    below += outside(g.cuts_below[i]);
                }
                let iv = &mut g.intervals[i];
                iv.below = below;
                iv.count = inside[flat + i].len() as u64;
                below += iv.count;
                if !iv.cuts.is_empty() {
                    // The run of windows around these cuts ends here.
                    let start = g.intervals[run_start].below;
                    hit &= g.intervals[i].cuts.iter().all(|&c| c >= start && c < below);
                    run_start = i + 1;
                }
            }
            below += outside(g.cuts_below[g.intervals.len()]);
            flat += g.intervals.len();
            if below != g.n {
                return Err(CalibError::Incompatible(
                    "the last pass saw other rows than the first; adaptive ranges need the same \
                     rows in every pass"
                        .into(),
                ));
            }
        }
        if !hit {
            self.groups = fallback;
            self.mode = Mode::Histogram { bits: self.reindex(share) };
        }
        Ok(hit)
    }
}

/// The sub-bucket bits of `iv`'s windows and their reach in sub-buckets either side of the
/// predicted one: a half-width of at least four standard deviations of a rank's place among
/// the bucket's pairs (`0.5 / sqrt(count)` at most) plus 0.002 of the span for the linear
/// model. `None` where the density around the bucket looks unpredictable: a neighbour empty,
/// or more than a factor 4 between the three (ties make a spike).
fn window_shape(iv: &Interval) -> Option<(u32, u64)> {
    let (n, [a, b]) = (iv.count, iv.around);
    let (low, high) = (n.min(a).min(b), n.max(a).max(b));
    if low == 0 || high > 4 * low {
        return None;
    }
    let half = 2.0 / (n as f64).sqrt() + 0.002;
    let bits = (MIN_REACH as f64 / half).log2().ceil().max(0.0) as u32;
    let bits = bits.min(iv.shift).min(62);
    let reach = (half * (1u64 << bits) as f64 - 0.5).ceil().max(1.0) as u64;
    Some((bits, reach))
}

/// Appends the windows of `iv`'s cuts: per run of overlapping windows, one interval per
/// sub-bucket, the run's cuts on its last.
fn windows(iv: &Interval, out: &mut Vec<Interval>) {
    let (bits, reach) = window_shape(iv).unwrap_or(UNPREDICTABLE);
    let bits = bits.min(iv.shift);
    if bits == 0 {
        out.push(Interval { below: 0, count: 0, around: [0, 0], ..iv.clone() });
        return;
    }
    let last = (1u64 << bits) - 1;
    let mut runs: Vec<(u64, u64, Vec<u64>)> = Vec::new();
    for &c in &iv.cuts {
        let t = predict(iv, (c - iv.below) as f64 + 0.5);
        let s = ((t * (1u64 << bits) as f64) as u64).min(last);
        let (lo, hi) = (s.saturating_sub(reach), (s + reach).min(last));
        match runs.last_mut() {
            Some(run) if lo <= run.1 + 1 => {
                run.1 = run.1.max(hi);
                run.2.push(c);
            }
            _ => runs.push((lo, hi, vec![c])),
        }
    }
    let shift = iv.shift - bits;
    for (lo, hi, cuts) in runs {
        for s in lo..=hi {
            let cuts = if s == hi { cuts.clone() } else { Vec::new() };
            let lo = iv.lo | (u128::from(s) << shift);
            out.push(Interval { lo, shift, below: 0, count: 0, cuts, around: [0, 0], mass: None });
        }
    }
}

/// Where in `iv`'s keys, as a fraction of its span, the `y`-th of its `count` pairs lies, by
/// a density linear across the bucket: at each end, the mean of the bucket's count and its
/// neighbour's.
fn predict(iv: &Interval, y: f64) -> f64 {
    let n = iv.count as f64;
    let (d0, d1) = ((iv.around[0] as f64 + n) / 2.0, (n + iv.around[1] as f64) / 2.0);
    let scale = n / ((d0 + d1) / 2.0).max(f64::MIN_POSITIVE);
    let (a, b) = (scale * (d1 - d0) / 2.0, scale * d0);
    let t = if a.abs() <= 1e-9 * b {
        y / b.max(f64::MIN_POSITIVE)
    } else {
        let disc = b * b + 4.0 * a * y;
        if disc < 0.0 { y / n.max(1.0) } else { (disc.sqrt() - b) / (2.0 * a) }
    };
    if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.5 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(count: u64, around: [u64; 2]) -> Interval {
        Interval { lo: 0, shift: 40, below: 0, count, cuts: vec![], around, mass: None }
    }

    #[test]
    fn predictions_invert_a_linear_density() {
        // Flat: the rank's share of the bucket.
        assert!((predict(&bucket(1000, [1000, 1000]), 250.0) - 0.25).abs() < 1e-12);
        // Rising density: the lower half holds fewer pairs, so the middle pair lies above 0.5.
        let rising = predict(&bucket(1000, [500, 1500]), 500.0);
        assert!(rising > 0.5 && rising < 0.6, "{rising}");
        let falling = predict(&bucket(1000, [1500, 500]), 500.0);
        assert!((rising + falling - 1.0).abs() < 1e-12);
        // Ends and an empty neighbour stay inside the bucket.
        assert_eq!(predict(&bucket(10, [0, 0]), 0.0), 0.0);
        assert!(predict(&bucket(10, [0, 90]), 10.0) <= 1.0);
    }

    #[test]
    fn windows_hold_each_cut_once_in_key_order() {
        let iv = Interval {
            lo: 7 << 40,
            shift: 40,
            below: 100,
            count: 1000,
            cuts: vec![150, 152, 900],
            around: [1000, 1000],
            mass: None,
        };
        // 1,000 pairs: windows of 17 of 128 sub-buckets, the first two cuts' merged.
        assert_eq!(window_shape(&iv), Some((7, 8)));
        let mut out = Vec::new();
        windows(&iv, &mut out);
        let cuts: Vec<u64> = out.iter().flat_map(|w| w.cuts.clone()).collect();
        assert_eq!(cuts, iv.cuts);
        assert!(out.windows(2).all(|w| w[0].lo < w[1].lo));
        assert!(out.iter().all(|w| w.lo >> 40 == 7 && w.shift == 33));
        assert!(out.len() < 2 * 17);
        // A spike (ties) or an empty neighbour: not predictable.
        assert_eq!(window_shape(&Interval { around: [200, 1000], ..iv.clone() }), None);
        assert_eq!(window_shape(&Interval { around: [1000, 0], ..iv.clone() }), None);
        // 40,000 pairs: half-width 0.012, sub-buckets of 1/1024, 12 of them either side.
        assert_eq!(
            window_shape(&Interval { count: 40_000, around: [40_000; 2], ..iv }),
            Some((10, 12))
        );
    }
}
