//! The rows of the top-label form (`crate::binary::form`): one row calibrated
//! ([`top_label`], with the capping that keeps its argmax), and [`TopRow`], what that reads of
//! a row, so that a fit's record finds each label's calibrated value without rewriting rows.

use super::map::BinaryMap;
use super::scores::{HostScores, argmax};

/// What [`top_label`] reads of a row, taken once: the top class, its confidence, the others'
/// sum and largest value, and the value at the row's label.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TopRow {
    /// The argmax `c`.
    pub top: usize,
    /// `p_c`.
    pub confidence: f64,
    others: f64,
    largest: f64,
    at_label: f64,
    label: usize,
}

impl TopRow {
    /// Every row's summary, blocks of rows on the cores, in row order.
    pub(crate) fn all(scores: &HostScores) -> Vec<Self> {
        let n = scores.n_samples();
        let blocks: Vec<usize> = (0..n).step_by(BLOCK_ROWS).collect();
        let tops = calib_kernels::in_order(&blocks, |&start| {
            let rows = start..(start + BLOCK_ROWS).min(n);
            rows.map(|i| Self::of(scores.row(i), scores.labels[i] as usize)).collect::<Vec<_>>()
        });
        tops.into_iter().flatten().collect()
    }

    /// The summary of `row` with label `y`.
    pub(crate) fn of(row: &[f64], y: usize) -> Self {
        let c = argmax(row);
        let largest = [&row[..c], &row[c + 1..]]
            .iter()
            .filter(|part| !part.is_empty())
            .fold(f64::NEG_INFINITY, |m, part| m.max(calib_kernels::max_and_argmax(part).0));
        let others = others_sum(row, c);
        Self { top: c, confidence: row[c], others, largest, at_label: row[y], label: y }
    }

    /// [`top_label`]'s output at the label, from the summary alone unless a class must be
    /// capped below the top one (then `row()` is read and rewritten on a copy in `scratch`).
    pub(crate) fn calibrated_at_label<'r, M: BinaryMap>(
        &self,
        maps: &[M],
        n_classes: usize,
        row: impl FnOnce() -> &'r [f64],
        scratch: &mut Vec<f64>,
    ) -> f64 {
        let h_new = maps[self.top].predict(self.confidence).max(1.0 / n_classes as f64);
        if self.label == self.top {
            return h_new; // capping never moves the top class
        }
        // Rounding is monotone, so the largest scaled value is the scaled largest one.
        let (at_y, largest) = if self.others > 0.0 {
            let scale = (1.0 - h_new) / self.others;
            (self.at_label * scale, self.largest * scale)
        } else {
            let share = (1.0 - h_new) / (n_classes - 1) as f64;
            (share, share)
        };
        if largest <= h_new.next_down() {
            return at_y;
        }
        scratch.clear();
        scratch.extend_from_slice(row());
        top_label(maps, scratch);
        scratch[self.label]
    }
}

/// The top-label problems of `tops` for `k` classes: each predicted class's confidences and
/// whether the row was right.
pub(crate) fn problems(tops: &[TopRow], k: usize) -> Vec<(Vec<f64>, Vec<bool>)> {
    let mut sets = vec![(Vec::new(), Vec::new()); k];
    for t in tops {
        sets[t.top].0.push(t.confidence);
        sets[t.top].1.push(t.label == t.top);
    }
    sets
}

/// Each row's calibrated value at its label ([`TopRow::calibrated_at_label`]), rows on the
/// cores.
pub(crate) fn calibrated_at_labels<M: BinaryMap>(
    maps: &[M],
    tops: &[TopRow],
    scores: &HostScores,
) -> Vec<f64> {
    let k = scores.n_columns;
    let blocks: Vec<usize> = (0..tops.len()).step_by(BLOCK_ROWS).collect();
    let parts = calib_kernels::in_order(&blocks, |&start| {
        let mut scratch = Vec::with_capacity(k);
        let rows = start..(start + BLOCK_ROWS).min(tops.len());
        rows.map(|i| tops[i].calibrated_at_label(maps, k, || scores.row(i), &mut scratch))
            .collect::<Vec<_>>()
    });
    parts.into_iter().flatten().collect()
}

/// Rows one core summarises at a time.
const BLOCK_ROWS: usize = 4096;

/// The sum of `row` but class `c` (vectorised; the same bits for [`top_label`] and
/// [`TopRow`]).
#[inline(always)]
fn others_sum(row: &[f64], c: usize) -> f64 {
    calib_kernels::lane_sum(&row[..c]) + calib_kernels::lane_sum(&row[c + 1..])
}

/// One row with its top-label confidence replaced and the rest rescaled to sum to 1.
pub(crate) fn top_label<M: BinaryMap>(maps: &[M], row: &mut [f64]) {
    let k = row.len();
    let c = argmax(row);
    let h = row[c];
    // No probability vector has a largest entry below 1/K.
    let h_new = maps[c].predict(h).max(1.0 / k as f64);
    let rest = 1.0 - h_new;
    // The others' own sum, not 1 - h: near h = 1 the difference is all rounding.
    let others = others_sum(row, c);
    if others > 0.0 {
        let scale = rest / others;
        row.iter_mut().for_each(|p| *p *= scale);
    } else {
        let share = rest / (k - 1) as f64;
        row.iter_mut().for_each(|p| *p = share);
    }
    row[c] = h_new;
    cap_below(row, c);
}

