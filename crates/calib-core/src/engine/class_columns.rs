//! Class columns of the probability matrix, rebuilt from the rows for the adaptive ranges.
//!
//! The fused row pass keeps, per row, `(max logit, 1 / sum exp)`; a column is then
//! `exp(z_ij - max_i) * inv_i`, the row pass's own expression, so it is bit-identical without
//! an `[N, K]` copy. Classes are rebuilt 16 at a time (one cache line of f32 logits per row).

use crate::binning::accumulate_value_ranges;
use crate::input::ScoreKind;
use crate::kernels::{Score, dispatch, exp_nonpositive};
use crate::stats::BinStats;

/// Classes recomputed together (one cache line of f32 logits).
pub(super) const CLASS_GROUP: usize = 16;

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

    /// Columns `first .. first + CLASS_GROUP` in sample order, the scores `> threshold` only,
    /// with the positions of each column's hits (`y == class`); one read of the rows for the
    /// whole group.
    ///
    /// With a threshold on logits, an entry is only exponentiated when its logit is within
    /// 1e-6 of `max + ln(eps / inv)`, the logit at which `p = eps`; the comparison itself is
    /// always made on the exact `p`.
    #[inline(always)]
    fn columns(&self, first: usize, threshold: Option<f64>) -> (Vec<Vec<f64>>, Vec<Vec<usize>>) {
        let last = (first + CLASS_GROUP).min(self.k);
        let width = last - first;
        let n = self.labels.len();
        let mut columns: Vec<Vec<f64>> = vec![Vec::with_capacity(n); width];
        let mut hits: Vec<Vec<usize>> = vec![Vec::new(); width];
        match (self.kind, threshold) {
            (ScoreKind::Logits, None) => {
                // Row by row, the group's logits contiguous (vectorised), written column-wise.
                columns.iter_mut().for_each(|col| col.resize(n, 0.0));
                let mut tmp = [0.0f64; CLASS_GROUP];
                for (i, &(max, inv)) in self.scales.iter().enumerate() {
                    let row = &self.values[i * self.k + first..i * self.k + last];
                    for (t, &v) in tmp.iter_mut().zip(row) {
                        *t = exp_nonpositive(v.into() - max) * inv;
                    }
                    for (col, &t) in columns.iter_mut().zip(&tmp) {
                        col[i] = t;
                    }
                }
                for (i, &y) in self.labels.iter().enumerate() {
                    let y = y as usize;
                    if (first..last).contains(&y) {
                        hits[y - first].push(i);
                    }
                }
            }
            _ => {
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
            }
        }
        (columns, hits)
    }

    /// Adds the equal-mass ranges of classes `first .. first + CLASS_GROUP` to `parts[w]`, for
    /// each wanted threshold `wants[w]`: one column build, filtered per threshold.
    pub(super) fn ranges(&self, first: usize, wants: &[Option<f64>], parts: &mut [BinStats]) {
        dispatch(
            #[inline(always)]
            || self.ranges_of(first, wants, parts),
        )
    }

    #[inline(always)]
    fn ranges_of(&self, first: usize, wants: &[Option<f64>], parts: &mut [BinStats]) {
        let built = if wants.len() == 1 { wants[0] } else { None };
        let (columns, hits) = self.columns(first, built);
        let (mut scratch, mut kept, mut kept_hits) = (Vec::new(), Vec::new(), Vec::new());
        for (want, part) in wants.iter().zip(parts) {
            for (c, j) in (first..first + columns.len()).enumerate() {
                match *want {
                    Some(eps) if built.is_none() => {
                        kept.clear();
                        kept_hits.clear();
                        let mut next_hit = hits[c].iter().copied().peekable();
                        for (i, &s) in columns[c].iter().enumerate() {
                            let hit = next_hit.next_if_eq(&i).is_some();
                            if s > eps {
                                if hit {
                                    kept_hits.push(kept.len());
                                }
                                kept.push(s);
                            }
                        }
                        accumulate_value_ranges(part, j, &kept, &kept_hits, &mut scratch);
                    }
                    _ => accumulate_value_ranges(part, j, &columns[c], &hits[c], &mut scratch),
                }
            }
        }
    }
}
