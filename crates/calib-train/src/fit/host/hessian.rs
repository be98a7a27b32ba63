//! Second-order pieces of the full affine objective (matrix scaling, Dirichlet calibration):
//! Hessian-vector products and a block-diagonal preconditioner, for the Newton-CG fit
//! ([`super::newton`]).
//!
//! With `x~_i = [x_i, 1]`, `theta_k = [W_k., b_k]` (the parameters of calibrated class `k`)
//! and `p_i` the calibrated probabilities at the current point, the NLL's Hessian is the
//! multinomial-logistic one (e.g. Böhning 1992; Byrd et al. 2011, section 5):
//!
//! ```text
//! H_kl = (1/N) sum_i p_ik (delta_kl - p_il) x~_i x~_i^T
//! (H v)_k = (1/N) sum_i r_ik x~_i,   r_ik = p_ik (u_ik - p_i · u_i),   u_i = V x_i + c
//! ```
//!
//! so a product costs the two matrix products of an evaluation and no exponentials. The
//! penalty is quadratic, so its Hessian times `v` is its gradient at `v` without its centre
//! (`AffineTerms::add_penalty_product`).
//!
//! The preconditioner keeps the diagonal blocks `H_kk` (`K` blocks of `(K+1)^2`), Cholesky-
//! factored. Forming them exactly costs `N K (K+1)^2` (1e10 flops at 10,000 x 100); a row
//! adds to block `k` only through `p_ik (1 - p_ik)`, which is negligible for most classes of
//! a confident row, so rows below [`BLOCK_WEIGHT_FLOOR`] are left out of that block (the
//! preconditioner only has to be close, not exact). Both objective and a reduced penalty are
//! invariant under `theta_k -> theta_k + v` for all `k` together, so the preconditioned
//! residual is then projected onto the complement of that null space (subtract the mean over
//! `k`); the ridge towards the identity curves that space, and nothing is projected.

use calib_kernels::{dispatch, lane_dot};

use super::affine::AffineObjective;
use super::form::AffineShape;
use super::gemm::{MatRef, gemm};

/// Rows whose weight `p_ik (1 - p_ik)` is below this (times four times the class's largest
/// weight, when that is under 1/4) are left out of block `k`.
pub(crate) const BLOCK_WEIGHT_FLOOR: f64 = 1e-2;

