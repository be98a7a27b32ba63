//! The fused host objective of the affine calibration maps: mean NLL of
//! `softmax(x W^T + b)` (full `W`: matrix scaling, Dirichlet calibration) or of
//! `softmax(w ⊙ x + b)` (diagonal: vector scaling), plus the penalty, with its gradient in one
//! pass over the rows.
//!
//! ```text
//! s_i = W x_i + b,   log p_i = s_i - logsumexp(s_i),   nll = -(1/N) sum_i log p_i[y_i]
//! g_i = p_i - e_{y_i}
//! dnll/dW = (1/N) sum_i g_i x_i^T,   dnll/db = (1/N) sum_i g_i,   (diagonal: dw_k = (1/N) sum_i g_ik x_ik)
//! ```
//! With sample weights every row's terms (here and in the Hessian) are weighted by `w_i` and
//! `N` becomes `W = sum_i w_i`.
//!
//! The autodiff path (`crate::fit::objective`) computes the same function and stays the
//! reference the tests compare this one against; this one skips burn's graph and its
//! per-evaluation allocations, so an evaluation of a full map costs about its two matrix
//! products (docs/benchmarks.md compares the two paths).

use std::thread;

use calib_kernels::{dispatch, exp_shifted, max_and_argmax};

use super::form::{AffineShape, HostForm};
use super::gemm::{MatRef, gemm};
use super::penalty::AffineTerms;
use super::span::FeatureSpan;
use crate::fit::Point;
use crate::fit::host_rows::HostRows;

/// Rows per block: the logits of one block stay in L1/L2 between the two products.
pub(super) const BLOCK_ROWS: usize = 128;
/// Fewer feature values than this per thread run on one thread.
const MIN_VALUES_PER_THREAD: usize = 100_000;

/// Objective value and mean NLL at one point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Value {
    /// Mean NLL plus penalty.
    pub objective: f64,
    /// Mean NLL alone.
    pub nll: f64,
}

impl Value {
    /// This value with the gradient's max-norm, as the fit records and reports it.
    pub fn at(self, grad_norm: f64) -> Point {
        Point { loss: self.objective, nll: self.nll, grad_norm }
    }
}

/// The objective of `form` on `rows`.
pub(crate) struct AffineObjective<'a> {
    pub(super) rows: &'a HostRows,
    /// The rows' total weight W (N without weights), summed once: every mean divides by it.
    pub(super) total: f64,
    /// Its parameter-only terms (penalty, span).
    pub(crate) terms: AffineTerms,
    threads: usize,
}

impl<'a> AffineObjective<'a> {
    /// The objective on `rows`, with as many threads as the machine has (and the size merits).
    pub fn new(rows: &'a HostRows, form: HostForm) -> Self {
        let cores = calib_kernels::threads();
        let by_size = (rows.n * rows.k / MIN_VALUES_PER_THREAD).max(1);
        let threads = cores.min(by_size).min(rows.n.max(1));
        let flat = AffineTerms::may_have_flat_directions(form);
        let span = if flat { FeatureSpan::of(rows) } else { None };
        let total = rows.total();
        Self { rows, total, terms: AffineTerms { k: rows.k, form, span }, threads }
    }

    /// Number of parameters.
    pub fn n_params(&self) -> usize {
        self.terms.n_params()
    }

    /// Evaluates at `params`, writing the gradient into `grad` (same length).
    ///
    /// The value is not finite when a row's logits overflow; callers treat that as a rejected
    /// point.
    pub fn evaluate(&self, params: &[f64], grad: &mut [f64]) -> Value {
        self.evaluate_keeping(params, grad, None)
    }

    /// [`Self::evaluate`], also writing the calibrated probabilities (`N x K`, row-major) into
    /// `probs` when given (the Hessian products of [`super::hessian`] need them).
    pub fn evaluate_keeping(
        &self,
        params: &[f64],
        grad: &mut [f64],
        probs: Option<&mut [f64]>,
    ) -> Value {
        assert_eq!(params.len(), self.n_params(), "parameter count");
        assert_eq!(grad.len(), params.len(), "gradient length");
        let (nll, sum) = self.reduce_rows(params.len(), probs, |lo, hi, probs| {
            dispatch(
                #[inline(always)]
                || self.partial_kernel(params, lo, hi, probs, true),
            )
        });
        let inv_n = 1.0 / self.total;
        grad.iter_mut().zip(&sum).for_each(|(g, s)| *g = s * inv_n);
        let nll = nll * inv_n;
        let penalty = self.terms.add_penalty(params, grad);
        Value { objective: nll + penalty, nll }
    }