/// Keeps class `c` the argmax: classes at or above `row[c]` are capped just below it and their
/// excess spread over the others in proportion (water-filling). Feasible because
/// `row[c] >= 1/K`; at exactly 1/K the row sums to 1 within (K - 1) ulp.
///
/// Spreading in proportion scales every free class by one factor, so the rounds of the
/// water-filling are counted without writing the row: with `m` classes capped and `F` the sum
/// of the free ones, these are scaled by `f = (T - m cap) / F` (T: the others' sum), and the
/// next round caps every class above `cap / f`; the capped set only grows, and when it stops
/// growing the row is written once. (When every free class is 0, they share the excess
/// evenly.)
fn cap_below(row: &mut [f64], c: usize) {
    let top = row[c];
    let cap = top.next_down();
    if row.iter().enumerate().all(|(j, &p)| j == c || p <= cap) {
        return;
    }
    row[c] = 0.0; // out of the sums and never above a threshold
    let others = row.len() - 1;
    let total = calib_kernels::lane_sum(row);
    let (mut capped, mut scale, mut even) = (0, 1.0, None);
    loop {
        let threshold = cap / scale;
        let (m, _, free) = calib_kernels::split_sums_at(row, threshold);
        if m == capped {
            break;
        }
        capped = m;
        let spread = total - m as f64 * cap;
        if m == others || free <= 0.0 {
            even = Some(if m == others { cap } else { (spread / (others - m) as f64).min(cap) });
            break;
        }
        scale = spread / free;
    }
    let threshold = cap / scale;
    for p in row.iter_mut() {
        *p = if *p > threshold { cap } else { even.unwrap_or(*p * scale) };
    }
    row[c] = top;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The water-filling round by round, as first written: cap, spread in proportion, repeat.
    fn capped_by_rounds(row: &mut [f64], c: usize) {
        let cap = row[c].next_down();
        let k = row.len();
        let mut capped = vec![false; k];
        capped[c] = true;
        loop {
            let over: Vec<usize> = (0..k).filter(|&j| !capped[j] && row[j] > cap).collect();
            if over.is_empty() {
                return;
            }
            let excess: f64 = over.iter().map(|&j| row[j] - cap).sum();
            for &j in &over {
                row[j] = cap;
                capped[j] = true;
            }
            let free: f64 = (0..k).filter(|&j| !capped[j]).map(|j| row[j]).sum();
            let n_free = capped.iter().filter(|&&x| !x).count();
            for j in (0..k).filter(|&j| !capped[j]) {
                row[j] += if free > 0.0 { excess * row[j] / free } else { excess / n_free as f64 };
            }
        }
    }

    #[test]
    fn capping_counts_the_rounds_without_writing_them() {
        // Rows of 50 classes, one lifted as the top (a small LCG).
        let mut state = 9u64;
        let mut uniform = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut rows_capped = 0;
        for i in 0..500 {
            let mut row: Vec<f64> = (0..50).map(|_| (3.0 * uniform()).exp()).collect();
            row[i % 50] *= 1.0 + 4.0 * uniform();
            let sum: f64 = row.iter().sum();
            row.iter_mut().for_each(|p| *p /= sum);
            let row = row.as_slice();
            // The top class lowered to between 1/K and its value, the rest scaled to sum to 1.
            let c = argmax(row);
            let h = (1.0 / 50.0) + (row[c] - 1.0 / 50.0) * (i % 7) as f64 / 10.0;
            let scale = (1.0 - h) / others_sum(row, c);
            let mut fast: Vec<f64> = row.iter().map(|p| p * scale).collect();
            fast[c] = h;
            let mut slow = fast.clone();
            rows_capped += usize::from(fast.iter().enumerate().any(|(j, &p)| j != c && p >= h));
            cap_below(&mut fast, c);
            capped_by_rounds(&mut slow, c);
            assert_eq!(argmax(&fast), c);
            for (a, b) in fast.iter().zip(&slow) {
                assert!((a - b).abs() <= 1e-15, "row {i}: {a} against {b}");
            }
            assert!((fast.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        assert!(rows_capped > 100, "{rows_capped} rows capped");
        // Every class with mass capped, the excess shared evenly by classes at exactly 0.
        let mut fast = vec![0.3, 0.35, 0.35, 0.0, 0.0];
        let mut slow = fast.clone();
        cap_below(&mut fast, 0);
        capped_by_rounds(&mut slow, 0);
        assert!(fast.iter().zip(&slow).all(|(a, b)| (a - b).abs() <= 1e-15), "{fast:?} {slow:?}");
        assert!((fast.iter().sum::<f64>() - 1.0).abs() < 1e-15 && fast[3] > 0.04, "{fast:?}");
    }
}