impl AffineObjective<'_> {
    /// `out = H v` at the point whose probabilities `probs` (`N x K`, from
    /// [`Self::evaluate_keeping`]) describe. Full maps only.
    pub fn hessian_product(&self, probs: &[f64], v: &[f64], out: &mut [f64]) {
        let (n, k) = (self.rows.n, self.rows.k);
        assert_eq!(self.terms.form.shape, AffineShape::Full, "Hessian products of full maps only");
        assert_eq!(probs.len(), n * k, "probabilities");
        assert_eq!(v.len(), self.n_params(), "direction length");
        let (_, sum) = self.reduce_rows(v.len(), None, |lo, hi, _| {
            dispatch(
                #[inline(always)]
                || (0.0, self.hessian_product_kernel(probs, v, lo, hi)),
            )
        });
        let inv_n = 1.0 / self.total;
        out.iter_mut().zip(&sum).for_each(|(o, s)| *o = s * inv_n);
        self.terms.add_penalty_product(v, out);
    }

    #[inline(always)]
    fn hessian_product_kernel(&self, probs: &[f64], v: &[f64], lo: usize, hi: usize) -> Vec<f64> {
        let k = self.rows.k;
        let (vw, vb) = v.split_at(k * k);
        let mut acc = vec![0.0; v.len()];
        let (aw, ab) = acc.split_at_mut(k * k);
        let mut u = vec![0.0; super::affine::BLOCK_ROWS * k];
        for (start, x) in self.blocks(lo, hi) {
            let rows = x.len() / k;
            let u = &mut u[..rows * k];
            self.block_logits(vw, vb, x, u);
            for (r, urow) in u.chunks_exact_mut(k).enumerate() {
                let p = &probs[(start + r) * k..][..k];
                let (t, w) = (lane_dot(p, urow), self.rows.weight(start + r));
                for (uv, &pv) in urow.iter_mut().zip(p) {
                    *uv = w * pv * (*uv - t);
                }
                ab.iter_mut().zip(urow.iter()).for_each(|(a, r)| *a += r);
            }
            gemm(MatRef::row_major(u, rows, k).t(), MatRef::row_major(x, rows, k), 1.0, aw);
        }
        acc
    }

    /// The block-diagonal preconditioner at the point `probs` describes. Full maps only.
    pub fn block_preconditioner(&self, probs: &[f64]) -> BlockPreconditioner {
        let (n, k) = (self.rows.n, self.rows.k);
        assert_eq!(self.terms.form.shape, AffineShape::Full, "blocks of full maps only");
        assert_eq!(probs.len(), n * k, "probabilities");
        let dim = k + 1;
        // One row-major pass: per class, the rows that matter and sqrt of their weights.
        // The floor is relative to the class's largest weight (at most 1/4): a class the map
        // already separates has only small weights, and an absolute floor would leave its
        // block empty (Newton-CG then crawled for 1,000 iterations on quasi-separable data).
        // Sample weights enter relative to their mean (`v_i N / W`), so the floors and the
        // rows kept do not depend on the weights' scale.
        let relative = n as f64 / self.total;
        let mut largest = vec![0.0f64; k];
        for (i, p) in probs.chunks_exact(k).enumerate() {
            let v = self.rows.weight(i) * relative;
            largest.iter_mut().zip(p).for_each(|(m, &p)| *m = m.max(v * p * (1.0 - p)));
        }
        let floors: Vec<f64> =
            largest.iter().map(|m| BLOCK_WEIGHT_FLOOR * (4.0 * m).min(1.0)).collect();
        let mut members: Vec<Vec<(usize, f64)>> = vec![Vec::new(); k];
        for (i, p) in probs.chunks_exact(k).enumerate() {
            let v = self.rows.weight(i) * relative;
            for ((list, &p), floor) in members.iter_mut().zip(p).zip(&floors) {
                let w = v * p * (1.0 - p);
                if w >= *floor {
                    list.push((i, w.sqrt()));
                }
            }
        }
        let block = |class: usize| -> Vec<f64> {
            let list = &members[class];
            let mut scaled = Vec::with_capacity(list.len() * dim);
            for &(i, r) in list {
                let x = &self.rows.features[i * k..][..k];
                scaled.extend(x.iter().map(|v| v * r));
                scaled.push(r);
            }
            let m = scaled.len() / dim;
            let mut a = vec![0.0; dim * dim];
            let y = MatRef::row_major(&scaled, m, dim);
            gemm(y.t(), y, 0.0, &mut a);
            let inv_n = 1.0 / n as f64;
            a.iter_mut().for_each(|v| *v *= inv_n);
            let (weights, on_bias) = self.terms.penalty_diagonal(class);
            weights.into_iter().for_each(|(j, d)| a[j * dim + j] += d);
            a[k * dim + k] += on_bias;
            cholesky_with_jitter(&mut a, dim);
            a
        };
        let threads = calib_kernels::threads().min(k);
        let mut factors = vec![0.0; k * dim * dim];
        let per = k.div_ceil(threads);
        std::thread::scope(|scope| {
            for (t, out) in factors.chunks_mut(per * dim * dim).enumerate() {
                let block = &block;
                scope.spawn(move || {
                    for (j, f) in out.chunks_exact_mut(dim * dim).enumerate() {
                        f.copy_from_slice(&dispatch(|| block(t * per + j)));
                    }
                });
            }
        });
        BlockPreconditioner { k, factors, project: self.terms.is_shift_invariant() }
    }
}

/// Lower Cholesky factor of the symmetric `a` (`dim x dim`, row-major) in place; a small
/// multiple of its largest diagonal entry is added until it is positive definite.
fn cholesky_with_jitter(a: &mut [f64], dim: usize) {
    let original = a.to_vec();
    let top = (0..dim).map(|i| a[i * dim + i]).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let mut jitter = 1e-10 * top;
    loop {
        if cholesky(a, dim) {
            return;
        }
        a.copy_from_slice(&original);
        for i in 0..dim {
            a[i * dim + i] += jitter;
        }
        jitter *= 100.0;
    }
}