    /// Runs `part(lo, hi, out_rows)` over the threads' row ranges and sums the `(scalar,
    /// vector of length len)` results in a fixed order (the same bits on every run).
    /// `out_rows`, when given, holds `K` values per row; each part gets its rows' slice.
    pub(super) fn reduce_rows<F>(
        &self,
        len: usize,
        out_rows: Option<&mut [f64]>,
        part: F,
    ) -> (f64, Vec<f64>)
    where
        F: Fn(usize, usize, Option<&mut [f64]>) -> (f64, Vec<f64>) + Sync,
    {
        let (n, k) = (self.rows.n, self.rows.k);
        let chunk = n.div_ceil(self.threads).max(1);
        let mut outs: Vec<Option<&mut [f64]>> = match out_rows {
            Some(out) => {
                assert_eq!(out.len(), n * k, "per-row output has the wrong size");
                out.chunks_mut(chunk * k).map(Some).collect()
            }
            None => Vec::new(),
        };
        outs.resize_with(self.threads, || None);
        let partials: Vec<(f64, Vec<f64>)> = if self.threads == 1 {
            vec![part(0, n, outs.pop().flatten())]
        } else {
            thread::scope(|scope| {
                let part = &part;
                let handles: Vec<_> = outs
                    .into_iter()
                    .enumerate()
                    .map(|(t, out)| {
                        let (lo, hi) = ((t * chunk).min(n), ((t + 1) * chunk).min(n));
                        scope.spawn(move || part(lo, hi, out))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("objective thread panicked")).collect()
            })
        };
        let mut total = 0.0;
        let mut sum = vec![0.0; len];
        for (scalar, vector) in &partials {
            total += scalar;
            sum.iter_mut().zip(vector).for_each(|(s, v)| *s += v);
        }
        (total, sum)
    }

    /// The mean NLL alone at `params` (no gradient: held-out scores).
    pub fn nll(&self, params: &[f64]) -> f64 {
        assert_eq!(params.len(), self.n_params(), "parameter count");
        let (nll, _) = self.reduce_rows(0, None, |lo, hi, _| {
            dispatch(
                #[inline(always)]
                || self.partial_kernel(params, lo, hi, None, false),
            )
        });
        nll * (1.0 / self.total)
    }

    /// Summed NLL and (`with_gradient`) summed gradient over rows `lo..hi`, and their
    /// probabilities into `probs`, which then covers exactly those rows.
    #[inline(always)]
    fn partial_kernel(
        &self,
        params: &[f64],
        lo: usize,
        hi: usize,
        mut probs: Option<&mut [f64]>,
        with_gradient: bool,
    ) -> (f64, Vec<f64>) {
        let k = self.rows.k;
        let (weight, bias) = params.split_at(params.len() - k);
        let mut grad = vec![0.0; params.len()];
        let (grad_w, grad_b) = grad.split_at_mut(params.len() - k);
        let mut logits = vec![0.0; BLOCK_ROWS * k];
        let mut exps = vec![0.0; k];
        let mut nll = 0.0;
        for (start, x) in self.blocks(lo, hi) {
            let rows = x.len() / k;
            let s = &mut logits[..rows * k];
            self.block_logits(weight, bias, x, s);
            // Log-softmax, NLL and g = p - e_y, in place.
            for (r, srow) in s.chunks_exact_mut(k).enumerate() {
                let (y, w) = (self.rows.labels[start + r], self.rows.weight(start + r));
                let (max, _) = max_and_argmax(&*srow);
                let total = exp_shifted(&*srow, max, &mut exps);
                let lse = max + total.ln();
                nll += w * (lse - srow[y]);
                if !with_gradient {
                    continue;
                }
                let inv = 1.0 / total;
                for (v, &e) in srow.iter_mut().zip(&exps) {
                    *v = e * inv;
                }
                if let Some(probs) = probs.as_deref_mut() {
                    probs[(start + r - lo) * k..][..k].copy_from_slice(srow);
                }
                srow[y] -= 1.0;
                if w != 1.0 {
                    srow.iter_mut().for_each(|g| *g *= w);
                }
                for (gb, &g) in grad_b.iter_mut().zip(srow.iter()) {
                    *gb += g;
                }
            }
            match self.terms.form.shape {
                _ if !with_gradient => {}
                AffineShape::Full => {
                    // grad_W += G^T X
                    let g = MatRef::row_major(s, rows, k).t();
                    gemm(g, MatRef::row_major(x, rows, k), 1.0, grad_w);
                }
                AffineShape::Diagonal => {
                    for (grow, xrow) in s.chunks_exact(k).zip(x.chunks_exact(k)) {
                        for ((gw, &g), &xv) in grad_w.iter_mut().zip(grow).zip(xrow) {
                            *gw += g * xv;
                        }
                    }
                }
            }
        }
        (nll, grad)
    }

    /// Row blocks of at most [`BLOCK_ROWS`] rows in `lo..hi`: `(first row, row-major
    /// features of the block)`.
    pub(super) fn blocks(
        &self,
        lo: usize,
        hi: usize,
    ) -> impl Iterator<Item = (usize, &'a [f64])> + 'a {
        let (k, features) = (self.rows.k, self.rows.features.as_slice());
        (lo..hi).step_by(BLOCK_ROWS).map(move |start| {
            let end = (start + BLOCK_ROWS).min(hi);
            (start, &features[start * k..end * k])
        })
    }

    /// Calibrated logits `s = x W^T + b` (or `w ⊙ x + b`) of the row-major block `x`.
    #[inline(always)]
    pub(super) fn block_logits(&self, weight: &[f64], bias: &[f64], x: &[f64], s: &mut [f64]) {
        let k = self.rows.k;
        let rows = x.len() / k;
        match self.terms.form.shape {
            AffineShape::Full => {
                let w = MatRef::row_major(weight, k, k);
                gemm(MatRef::row_major(x, rows, k), w.t(), 0.0, s);
                for row in s.chunks_exact_mut(k) {
                    row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
                }
            }
            AffineShape::Diagonal => {
                for (srow, xrow) in s.chunks_exact_mut(k).zip(x.chunks_exact(k)) {
                    for ((v, &xv), (&w, &b)) in
                        srow.iter_mut().zip(xrow).zip(weight.iter().zip(bias))
                    {
                        *v = xv * w + b;
                    }
                }
            }
        }
    }

    /// The diagonal of the objective's Hessian at `params` (NLL part: `(1/N) sum_i
    /// p_ik (1 - p_ik) x~_ij^2`; plus the penalty's), a Jacobi preconditioner for L-BFGS.
    pub fn hessian_diagonal(&self, params: &[f64]) -> Vec<f64> {
        let (_, mut diag) = self.reduce_rows(params.len(), None, |lo, hi, _| {
            dispatch(
                #[inline(always)]
                || (0.0, self.hessian_diagonal_kernel(params, lo, hi)),
            )
        });
        let inv_n = 1.0 / self.total;
        diag.iter_mut().for_each(|d| *d *= inv_n);
        self.terms.add_penalty_diagonal(&mut diag);
        diag
    }

    /// The NLL part of [`Self::hessian_diagonal`] summed over rows `lo..hi`.
    #[inline(always)]
    fn hessian_diagonal_kernel(&self, params: &[f64], lo: usize, hi: usize) -> Vec<f64> {
        let k = self.rows.k;
        let (weight, bias) = params.split_at(params.len() - k);
        let mut diag = vec![0.0; params.len()];
        let mut logits = vec![0.0; BLOCK_ROWS * k];
        let mut squares = vec![0.0; BLOCK_ROWS * k];
        let mut exps = vec![0.0; k];
        for (start, x) in self.blocks(lo, hi) {
            let rows = x.len() / k;
            let s = &mut logits[..rows * k];
            self.block_logits(weight, bias, x, s);
            for (r, srow) in s.chunks_exact_mut(k).enumerate() {
                let w = self.rows.weight(start + r);
                let (max, _) = max_and_argmax(&*srow);
                let total = exp_shifted(&*srow, max, &mut exps);
                for (v, &e) in srow.iter_mut().zip(&exps) {
                    let p = e / total;
                    *v = w * p * (1.0 - p);
                }
            }
            let (dw, db) = diag.split_at_mut(params.len() - k);
            for row in s.chunks_exact(k) {
                db.iter_mut().zip(row).for_each(|(d, q)| *d += q);
            }
            let sq = &mut squares[..rows * k];
            sq.iter_mut().zip(x).for_each(|(o, v)| *o = v * v);
            match self.terms.form.shape {
                AffineShape::Full => {
                    gemm(
                        MatRef::row_major(s, rows, k).t(),
                        MatRef::row_major(sq, rows, k),
                        1.0,
                        dw,
                    );
                }
                AffineShape::Diagonal => {
                    for (qrow, xrow) in s.chunks_exact(k).zip(sq.chunks_exact(k)) {
                        for ((d, q), x2) in dw.iter_mut().zip(qrow).zip(xrow) {
                            *d += q * x2;
                        }
                    }
                }
            }
        }
        diag
    }
}
