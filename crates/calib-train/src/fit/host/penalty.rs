//! [`AffineTerms`]: what an affine objective computes from its parameters alone, wherever its
//! rows live: the penalty of the full maps (its strengths, its value and gradient reduced over
//! the softmax's shift invariance, its diagonal curvature), the projection onto the feature
//! span, and the canonical parameters that make the reduced penalty the penalty itself.

use super::form::{AffineShape, HostForm};
use super::span::FeatureSpan;
use crate::fit::Regularisation;

/// The parameter-only terms of an affine objective on `K` classes.
#[derive(Debug, Clone)]
pub(crate) struct AffineTerms {
    /// K.
    pub k: usize,
    /// The family and its penalty.
    pub form: HostForm,
    /// The flat directions of an unpenalised full map (steps are kept off them).
    pub span: Option<FeatureSpan>,
}

impl AffineTerms {
    /// Number of parameters.
    pub fn n_params(&self) -> usize {
        self.form.shape.n_params(self.k)
    }

    /// Whether the objective is flat along directions no row can see: an unpenalised full map
    /// (a penalty curves them).
    pub fn may_have_flat_directions(form: HostForm) -> bool {
        form.shape == AffineShape::Full && !form.penalty.is_active()
    }

    /// Removes from the full-map step `step` its components along directions no row can see
    /// ([`FeatureSpan`]); a no-op when there are none or a penalty makes them curved.
    pub fn keep_in_span(&self, step: &mut [f64]) {
        if let Some(span) = &self.span {
            span.project(step);
        }
    }

    /// Adds the penalty's diagonal curvature to the NLL's Hessian diagonal `diag` (laid out as
    /// the parameters).
    pub fn add_penalty_diagonal(&self, diag: &mut [f64]) {
        if self.penalty_scales().is_none() {
            return;
        }
        let k = self.k;
        let (dw, db) = diag.split_at_mut(k * k);
        for (i, (row, bias)) in dw.chunks_exact_mut(k).zip(db).enumerate() {
            let (weights, on_bias) = self.penalty_diagonal(i);
            weights.into_iter().for_each(|(j, d)| row[j] += d);
            *bias += on_bias;
        }
    }

    /// `(scale on W, scale on b, off-diagonal only)` of the penalty, `None` when there is none.
    pub fn penalty_scales(&self) -> Option<(f64, f64, bool)> {
        let kf = self.k as f64;
        match (self.form.shape, self.form.penalty) {
            (AffineShape::Diagonal, _) | (_, Regularisation::None) => None,
            (_, Regularisation::Odir { lambda, mu }) => {
                Some((lambda / (kf * (kf - 1.0)).max(1.0), mu / kf, true))
            }
            (_, Regularisation::L2 { lambda }) => {
                let s = lambda / (kf * (kf + 1.0));
                Some((s, s, false))
            }
        }
    }

    /// The diagonal of the (unreduced) penalty's Hessian in row `i` of `[W | b]`: `(j,
    /// d^2 / dW_ij^2)` for each penalised `j`, and `d^2 / db_i^2`; nothing without a penalty.
    /// The preconditioners use it (the reduced penalty also couples entries through the shift).
    pub fn penalty_diagonal(&self, i: usize) -> (Vec<(usize, f64)>, f64) {
        let Some((scale_w, scale_b, off_diagonal)) = self.penalty_scales() else {
            return (Vec::new(), 0.0);
        };
        let weights =
            (0..self.k).filter(|&j| !(off_diagonal && j == i)).map(|j| (j, 2.0 * scale_w));
        (weights.collect(), 2.0 * scale_b)
    }

