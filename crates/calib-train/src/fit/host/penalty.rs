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
        let Some(scales) = self.penalty_scales() else { return };
        let k = self.k;
        let (dw, db) = diag.split_at_mut(diag.len() - k);
        if self.form.shape == AffineShape::Diagonal {
            dw.iter_mut().for_each(|d| *d += 2.0 * scales.diagonal);
            db.iter_mut().for_each(|d| *d += 2.0 * scales.bias);
            return;
        }
        for (i, (row, bias)) in dw.chunks_exact_mut(k).zip(db).enumerate() {
            let (weights, on_bias) = self.penalty_diagonal(i);
            weights.into_iter().for_each(|(j, d)| row[j] += d);
            *bias += on_bias;
        }
    }

    /// The penalty's strength on each parameter group, `None` when there is none.
    pub fn penalty_scales(&self) -> Option<PenaltyScales> {
        let kf = self.k as f64;
        let reduced = |diagonal, off_diagonal, bias, only_off| PenaltyScales {
            diagonal,
            off_diagonal,
            bias,
            centre: 0.0,
            reduction: Some(only_off),
        };
        match (self.form.shape, self.form.penalty) {
            (_, Regularisation::None) => None,
            (shape, Regularisation::Ridge { intercept, diagonal, off_diagonal }) => {
                let off_diagonal = if shape == AffineShape::Full { off_diagonal } else { 0.0 };
                Some(PenaltyScales {
                    diagonal,
                    off_diagonal,
                    bias: intercept,
                    centre: 1.0,
                    reduction: None,
                })
            }
            (AffineShape::Diagonal, _) => None,
            (_, Regularisation::Odir { lambda, mu }) => {
                Some(reduced(0.0, lambda / (kf * (kf - 1.0)).max(1.0), mu / kf, true))
            }
            (_, Regularisation::L2 { lambda }) => {
                let s = lambda / (kf * (kf + 1.0));
                Some(reduced(s, s, s, false))
            }
        }
    }

    /// Whether the objective keeps the NLL's shift invariance (`theta_k -> theta_k + v` for
    /// every class together): no penalty, or one reduced over it.
    pub fn is_shift_invariant(&self) -> bool {
        self.form.penalty.is_shift_invariant()
    }

    /// The diagonal of the (unreduced) penalty's Hessian in row `i` of `[W | b]` of a full
    /// map: `(j, d^2 / dW_ij^2)` for each `j`, and `d^2 / db_i^2`; nothing without a penalty.
    /// The preconditioners use it (the reduced penalty also couples entries through the shift).
    pub fn penalty_diagonal(&self, i: usize) -> (Vec<(usize, f64)>, f64) {
        let Some(scales) = self.penalty_scales() else {
            return (Vec::new(), 0.0);
        };
        let weights = (0..self.k).map(|j| (j, 2.0 * scales.weight(i, j)));
        (weights.collect(), 2.0 * scales.bias)
    }

    /// Adds the penalty's gradient at `params` to `grad` and returns its value; ODIR and L2
    /// *reduced over the softmax's invariance*.
    ///
    /// The NLL does not change under `W -> W + 1 v^T` (every calibrated logit of a row moves by
    /// `v · x`) nor `b -> b + c 1`; ODIR and L2 do, by a tiny amount (their strengths are
    /// divided by `K (K - 1)`), which leaves `K + 1` nearly flat directions. Minimising them
    /// over `v` and `c` in closed form makes those directions exactly flat; it is exact and
    /// cheap, so the optimiser never has to resolve them:
    ///
    /// ```text
    /// ODIR: lambda/(K(K-1)) sum_j sum_{i != j} (W_ij - m_j)^2 + mu/K sum_k (b_k - mean b)^2,
    ///       m_j = mean_{i != j} W_ij
    /// L2:   lambda/(K(K+1)) [ sum_j sum_i (W_ij - m_j)^2 + sum_k (b_k - mean b)^2 ],
    ///       m_j = mean_i W_ij
    /// ```
    /// [`Self::canonical`] then applies the minimising shift, which gives parameters whose
    /// penalty (`docs/conventions.md`, "Calibrators"; `AffineMap::penalty`) equals this reduced
    /// one, with the same NLL, objective and gradient. The ridge towards the identity curves
    /// those directions with strengths of order `K / N`, and is added as it is.
    pub fn add_penalty(&self, params: &[f64], grad: &mut [f64]) -> f64 {
        match self.penalty_scales() {
            None => 0.0,
            Some(scales) if scales.reduction.is_some() => self.add_reduced(scales, params, grad),
            Some(scales) => self.add_ridge(scales, scales.centre, params, grad),
        }
    }

    /// Adds the penalty's Hessian times `v` to `out` (the penalty is quadratic).
    pub fn add_penalty_product(&self, v: &[f64], out: &mut [f64]) {
        match self.penalty_scales() {
            None => {}
            // A homogeneous quadratic: its Hessian times v is its gradient at v.
            Some(scales) if scales.reduction.is_some() => {
                self.add_reduced(scales, v, out);
            }
            Some(scales) => {
                self.add_ridge(scales, 0.0, v, out);
            }
        }
    }

    /// The reduced ODIR or L2 penalty (see [`Self::add_penalty`]) of a full map.
    fn add_reduced(&self, scales: PenaltyScales, params: &[f64], grad: &mut [f64]) -> f64 {
        let k = self.k;
        let kf = k as f64;
        let off_diagonal = scales.reduction == Some(true);
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
                penalty += scales.off_diagonal * v * v;
                gw[i * k + j] += 2.0 * scales.off_diagonal * v;
            }
        }
        let mean_b = b.iter().sum::<f64>() / kf;
        for (g, &v) in gb.iter_mut().zip(b) {
            let v = v - mean_b;
            penalty += scales.bias * v * v;
            *g += 2.0 * scales.bias * v;
        }
        penalty
    }

    /// The ridge `sum scale (theta - centre)^2` with the diagonal weights centred on `centre`
    /// (full or diagonal map).
    fn add_ridge(
        &self,
        scales: PenaltyScales,
        centre: f64,
        params: &[f64],
        grad: &mut [f64],
    ) -> f64 {
        let k = self.k;
        let split = params.len() - k;
        let (w, b) = params.split_at(split);
        let (gw, gb) = grad.split_at_mut(split);
        let mut penalty = 0.0;
        let mut add = |scale: f64, v: f64, g: &mut f64| {
            penalty += scale * v * v;
            *g += 2.0 * scale * v;
        };
        for (index, (&x, g)) in w.iter().zip(gw).enumerate() {
            let (i, j) = match self.form.shape {
                AffineShape::Full => (index / k, index % k),
                AffineShape::Diagonal => (index, index),
            };
            let at = if i == j { centre } else { 0.0 };
            add(scales.weight(i, j), x - at, g);
        }
        for (&x, g) in b.iter().zip(gb) {
            add(scales.bias, x, g);
        }
        penalty
    }

    /// The parameters equivalent to `params` (same calibrated probabilities) in a fixed
    /// representative of the softmax's shift invariance.
    ///
    /// With a reduced penalty: the one whose penalty is the reduced one of
    /// [`Self::add_penalty`] (`W - 1 m^T`, `b - mean(b)`), the unique minimiser of the original
    /// objective. Without one the NLL's minimisers form a family; the representative keeps the
    /// invariant component of `start` (column sums of `W`, the sum of `b`), as the plain
    /// gradient path does (its steps are orthogonal to those directions), so both engines
    /// return the same parameters. The Jacobi-scaled steps of the host L-BFGS are not
    /// orthogonal to them. The ridge pins every group it penalises (those are left as they
    /// are) and treats an unpenalised one as no penalty does. Likewise the part of the path
    /// along directions no row can see is dropped ([`super::span::FeatureSpan`]), as the
    /// plain gradient path never takes it.
    pub fn canonical(&self, mut params: Vec<f64>, start: &[f64]) -> Vec<f64> {
        let k = self.k;
        let kf = k as f64;
        let mut moved: Vec<f64> = params.iter().zip(start).map(|(x, s)| x - s).collect();
        self.keep_in_span(&mut moved);
        params.iter_mut().zip(start.iter().zip(&moved)).for_each(|(x, (s, m))| *x = s + m);
        let split = params.len() - k;
        let (bias_rep, weight_rep) = self.representatives();
        let (w, b) = params.split_at_mut(split);
        let (w0, b0) = start.split_at(split);
        let mean_b = match bias_rep {
            Representative::KeepStart => b.iter().zip(b0).map(|(a, b)| a - b).sum::<f64>() / kf,
            Representative::Reduced { .. } => b.iter().sum::<f64>() / kf,
            Representative::Unique => 0.0,
        };
        b.iter_mut().for_each(|v| *v -= mean_b);
        if self.form.shape == AffineShape::Full {
            let shift = match weight_rep {
                Representative::KeepStart => {
                    let (now, then) = (column_shift(w, k, false), column_shift(w0, k, false));
                    now.iter().zip(&then).map(|(a, b)| a - b).collect()
                }
                Representative::Reduced { off_diagonal } => column_shift(w, k, off_diagonal),
                Representative::Unique => vec![0.0; k],
            };
            for row in w.chunks_exact_mut(k) {
                row.iter_mut().zip(&shift).for_each(|(v, m)| *v -= m);
            }
        }
        params
    }

    /// How [`Self::canonical`] picks the intercepts and the weights.
    fn representatives(&self) -> (Representative, Representative) {
        match self.penalty_scales() {
            None => (Representative::KeepStart, Representative::KeepStart),
            Some(PenaltyScales { reduction: Some(off_diagonal), .. }) => {
                let reduced = Representative::Reduced { off_diagonal };
                (reduced, reduced)
            }
            Some(s) => {
                let pinned = |on: bool| {
                    if on { Representative::Unique } else { Representative::KeepStart }
                };
                (pinned(s.bias > 0.0), pinned(s.diagonal > 0.0 || s.off_diagonal > 0.0))
            }
        }
    }
}

/// The strengths of a penalty per parameter group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PenaltyScales {
    /// On each diagonal weight (`W_kk`, or `w_k` of a diagonal map).
    pub diagonal: f64,
    /// On each off-diagonal weight.
    pub off_diagonal: f64,
    /// On each intercept.
    pub bias: f64,
    /// What the diagonal weights are pulled towards (1 for the ridge, 0 otherwise).
    pub centre: f64,
    /// `Some(off-diagonal only)` for a penalty reduced over the shift invariance (ODIR: true,
    /// L2: false); `None` for the ridge.
    pub reduction: Option<bool>,
}

impl PenaltyScales {
    /// The strength on `W_ij`.
    pub fn weight(&self, i: usize, j: usize) -> f64 {
        if i == j { self.diagonal } else { self.off_diagonal }
    }
}

/// How [`AffineTerms::canonical`] fixes a parameter group along the shift invariance.
#[derive(Debug, Clone, Copy)]
enum Representative {
    /// Unpenalised: keeps the start's invariant component.
    KeepStart,
    /// Minimises the reduced penalty.
    Reduced { off_diagonal: bool },
    /// Penalised without reduction: already unique.
    Unique,
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