/// In-place lower Cholesky factorisation (row-oriented, each entry one contiguous dot
/// product); `false` when `a` is not positive definite. The upper triangle is left as it was.
fn cholesky(a: &mut [f64], dim: usize) -> bool {
    for i in 0..dim {
        let (above, rest) = a.split_at_mut(i * dim);
        let row_i = &mut rest[..dim];
        for j in 0..i {
            let row_j = &above[j * dim..j * dim + j + 1];
            let s = row_i[j] - lane_dot(&row_i[..j], &row_j[..j]);
            row_i[j] = s / row_j[j];
        }
        let d = row_i[i] - lane_dot(&row_i[..i], &row_i[..i]);
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        row_i[i] = d.sqrt();
    }
    true
}

/// `K` Cholesky-factored diagonal blocks of the Hessian, one per calibrated class, over the
/// parameters `[W_k., b_k]`.
pub(crate) struct BlockPreconditioner {
    k: usize,
    factors: Vec<f64>,
    /// Whether the objective is shift invariant (the result is projected off that space).
    project: bool,
}

impl BlockPreconditioner {
    /// `M^-1 r`, projected onto the complement of the shift invariance's null space where the
    /// objective has one.
    pub fn apply(&self, r: &[f64]) -> Vec<f64> {
        dispatch(
            #[inline(always)]
            || self.apply_kernel(r),
        )
    }

    #[inline(always)]
    fn apply_kernel(&self, r: &[f64]) -> Vec<f64> {
        let k = self.k;
        let dim = k + 1;
        let mut z = vec![0.0; r.len()];
        let mut block = vec![0.0; dim];
        for class in 0..k {
            block[..k].copy_from_slice(&r[class * k..(class + 1) * k]);
            block[k] = r[k * k + class];
            let l = &self.factors[class * dim * dim..(class + 1) * dim * dim];
            // L y = r (row dot products), then L^T z = y (row axpys, last row first).
            for i in 0..dim {
                let row = &l[i * dim..i * dim + i + 1];
                block[i] = (block[i] - lane_dot(&row[..i], &block[..i])) / row[i];
            }
            for i in (0..dim).rev() {
                let row = &l[i * dim..i * dim + i + 1];
                let zi = block[i] / row[i];
                block[i] = zi;
                block[..i].iter_mut().zip(&row[..i]).for_each(|(b, l)| *b -= l * zi);
            }
            z[class * k..(class + 1) * k].copy_from_slice(&block[..k]);
            z[k * k + class] = block[k];
        }
        if self.project {
            project_out_shift(&mut z, k);
        }
        z
    }
}

/// Removes the component of `v` along the shift invariance: the same `[w, c]` added to every
/// class's `[W_k., b_k]`.
pub(crate) fn project_out_shift(v: &mut [f64], k: usize) {
    let kf = k as f64;
    let (w, b) = v.split_at_mut(k * k);
    let mut mean = vec![0.0; k];
    for row in w.chunks_exact(k) {
        mean.iter_mut().zip(row).for_each(|(m, x)| *m += x / kf);
    }
    for row in w.chunks_exact_mut(k) {
        row.iter_mut().zip(&mean).for_each(|(x, m)| *x -= m);
    }
    let mean_b = b.iter().sum::<f64>() / kf;
    b.iter_mut().for_each(|x| *x -= mean_b);
}

#[cfg(test)]
mod tests {
    use calib_core::synthetic::SplitMix64;

    use super::*;
    use crate::fit::Regularisation;
    use crate::fit::host::HostForm;
    use crate::fit::host_rows::HostRows;

    /// `n` rows of `k` features drawn with scale `spread`, labels uniform.
    fn rows(n: usize, k: usize, spread: f64, seed: u64) -> HostRows {
        let mut rng = SplitMix64(seed);
        let features = (0..n * k).map(|_| spread * rng.normal()).collect();
        let labels = (0..n).map(|_| rng.below(k)).collect();
        HostRows { features, labels, n, k, weights: None }
    }

    /// Identity map plus noise: `[W (K x K), b (K)]`.
    fn params(k: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64(seed);
        (0..k * k + k)
            .map(|i| if i < k * k && i % (k + 1) == 0 { 1.0 } else { 0.0 } + 0.2 * rng.normal())
            .collect()
    }

    fn full(penalty: Regularisation) -> HostForm {
        HostForm { shape: AffineShape::Full, penalty }
    }

    fn probs_at(objective: &AffineObjective<'_>, x: &[f64]) -> Vec<f64> {
        let mut g = vec![0.0; x.len()];
        let mut p = vec![0.0; objective.rows.n * objective.rows.k];
        objective.evaluate_keeping(x, &mut g, Some(&mut p));
        p
    }

