//! [`LowRankBlocks`]: a full map's per-class Hessian blocks approximated as the penalty's
//! diagonal plus the data's curvature on three directions, for wide maps under a ridge that
//! penalises every parameter (structured matrix scaling).
//!
//! Class `c`'s block is `H_cc = (1/W) sum_i w_ic x~_i x~_i^T + D_c`, `w_ic = v_i p_ic (1 -
//! p_ic)`, `D_c = 2 Λ_c` the ridge's diagonal. With `K (K - 1) / N` on the off-diagonal
//! weights, the ridge outweighs the data on every direction but a few: the rows' weighted
//! mean (log-probabilities share a large negative offset), the class's own feature `x_c`, and
//! the intercept. So the block is taken as
//!
//! ```text
//! M_c = D_c + B_c C_c B_c^T,   B_c = [u_c, e_c, e_b],   C_c = B_c^T (H_cc - D_c) B_c
//! u_c = the weighted mean (1/W) sum_i w_ic x_i without its entries c and b, normalised
//! M_c^-1 = D_c^-1 - D_c^-1 B_c C_c (I + B_c^T D_c^-1 B_c C_c)^-1 B_c^T D_c^-1    (Woodbury)
//! ```
//!
//! `C_c` is exact (a Galerkin projection), so `M_c` equals `H_cc` on the span of `B_c`. Its
//! build costs two matrix products of the rows (`W^T X` for the means, `X U^T` for the
//! projections) where the exact blocks cost `N K^3` (`~` 20 evaluations at 5,000 x 100), it
//! holds `O(K^2)` values where those hold `K^3`, and with [`super::shift_balance`] the
//! preconditioned Hessian's condition number is 1.15-2.1 at K = 100 (1.14-1.8 with the exact
//! blocks; `benches/preconditioner_spectrum.py`). Narrow maps keep the exact blocks: there the
//! data outweigh a ridge of `K (K - 1) / N`, and the exact blocks are cheap.

use calib_kernels::dispatch;

use super::affine::{AffineObjective, BLOCK_ROWS};
use super::gemm::{MatRef, gemm};

/// The per-class Woodbury factors of the low-rank blocks.
pub(crate) struct LowRankBlocks {
    k: usize,
    /// `D^-1`, laid out as the parameters.
    inverse: Vec<f64>,
    /// `u_c` for each class, `K x K` row-major (the intercept's entry is always 0).
    means: Vec<f64>,
    /// `C_c (I + B_c^T D_c^-1 B_c C_c)^-1` for each class, 3 x 3 row-major.
    inner: Vec<[f64; 9]>,
}

