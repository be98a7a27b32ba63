//! Hessian-vector products of a wide full map in f32 (`NarrowRows`): the two matrix products
//! of [`AffineObjective::hessian_product`] on an f32 copy of the column-centred features, the
//! per-row terms and every sum across row blocks in f64.
//!
//! With `m` the features' column means and `d_i = x_i - m` (stored in f32), the product's
//! two halves are, exactly,
//!
//! ```text
//! u_i = V x_i + c = V d_i + (V m + c)          (V m + c once per product, in f64)
//! sum_i r_i x_i^T = sum_i r_i d_i^T + (sum_i r_i) m^T
//! ```
//!
//! so f32 rounds the centred values, not the large common offset that log-probabilities share
//! (about `ln(1 / K)`), whose rounding would not cancel in `u - p · u`.
//!
//! Newton-CG only needs its products to be close: conjugate gradients stop at a relative
//! residual `eta = min(0.5, sqrt |g|)` (at least about 3e-4 at the tolerances calib uses),
//! while an f32 product is within about `sqrt(K) 2^-24` (2e-6 at K = 1,000) of the f64 one
//! in relative terms. The objective, the gradient and so the stopping test stay f64, so the
//! optimum reached is the f64 fit's; only the path to it can differ. f32 products take half
//! the time of f64 ones (twice the lanes per instruction, half the bytes), and at
//! `K >= 64` the products are most of a structured-matrix-scaling fit.
//!
//! Rows come in blocks of [`NARROW_BLOCK_ROWS`]: each block's `K x K` product is added into
//! the f64 sum once, which at `K = 1,000` costs as much as a 128-row block's products, so the
//! blocks are long.

use calib_kernels::{dispatch, lane_dot};

use super::affine::AffineObjective;
use super::form::AffineShape;
use super::gemm::{MatRef, gemm};

/// Rows per block of the f32 products.
const NARROW_BLOCK_ROWS: usize = 1024;

/// The column-centred features of a full map in f32, for [`AffineObjective::
/// narrow_hessian_product`].
pub(crate) struct NarrowRows {
    /// `x_i - m`, row-major `N x K`, rounded to f32.
    centred: Vec<f32>,
    /// `m`, the features' column means.
    means: Vec<f64>,
}