    #[test]
    fn hessian_products_equal_differences_of_the_gradient() {
        // 300 rows: several row blocks and (on a multi-core machine) threads.
        let (k, data) = (6, rows(300, 6, 1.5, 1));
        for penalty in [
            Regularisation::None,
            Regularisation::Odir { lambda: 0.7, mu: 0.3 },
            Regularisation::L2 { lambda: 0.4 },
            Regularisation::Ridge { intercept: 0.2, diagonal: 0.3, off_diagonal: 0.5 },
        ] {
            let objective = AffineObjective::new(&data, full(penalty));
            let x = params(k, 2);
            let v = params(k, 3);
            let probs = probs_at(&objective, &x);
            let mut hv = vec![0.0; x.len()];
            objective.hessian_product(&probs, &v, &mut hv);
            let h = 1e-5;
            let at = |t: f64| {
                let y: Vec<f64> = x.iter().zip(&v).map(|(x, v)| x + t * v).collect();
                let mut g = vec![0.0; y.len()];
                objective.evaluate(&y, &mut g);
                g
            };
            let (plus, minus) = (at(h), at(-h));
            let scale = hv.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (i, ((p, m), got)) in plus.iter().zip(&minus).zip(&hv).enumerate() {
                let want = (p - m) / (2.0 * h);
                assert!((got - want).abs() <= 1e-6 * scale, "{penalty:?} {i}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn the_preconditioner_inverts_the_diagonal_blocks_up_to_the_shift() {
        // Mild features: every p (1 - p) is above the floor, so the blocks are exact.
        let (n, k) = (200, 3);
        let data = rows(n, k, 0.3, 4);
        let penalty = Regularisation::Odir { lambda: 0.5, mu: 0.2 };
        let objective = AffineObjective::new(&data, full(penalty));
        let x = params(k, 5);
        let probs = probs_at(&objective, &x);
        assert!(probs.iter().all(|p| p * (1.0 - p) >= BLOCK_WEIGHT_FLOOR));
        // M y by plain loops over rows: block k is (1/N) sum_i w_ik x~ x~^T + penalty diagonal.
        let y = params(k, 6);
        let scales = objective.terms.penalty_scales().unwrap();
        let (sw, sb) = (scales.off_diagonal, scales.bias);
        let mut r = vec![0.0; y.len()];
        for class in 0..k {
            let yk: Vec<f64> = (0..k).map(|j| y[class * k + j]).chain([y[k * k + class]]).collect();
            for i in 0..n {
                let p = probs[i * k + class];
                let xt: Vec<f64> =
                    data.features[i * k..(i + 1) * k].iter().copied().chain([1.0]).collect();
                let dot: f64 = xt.iter().zip(&yk).map(|(a, b)| a * b).sum();
                let w = p * (1.0 - p) * dot / n as f64;
                for j in 0..k {
                    r[class * k + j] += w * xt[j];
                }
                r[k * k + class] += w;
            }
            for j in 0..k {
                if j != class {
                    r[class * k + j] += 2.0 * sw * yk[j];
                }
            }
            r[k * k + class] += 2.0 * sb * yk[k];
        }
        let z = objective.block_preconditioner(&probs).apply(&r);
        let mut want = y.clone();
        project_out_shift(&mut want, k);
        for (i, (a, b)) in z.iter().zip(&want).enumerate() {
            assert!((a - b).abs() <= 1e-9, "{i}: {a} vs {b}");
        }
    }

    #[test]
    fn cholesky_factors_and_jitters_singular_matrices() {
        // A = L L^T with L = [[2, 0, 0], [1, 3, 0], [-1, 0.5, 1]].
        let mut a = vec![4.0, 2.0, -2.0, 2.0, 10.0, 0.5, -2.0, 0.5, 2.25];
        assert!(cholesky(&mut a, 3));
        let want = [2.0, 1.0, 3.0, -1.0, 0.5, 1.0];
        let got = [a[0], a[3], a[4], a[6], a[7], a[8]];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-14, "{got:?}");
        }
        // Rank one: refused as is, factored once jittered.
        let mut singular = vec![1.0, 1.0, 1.0, 1.0];
        assert!(!cholesky(&mut singular.clone(), 2));
        cholesky_with_jitter(&mut singular, 2);
        assert!(singular[3] > 0.0 && singular[3].is_finite());
    }
}
