//! Class columns of the probability matrix, rebuilt from the rows for the adaptive ranges.
//!
//! The fused row pass keeps, per row, `(max logit, 1 / sum exp)`; a column is then
//! `exp(z_ij - max_i) * inv_i`, the row pass's own expression, so it is bit-identical without
//! an `[N, K]` copy. Classes are rebuilt in groups ([`group_width`]).

use crate::binning::{accumulate_value_ranges, accumulate_value_ranges_within};
use crate::input::ScoreKind;
use crate::kernels::{Score, exp_nonpositive, prefetch};
use crate::stats::BinStats;

/// Class columns one thread holds at once, at most (bytes).
const COLUMN_BUDGET: usize = 64 << 20;

/// How many rows ahead the column build prefetches its slice of a row ([`prefetch`]).
const PREFETCH_ROWS: usize = 8;

/// Classes rebuilt together: a multiple of 16 (a cache line of f32 logits) from 16 to 128,
/// as wide as `COLUMN_BUDGET` allows and narrow enough to give every thread 4 groups.
///
/// Wide groups matter: each row's slice is a separate page of the row-major matrix, so a
/// 16-class group pays a TLB miss and a cache miss per row per 16 classes (measured: the column
/// build took over half of the metric set at 50,000 x 1,000; 128 classes cut it ~4x).
pub(super) fn group_width(n: usize, k: usize, threads: usize) -> usize {
    let by_memory = COLUMN_BUDGET / (8 * n.max(1));
    let by_balance = k.div_ceil(4 * threads.max(1));
    (by_memory.min(by_balance).div_ceil(16) * 16).clamp(16, 128)
}

/// Value ranges of a group's columns, tracked by the build.
struct Bounds {
    /// `lo[f][c]`: column `c`'s smallest score above floor `f` (`inf` if none).
    lo: Vec<Vec<f64>>,
    /// `hi[c]`: column `c`'s largest score.
    hi: Vec<f64>,
}

impl Bounds {
    /// Column `c`'s scores above floor `f` lie in `(lo, hi)` (`lo > hi` when there are none).
    fn of(&self, f: usize, c: usize) -> (f64, f64) {
        (self.lo[f][c], self.hi[c])
    }
}

/// Class columns of the probability matrix, recomputed from the rows on demand.
pub(super) struct ClassColumns<'a, T: Score> {
    pub(super) values: &'a [T],
    pub(super) labels: &'a [i64],
    pub(super) kind: ScoreKind,
    pub(super) k: usize,
    pub(super) scales: &'a [(f64, f64)],
}