    /// Adds the gradient of the penalty *reduced over the softmax's invariance* to `grad` and
    /// returns its value.
    ///
    /// The NLL does not change under `W -> W + 1 v^T` (every calibrated logit of a row moves by
    /// `v · x`) nor `b -> b + c 1`; the penalty does, by a tiny amount (its strengths are divided
    /// by `K (K - 1)`), which leaves `K + 1` nearly flat directions. Minimising the penalty over
    /// `v` and `c` in closed form makes them exactly flat; it is exact and cheap, so the
    /// optimiser never has to resolve those directions:
    ///
    /// ```text
    /// ODIR: lambda/(K(K-1)) sum_j sum_{i != j} (W_ij - m_j)^2 + mu/K sum_k (b_k - mean b)^2,
    ///       m_j = mean_{i != j} W_ij
    /// L2:   lambda/(K(K+1)) [ sum_j sum_i (W_ij - m_j)^2 + sum_k (b_k - mean b)^2 ],
    ///       m_j = mean_i W_ij
    /// ```
    /// [`Self::canonical`] then applies the minimising shift, which gives parameters whose
    /// penalty (`docs/conventions.md`, "Calibrators"; `AffineMap::penalty`) equals this reduced
    /// one, with the same NLL, objective and gradient.
    pub fn add_penalty(&self, params: &[f64], grad: &mut [f64]) -> f64 {
        let Some((scale_w, scale_b, off_diagonal)) = self.penalty_scales() else {
            return 0.0;
        };
        let k = self.k;
        let kf = k as f64;
        let (w, b) = params.split_at(k * k);
        let (gw, gb) = grad.split_at_mut(k * k);
        let shift = column_shift(w, k, off_diagonal);
        let mut penalty = 0.0;
        for i in 0..k {
            for j in 0..k {
                if off_diagonal && i == j {
                    continue;
                }
                let v = w[i * k + j] - shift[j];
                penalty += scale_w * v * v;
                gw[i * k + j] += 2.0 * scale_w * v;
            }
        }
        let mean_b = b.iter().sum::<f64>() / kf;
        for (g, &v) in gb.iter_mut().zip(b) {
            let v = v - mean_b;
            penalty += scale_b * v * v;
            *g += 2.0 * scale_b * v;
        }
        penalty
    }

    /// The parameters equivalent to `params` (same calibrated probabilities) in a fixed
    /// representative of the softmax's shift invariance.
    ///
    /// With a penalty: the one whose penalty is the reduced one of [`Self::add_penalty`]
    /// (`W - 1 m^T`, `b - mean(b)`), the unique minimiser of the original objective. Without
    /// one the NLL's minimisers form a family; the representative keeps the invariant
    /// component of `start` (column sums of `W`, the sum of `b`), as the plain gradient path
    /// does (its steps are orthogonal to those directions), so both engines return the same
    /// parameters. The Jacobi-scaled steps of the host L-BFGS are not orthogonal to them.
    /// Likewise the part of the path along directions no row can see is dropped
    /// ([`super::span::FeatureSpan`]), as the plain gradient path never takes it.
    pub fn canonical(&self, mut params: Vec<f64>, start: &[f64]) -> Vec<f64> {
        let k = self.k;
        let kf = k as f64;
        let mut moved: Vec<f64> = params.iter().zip(start).map(|(x, s)| x - s).collect();
        self.keep_in_span(&mut moved);
        params.iter_mut().zip(start.iter().zip(&moved)).for_each(|(x, (s, m))| *x = s + m);
        let split = params.len() - k;
        // `Some(off_diagonal)` with a penalty, `None` without.
        let penalised = self.penalty_scales().map(|(_, _, off_diagonal)| off_diagonal);
        let (w, b) = params.split_at_mut(split);
        let (w0, b0) = start.split_at(split);
        let mean_b = match penalised {
            None => b.iter().zip(b0).map(|(a, b)| a - b).sum::<f64>() / kf,
            Some(_) => b.iter().sum::<f64>() / kf,
        };
        b.iter_mut().for_each(|v| *v -= mean_b);
        if self.form.shape == AffineShape::Full {
            let shift = match penalised {
                None => {
                    let (now, then) = (column_shift(w, k, false), column_shift(w0, k, false));
                    now.iter().zip(&then).map(|(a, b)| a - b).collect()
                }
                Some(off_diagonal) => column_shift(w, k, off_diagonal),
            };
            for row in w.chunks_exact_mut(k) {
                row.iter_mut().zip(&shift).for_each(|(v, m)| *v -= m);
            }
        }
        params
    }
}

/// Per column `j` of the row-major `K x K` weight: the mean of its off-diagonal entries
/// (`off_diagonal`) or of all its entries.
fn column_shift(w: &[f64], k: usize, off_diagonal: bool) -> Vec<f64> {
    let mut sum = vec![0.0; k];
    for (i, row) in w.chunks_exact(k).enumerate() {
        for (j, (s, &v)) in sum.iter_mut().zip(row).enumerate() {
            if !(off_diagonal && i == j) {
                *s += v;
            }
        }
    }
    let count = if off_diagonal { (k - 1).max(1) } else { k } as f64;
    sum.iter().map(|s| s / count).collect()
}