impl AffineObjective<'_> {
    /// The low-rank blocks at the point whose probabilities `probs` (`N x K`) describe, or
    /// `None` when the penalty leaves some parameter uncurved. Full maps only.
    pub fn low_rank_blocks(&self, probs: &[f64]) -> Option<LowRankBlocks> {
        let k = self.rows.k;
        let inverse = self.penalty_inverse()?;
        let sums = self.weighted_feature_sums(probs);
        let mut means = sums[..k * k].to_vec();
        for (c, row) in means.chunks_exact_mut(k).enumerate() {
            row[c] = 0.0;
            let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
            let scale = if norm > 0.0 && norm.is_finite() { 1.0 / norm } else { 0.0 };
            row.iter_mut().for_each(|v| *v *= scale);
        }
        let moments = self.projected_moments(probs, &means);
        let inv_w = 1.0 / self.total;
        let inner = (0..k)
            .map(|c| {
                let m: Vec<f64> = moments[c * 6..c * 6 + 6].iter().map(|v| v * inv_w).collect();
                let curvature = [m[0], m[1], m[2], m[1], m[3], m[4], m[2], m[4], m[5]];
                let on_mean: f64 = means[c * k..(c + 1) * k]
                    .iter()
                    .zip(&inverse[c * k..(c + 1) * k])
                    .map(|(u, d)| u * u * d)
                    .sum();
                let scales = [on_mean, inverse[c * k + c], inverse[k * k + c]];
                woodbury_inner(&curvature, scales)
            })
            .collect();
        Some(LowRankBlocks { k, inverse, means, inner })
    }

    /// `1 / (2 Λ)` laid out as the parameters, or `None` when some entry of `Λ` is zero.
    fn penalty_inverse(&self) -> Option<Vec<f64>> {
        let mut curvature = vec![0.0; self.n_params()];
        self.terms.add_penalty_diagonal(&mut curvature);
        let inverse: Vec<f64> = curvature.iter().map(|d| 1.0 / d).collect();
        inverse.iter().all(|v| v.is_finite() && *v > 0.0).then_some(inverse)
    }

    /// `sum_i w_ic x_i` for every class (`K x K`, row-major: the weighted means unscaled).
    fn weighted_feature_sums(&self, probs: &[f64]) -> Vec<f64> {
        let k = self.rows.k;
        let (_, sums) = self.reduce_rows(k * k, None, |lo, hi, _| {
            dispatch(
                #[inline(always)]
                || {
                    let mut sums = vec![0.0; k * k];
                    let mut w = vec![0.0; BLOCK_ROWS * k];
                    for (start, x) in self.blocks(lo, hi) {
                        let rows = x.len() / k;
                        let w = &mut w[..rows * k];
                        self.curvature_weights(probs, start, w);
                        gemm(
                            MatRef::row_major(w, rows, k).t(),
                            MatRef::row_major(x, rows, k),
                            1.0,
                            &mut sums,
                        );
                    }
                    (0.0, sums)
                },
            )
        });
        sums
    }

    /// For each class, `sum_i w_ic a a^T` over `a = [u_c · x_i, x_ic, 1]`: the six distinct
    /// entries `aa, ax, a1, xx, x1, 11`.
    fn projected_moments(&self, probs: &[f64], means: &[f64]) -> Vec<f64> {
        let k = self.rows.k;
        let (_, moments) = self.reduce_rows(6 * k, None, |lo, hi, _| {
            dispatch(
                #[inline(always)]
                || {
                    let mut m = vec![0.0; 6 * k];
                    let (mut w, mut a) = (vec![0.0; BLOCK_ROWS * k], vec![0.0; BLOCK_ROWS * k]);
                    let u = MatRef::row_major(means, k, k).t();
                    for (start, x) in self.blocks(lo, hi) {
                        let rows = x.len() / k;
                        let (w, a) = (&mut w[..rows * k], &mut a[..rows * k]);
                        self.curvature_weights(probs, start, w);
                        gemm(MatRef::row_major(x, rows, k), u, 0.0, a);
                        for ((wr, ar), xr) in
                            w.chunks_exact(k).zip(a.chunks_exact(k)).zip(x.chunks_exact(k))
                        {
                            for (c, ((&w, &a), &x)) in wr.iter().zip(ar).zip(xr).enumerate() {
                                let s = &mut m[c * 6..c * 6 + 6];
                                let (wa, wx) = (w * a, w * x);
                                s[0] += wa * a;
                                s[1] += wa * x;
                                s[2] += wa;
                                s[3] += wx * x;
                                s[4] += wx;
                                s[5] += w;
                            }
                        }
                    }
                    (0.0, m)
                },
            )
        });
        moments
    }

    /// `w_ic = v_i p_ic (1 - p_ic)` of the rows from `start` into `w` (`K` per row).
    #[inline(always)]
    fn curvature_weights(&self, probs: &[f64], start: usize, w: &mut [f64]) {
        let k = self.rows.k;
        let p = &probs[start * k..start * k + w.len()];
        for (r, (wr, pr)) in w.chunks_exact_mut(k).zip(p.chunks_exact(k)).enumerate() {
            let v = self.rows.weight(start + r);
            wr.iter_mut().zip(pr).for_each(|(w, &p)| *w = v * p * (1.0 - p));
        }
    }
}