impl<T: Score> ClassColumns<'_, T> {
    /// `p[i, j]`, bit for bit as the row pass computed it.
    #[inline]
    pub(super) fn probability(&self, i: usize, j: usize) -> f64 {
        let v: f64 = self.values[i * self.k + j].into();
        match self.kind {
            ScoreKind::Logits => {
                let (max, inv) = self.scales[i];
                exp_nonpositive(v - max) * inv
            }
            _ => v,
        }
    }

    /// Columns `first .. first + width` in sample order, the scores `> threshold` only,
    /// with the positions of each column's hits (`y == class`); one read of the rows for the
    /// whole group. Where the build can track them on the way (logits, no threshold), also
    /// each column's smallest score `> floors[f]` and its largest score, the value range of
    /// each later filter.
    ///
    /// With a threshold on logits, an entry is only exponentiated when its logit is within
    /// 1e-6 of `max + ln(eps / inv)`, the logit at which `p = eps`; the comparison itself is
    /// always made on the exact `p`.
    #[inline(always)]
    fn columns(
        &self,
        first: usize,
        width: usize,
        threshold: Option<f64>,
        floors: &[f64],
        columns: &mut Vec<Vec<f64>>,
    ) -> (Vec<Vec<usize>>, Option<Bounds>) {
        let last = (first + width).min(self.k);
        let width = last - first;
        let n = self.labels.len();
        // The caller's buffers are reused from group to group (no fresh pages per group).
        columns.resize_with(width, || Vec::with_capacity(n));
        let mut hits: Vec<Vec<usize>> = vec![Vec::new(); width];
        let bounds = match (self.kind, threshold) {
            (ScoreKind::Logits, None) => {
                // A block of rows at a time: the group's logits of each row are contiguous
                // (vectorised exp), then the block is transposed so each column receives a
                // contiguous run of ROW_BLOCK values. Scores are `>= +0.0` (no NaN, no -0.0),
                // so `<` is the total order; bounds are tracked across the group's row slice.
                const ROW_BLOCK: usize = 16;
                columns.iter_mut().for_each(|col| col.resize(n, 0.0));
                let mut tmp = vec![0.0f64; ROW_BLOCK * width];
                let mut lo = vec![vec![f64::INFINITY; width]; floors.len()];
                let mut hi = vec![0.0f64; width];
                for i0 in (0..n).step_by(ROW_BLOCK) {
                    let i1 = (i0 + ROW_BLOCK).min(n);
                    for (i, t) in (i0..i1).zip(tmp.chunks_exact_mut(width)) {
                        let (max, inv) = self.scales[i];
                        let row = &self.values[i * self.k + first..i * self.k + last];
                        if i + PREFETCH_ROWS < n {
                            let ahead = (i + PREFETCH_ROWS) * self.k;
                            prefetch(&self.values[ahead + first..ahead + last]);
                        }
                        for (t, &v) in t.iter_mut().zip(row) {
                            *t = exp_nonpositive(v.into() - max) * inv;
                        }
                        for (h, &t) in hi.iter_mut().zip(t.iter()) {
                            *h = if t > *h { t } else { *h };
                        }
                        for (lo, &floor) in lo.iter_mut().zip(floors) {
                            for (l, &t) in lo.iter_mut().zip(t.iter()) {
                                *l = if t > floor && t < *l { t } else { *l };
                            }
                        }
                    }
                    for (c, col) in columns.iter_mut().enumerate() {
                        for (r, x) in col[i0..i1].iter_mut().enumerate() {
                            *x = tmp[r * width + c];
                        }
                    }
                }
                for (i, &y) in self.labels.iter().enumerate() {
                    let y = y as usize;
                    if (first..last).contains(&y) {
                        hits[y - first].push(i);
                    }
                }
                Some(Bounds { lo, hi })
            }
            _ => {
                columns.iter_mut().for_each(Vec::clear);
                for i in 0..n {
                    let y = self.labels[i] as usize;
                    let floor = match (self.kind, threshold) {
                        (ScoreKind::Logits, Some(eps)) => {
                            let (max, inv) = self.scales[i];
                            max + (eps / inv).ln() - 1e-6
                        }
                        _ => f64::NEG_INFINITY,
                    };
                    let row = &self.values[i * self.k + first..i * self.k + last];
                    for (c, &v) in row.iter().enumerate() {
                        if v.into() < floor {
                            continue;
                        }
                        let s = self.probability(i, first + c);
                        if threshold.is_none_or(|eps| s > eps) {
                            if y == first + c {
                                hits[c].push(columns[c].len());
                            }
                            columns[c].push(s);
                        }
                    }
                }
                None
            }
        };
        (hits, bounds)
    }

    /// Adds the equal-mass ranges of classes `first .. first + width` to `parts[w]`, for
    /// each wanted threshold `wants[w]`: one column build (into `columns`, reused between
    /// calls), filtered per threshold. Inlined so a caller's [`dispatch`] compiles it for AVX2.
    ///
    /// [`dispatch`]: crate::kernels::dispatch
    #[inline(always)]
    pub(super) fn ranges(
        &self,
        first: usize,
        width: usize,
        wants: &[Option<f64>],
        parts: &mut [BinStats],
        columns: &mut Vec<Vec<f64>>,
    ) {
        let built = if wants.len() == 1 { wants[0] } else { None };
        // Every score is `> -1`: the floor of an unfiltered request.
        let floors: Vec<f64> = wants.iter().map(|w| w.unwrap_or(-1.0)).collect();
        let (hits, bounds) = self.columns(first, width, built, &floors, columns);
        let (mut scratch, mut kept, mut kept_hits) = (Vec::new(), Vec::new(), Vec::new());
        for (w, (want, part)) in wants.iter().zip(parts).enumerate() {
            for (c, j) in (first..first + columns.len()).enumerate() {
                let (values, hits) = match *want {
                    Some(eps) if built.is_none() => {
                        keep_above(&columns[c], &hits[c], eps, &mut kept, &mut kept_hits);
                        (&kept, &kept_hits)
                    }
                    _ => (&columns[c], &hits[c]),
                };
                match &bounds {
                    Some(b) if values.is_empty() => debug_assert!(b.hi[c] <= floors[w]),
                    Some(b) => accumulate_value_ranges_within(
                        part,
                        j,
                        values,
                        b.of(w, c),
                        hits,
                        &mut scratch,
                    ),
                    None => accumulate_value_ranges(part, j, values, hits, &mut scratch),
                }
            }
        }
    }
}

/// The scores `> eps` of `column` into `kept` (sample order) and their hits' new positions into
/// `kept_hits`; branch-free compaction between consecutive hits.
#[inline(always)]
fn keep_above(
    column: &[f64],
    hits: &[usize],
    eps: f64,
    kept: &mut Vec<f64>,
    kept_hits: &mut Vec<usize>,
) {
    kept.clear();
    kept.resize(column.len(), 0.0);
    kept_hits.clear();
    // Every score is written at `len`; only kept ones advance it.
    let mut len = 0;
    let mut prev = 0;
    for h in hits.iter().copied().chain([column.len()]) {
        for &s in &column[prev..h] {
            kept[len] = s;
            len += (s > eps) as usize;
        }
        if let Some(&s) = column.get(h).filter(|&&s| s > eps) {
            kept[len] = s;
            kept_hits.push(len);
            len += 1;
        }
        prev = h + 1;
    }
    kept.truncate(len);
}

#[cfg(test)]
mod tests {
    use super::keep_above;

    #[test]
    fn keep_above_filters_and_renumbers_hits() {
        let column = [0.5, 0.01, 0.2, 0.001, 0.3, 0.002];
        let (mut kept, mut hits) = (Vec::new(), Vec::new());
        keep_above(&column, &[1, 2, 5], 0.005, &mut kept, &mut hits);
        assert_eq!(kept, [0.5, 0.01, 0.2, 0.3]);
        assert_eq!(hits, [1, 2]);
        keep_above(&column, &[], 1.0, &mut kept, &mut hits);
        assert!(kept.is_empty() && hits.is_empty());
    }
}