impl AffineObjective<'_> {
    /// The rows' features, centred and rounded to f32.
    pub fn narrow_rows(&self) -> NarrowRows {
        let (n, k) = (self.rows.n, self.rows.k);
        let mut means = vec![0.0; k];
        for row in self.rows.features.chunks_exact(k) {
            means.iter_mut().zip(row).for_each(|(m, x)| *m += x);
        }
        means.iter_mut().for_each(|m| *m /= n.max(1) as f64);
        let centred = (self.rows.features.chunks_exact(k))
            .flat_map(|row| row.iter().zip(&means).map(|(x, m)| (x - m) as f32))
            .collect();
        NarrowRows { centred, means }
    }

    /// [`Self::hessian_product`] with its matrix products in f32 on `narrow` (this
    /// objective's [`Self::narrow_rows`]). Full maps only.
    pub fn narrow_hessian_product(
        &self,
        narrow: &NarrowRows,
        probs: &[f64],
        v: &[f64],
        out: &mut [f64],
    ) {
        let (n, k) = (self.rows.n, self.rows.k);
        assert_eq!(self.terms.form.shape, AffineShape::Full, "Hessian products of full maps only");
        assert_eq!(probs.len(), n * k, "probabilities");
        assert_eq!(narrow.centred.len(), n * k, "f32 features");
        assert_eq!(v.len(), self.n_params(), "direction length");
        let (vw, vb) = v.split_at(k * k);
        let vw32: Vec<f32> = vw.iter().map(|&v| v as f32).collect();
        // V m + c: the centring's share of every row's u, in f64.
        let offset: Vec<f64> =
            vw.chunks_exact(k).zip(vb).map(|(row, c)| lane_dot(row, &narrow.means) + c).collect();
        let (_, mut sum) = self.reduce_rows(v.len(), None, |lo, hi, _| {
            dispatch(
                #[inline(always)]
                || (0.0, self.narrow_kernel(&narrow.centred, &vw32, probs, &offset, lo, hi)),
            )
        });
        // (sum_i r_i) m^T: the centring's share of the weight block.
        let (sw, sb) = sum.split_at_mut(k * k);
        for (row, &r) in sw.chunks_exact_mut(k).zip(sb.iter()) {
            row.iter_mut().zip(&narrow.means).for_each(|(s, m)| *s += r * m);
        }
        let inv_n = 1.0 / self.total;
        out.iter_mut().zip(&sum).for_each(|(o, s)| *o = s * inv_n);
        self.terms.add_penalty_product(v, out);
    }

    /// The NLL part of the product over rows `lo..hi` on the centred rows `x32`, without the
    /// centring's share of the weight block: `u = d V^T` in f32, `r = w p ⊙ (u + o - p · (u +
    /// o))` per row in f64 (`o = V m + c`; stored back as f32), `R^T D` in f32.
    #[inline(always)]
    fn narrow_kernel(
        &self,
        x32: &[f32],
        vw: &[f32],
        probs: &[f64],
        offset: &[f64],
        lo: usize,
        hi: usize,
    ) -> Vec<f64> {
        let k = self.rows.k;
        let mut acc = vec![0.0; k * k + k];
        let (aw, ab) = acc.split_at_mut(k * k);
        let mut u = vec![0.0f32; NARROW_BLOCK_ROWS.min(hi - lo) * k];
        let (mut block, mut row) = (vec![0.0f32; k * k], vec![0.0; k]);
        let v_t = MatRef::row_major(vw, k, k).t();
        for start in (lo..hi).step_by(NARROW_BLOCK_ROWS) {
            let rows = NARROW_BLOCK_ROWS.min(hi - start);
            let (x, u) = (&x32[start * k..(start + rows) * k], &mut u[..rows * k]);
            gemm(MatRef::row_major(x, rows, k), v_t, 0.0, u);
            for (r, urow) in u.chunks_exact_mut(k).enumerate() {
                let p = &probs[(start + r) * k..][..k];
                let shifted = urow.iter().zip(offset);
                row.iter_mut().zip(shifted).for_each(|(o, (&u, c))| *o = f64::from(u) + c);
                let (t, w) = (lane_dot(p, &row), self.rows.weight(start + r));
                for (((o, a), &uv), &pv) in urow.iter_mut().zip(ab.iter_mut()).zip(&row).zip(p) {
                    let term = w * pv * (uv - t);
                    *a += term;
                    *o = term as f32;
                }
            }
            let (u, x) = (MatRef::row_major(&*u, rows, k), MatRef::row_major(x, rows, k));
            gemm(u.t(), x, 0.0, &mut block);
            aw.iter_mut().zip(&block).for_each(|(a, &b)| *a += f64::from(b));
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use calib_core::synthetic::SplitMix64;

    use super::*;
    use crate::fit::Regularisation;
    use crate::fit::host::HostForm;
    use crate::fit::host_rows::HostRows;

    /// The f32 product equals the f64 one to f32 accuracy, over several blocks and threads
    /// and with row weights.
    #[test]
    fn equals_the_f64_product_to_f32_accuracy() {
        let (n, k) = (2500, 12);
        let mut rng = SplitMix64(4);
        // Log-probability-like features: a large common offset.
        let features: Vec<f64> = (0..n * k).map(|_| rng.normal() - 12.0).collect();
        let labels = (0..n).map(|i| (i * 7) % k).collect();
        let weights = Some((0..n).map(|i| 0.5 + (i % 4) as f64).collect());
        let rows = HostRows { features, labels, n, k, weights };
        let penalty = Regularisation::Ridge { intercept: 0.1, diagonal: 0.2, off_diagonal: 0.3 };
        let objective = AffineObjective::new(&rows, HostForm { shape: AffineShape::Full, penalty });
        let x: Vec<f64> = (0..k * k + k).map(|_| 0.2 * rng.normal()).collect();
        let (mut g, mut probs) = (vec![0.0; x.len()], vec![0.0; n * k]);
        objective.evaluate_keeping(&x, &mut g, Some(&mut probs));
        let narrow = objective.narrow_rows();
        let d: Vec<f64> = (0..x.len()).map(|_| rng.normal()).collect();
        let (mut want, mut got) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        objective.hessian_product(&probs, &d, &mut want);
        objective.narrow_hessian_product(&narrow, &probs, &d, &mut got);
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * scale, "{i}: {g} vs {w}");
        }
    }
}