/// `C (I + diag(scales) C)^-1` of the symmetric positive semi-definite 3 x 3 `C` (row-major):
/// `I + diag(s) C` is invertible for `s > 0` (its eigenvalues are those of `I + s^1/2 C
/// s^1/2`).
fn woodbury_inner(c: &[f64; 9], scales: [f64; 3]) -> [f64; 9] {
    let mut a = [0.0; 9];
    for i in 0..3 {
        for j in 0..3 {
            a[i * 3 + j] = f64::from(u8::from(i == j)) + scales[i] * c[i * 3 + j];
        }
    }
    let inv = inverse3(&a);
    let mut out = [0.0; 9];
    for i in 0..3 {
        for j in 0..3 {
            out[i * 3 + j] = (0..3).map(|m| c[i * 3 + m] * inv[m * 3 + j]).sum();
        }
    }
    out
}

/// The inverse of an invertible 3 x 3 matrix (row-major) by cofactors.
fn inverse3(a: &[f64; 9]) -> [f64; 9] {
    let cof = |r0: usize, r1: usize, c0: usize, c1: usize| {
        a[r0 * 3 + c0] * a[r1 * 3 + c1] - a[r0 * 3 + c1] * a[r1 * 3 + c0]
    };
    let adj = [
        cof(1, 2, 1, 2),
        -cof(0, 2, 1, 2),
        cof(0, 1, 1, 2),
        -cof(1, 2, 0, 2),
        cof(0, 2, 0, 2),
        -cof(0, 1, 0, 2),
        cof(1, 2, 0, 1),
        -cof(0, 2, 0, 1),
        cof(0, 1, 0, 1),
    ];
    let det = a[0] * adj[0] + a[1] * adj[3] + a[2] * adj[6];
    adj.map(|v| v / det)
}

impl LowRankBlocks {
    /// `M^-1 r`, class by class.
    pub fn apply(&self, r: &[f64]) -> Vec<f64> {
        let k = self.k;
        let mut z: Vec<f64> = r.iter().zip(&self.inverse).map(|(r, d)| r * d).collect();
        let (zw, zb) = z.split_at_mut(k * k);
        let (dw, db) = self.inverse.split_at(k * k);
        for (c, (row, drow)) in zw.chunks_exact_mut(k).zip(dw.chunks_exact(k)).enumerate() {
            let u = &self.means[c * k..(c + 1) * k];
            let t = [u.iter().zip(row.iter()).map(|(u, z)| u * z).sum(), row[c], zb[c]];
            let m = &self.inner[c];
            let s: [f64; 3] = std::array::from_fn(|i| (0..3).map(|j| m[i * 3 + j] * t[j]).sum());
            row.iter_mut().zip(u).zip(drow).for_each(|((z, u), d)| *z -= d * s[0] * u);
            row[c] -= drow[c] * s[1];
            zb[c] -= db[c] * s[2];
        }
        z
    }
}

#[cfg(test)]
mod tests {
    use calib_core::synthetic::SplitMix64;

    use super::*;
    use crate::fit::Regularisation;
    use crate::fit::host::{AffineShape, HostForm};
    use crate::fit::host_rows::HostRows;

    /// `M_c^-1 r` by a dense solve of `D_c + B_c C_c B_c^T`, formed from its definition with
    /// plain loops over the rows.
    #[test]
    fn equals_a_dense_solve_of_the_low_rank_block() {
        let (n, k) = (300, 5);
        let mut rng = SplitMix64(7);
        let features: Vec<f64> = (0..n * k).map(|_| -3.0 + rng.normal()).collect();
        let labels = (0..n).map(|_| rng.below(k)).collect();
        let weights = Some((0..n).map(|_| 0.5 + rng.uniform()).collect::<Vec<f64>>());
        let rows = HostRows { features, labels, n, k, weights };
        let penalty = Regularisation::Ridge { intercept: 0.2, diagonal: 0.1, off_diagonal: 0.6 };
        let objective = AffineObjective::new(&rows, HostForm { shape: AffineShape::Full, penalty });
        let probs: Vec<f64> = rows
            .features
            .chunks_exact(k)
            .flat_map(|x| {
                let e: Vec<f64> = x.iter().map(|v| (0.8 * v).exp()).collect();
                let s: f64 = e.iter().sum();
                e.into_iter().map(move |v| v / s)
            })
            .collect();
        let blocks = objective.low_rank_blocks(&probs).unwrap();
        let r: Vec<f64> = (0..k * k + k).map(|_| rng.normal()).collect();
        let got = blocks.apply(&r);
        let total: f64 = rows.weights.as_ref().unwrap().iter().sum();
        let dim = k + 1;
        for c in 0..k {
            // u_c: the weighted mean without entries c and b, normalised.
            let mut u = vec![0.0; dim];
            for i in 0..n {
                let w = rows.weight(i) * probs[i * k + c] * (1.0 - probs[i * k + c]);
                (0..k).for_each(|j| u[j] += w * rows.features[i * k + j]);
            }
            u[c] = 0.0;
            let norm = u.iter().map(|v| v * v).sum::<f64>().sqrt();
            u.iter_mut().for_each(|v| *v /= norm);
            let basis = [u, (0..dim).map(|j| f64::from(u8::from(j == c))).collect(), {
                let mut e = vec![0.0; dim];
                e[k] = 1.0;
                e
            }];
            let mut m = vec![0.0; dim * dim];
            let (weights, on_bias) = objective.terms.penalty_diagonal(c);
            weights.into_iter().for_each(|(j, d)| m[j * dim + j] += d);
            m[k * dim + k] += on_bias;
            for a in 0..3 {
                for b in 0..3 {
                    let mut cab = 0.0;
                    for i in 0..n {
                        let x: Vec<f64> = rows.features[i * k..(i + 1) * k]
                            .iter()
                            .copied()
                            .chain([1.0])
                            .collect();
                        let w = rows.weight(i) * probs[i * k + c] * (1.0 - probs[i * k + c]);
                        let pa: f64 = x.iter().zip(&basis[a]).map(|(x, u)| x * u).sum();
                        let pb: f64 = x.iter().zip(&basis[b]).map(|(x, u)| x * u).sum();
                        cab += w * pa * pb / total;
                    }
                    for i in 0..dim {
                        for j in 0..dim {
                            m[i * dim + j] += basis[a][i] * cab * basis[b][j];
                        }
                    }
                }
            }
            let mut rc: Vec<f64> = r[c * k..(c + 1) * k].to_vec();
            rc.push(r[k * k + c]);
            let mut mz = vec![0.0; dim];
            let mut zc: Vec<f64> = got[c * k..(c + 1) * k].to_vec();
            zc.push(got[k * k + c]);
            for i in 0..dim {
                mz[i] = (0..dim).map(|j| m[i * dim + j] * zc[j]).sum();
            }
            for (a, b) in mz.iter().zip(&rc) {
                assert!((a - b).abs() < 1e-10 * b.abs().max(1.0), "class {c}: {mz:?} vs {rc:?}");
            }
        }
    }

    #[test]
    fn an_unpenalised_parameter_has_no_low_rank_blocks() {
        let rows = HostRows {
            features: vec![-1.0; 8],
            labels: vec![0, 1, 0, 1],
            n: 4,
            k: 2,
            weights: None,
        };
        let penalty = Regularisation::Ridge { intercept: 0.0, diagonal: 0.1, off_diagonal: 0.6 };
        let objective = AffineObjective::new(&rows, HostForm { shape: AffineShape::Full, penalty });
        assert!(objective.low_rank_blocks(&[0.5; 8]).is_none());
    }
}
