//! [`FeatureSpan`]: the directions of a full affine map that the data cannot see.
//!
//! A full map's class `c` acts on a row through `v_c · [x_i, 1]`, so adding to `v_c` any
//! vector orthogonal to every augmented row `[x_i, 1]` changes no logit: the unpenalised NLL
//! is flat along those directions. Logits of a network whose last hidden layer is narrower
//! than its class count have them (LeNet-5 on CIFAR-100: 84 hidden units, so the 100 logits
//! and the constant span 86 of 101 dimensions; 15 x 100 flat directions). Gradients never
//! point along them, but preconditioned or Jacobi-scaled steps do, and with no curvature to
//! stop them the parameters run off to norms of 1e7 (Newton-CG) while the fit crawls: the
//! logits' f32 rounding, multiplied by such weights, is noise of order 1 on unseen rows.
//! Projecting every step onto the span keeps the fit where the data speak and returns the
//! representative closest to the starting map (the one the plain gradient path finds).

use super::gemm::{MatRef, gemm};
use crate::fit::host_rows::HostRows;

/// Pivots below this fraction of the Gram matrix's largest diagonal count as zero: far below
/// the smallest real direction of float logits (~1e-7 relative on LeNet-5), far above the
/// round-off of exactly dependent columns (~1e-16).
pub(crate) const RANK_TOLERANCE: f64 = 1e-11;

/// An orthonormal basis of the augmented feature space's null directions (`dim = K + 1`).
#[derive(Debug, Clone)]
pub(crate) struct FeatureSpan {
    /// Null vectors, each of length `dim`, orthonormal.
    null: Vec<Vec<f64>>,
    dim: usize,
}

impl FeatureSpan {
    /// The null directions of `rows`' augmented features, or `None` when there are none.
    pub fn of(rows: &HostRows) -> Option<Self> {
        let dim = rows.k + 1;
        let mut gram = vec![0.0; dim * dim];
        add_augmented_gram(&rows.features, rows.k, &mut gram);
        Self::from_gram(gram, dim, RANK_TOLERANCE)
    }

    /// The null directions of the augmented Gram matrix `gram` (`dim x dim`, row-major):
    /// pivots below `tolerance` times its largest diagonal count as zero.
    pub fn from_gram(gram: Vec<f64>, dim: usize, tolerance: f64) -> Option<Self> {
        let null = null_vectors(gram, dim, tolerance);
        (!null.is_empty()).then(|| Self { null: orthonormal(null), dim })
    }

    /// Removes the null components of every class's `[W_c, b_c]` in the full-map parameters
    /// `params` (`[W (K x K, row-major), b (K)]`).
    pub fn project(&self, params: &mut [f64]) {
        let k = self.dim - 1;
        let (w, b) = params.split_at_mut(k * k);
        for (c, row) in w.chunks_exact_mut(k).enumerate() {
            for n in &self.null {
                let along = row.iter().zip(n).map(|(v, n)| v * n).sum::<f64>() + b[c] * n[k];
                row.iter_mut().zip(n).for_each(|(v, n)| *v -= along * n);
                b[c] -= along * n[k];
            }
        }
    }

    /// Number of null directions per class.
    #[cfg(test)]
    pub fn nullity(&self) -> usize {
        self.null.len()
    }
}

/// Adds `[X, 1]^T [X, 1]` of the row-major `features` (`K` columns) to `gram`, `(K + 1) x
/// (K + 1)` row-major.
pub(crate) fn add_augmented_gram(features: &[f64], k: usize, gram: &mut [f64]) {
    let n = features.len() / k;
    let x = MatRef::row_major(features, n, k);
    let mut xtx = vec![0.0; k * k];
    gemm(x.t(), x, 0.0, &mut xtx);
    let dim = k + 1;
    for i in 0..k {
        gram[i * dim..i * dim + k]
            .iter_mut()
            .zip(&xtx[i * k..(i + 1) * k])
            .for_each(|(g, v)| *g += v);
    }
    let mut sums = vec![0.0; k];
    for row in features.chunks_exact(k) {
        sums.iter_mut().zip(row).for_each(|(s, v)| *s += v);
    }
    for (j, s) in sums.iter().enumerate() {
        gram[j * dim + k] += *s;
        gram[k * dim + j] += *s;
    }
    gram[k * dim + k] += n as f64;
}

/// A basis of the null space of the positive semi-definite `gram` (`dim x dim`, row-major):
/// Cholesky with diagonal pivoting stops at rank `r`, `P^T G P = [L11; L21] [L11; L21]^T`,
/// and the null vectors are `P [-L11^{-T} L21^T; I]`.
fn null_vectors(mut a: Vec<f64>, dim: usize, tolerance: f64) -> Vec<Vec<f64>> {
    let top = (0..dim).map(|i| a[i * dim + i]).fold(0.0f64, f64::max);
    let mut perm: Vec<usize> = (0..dim).collect();
    let mut rank = 0;
    // Right-looking factorisation in place: after step `j`, column `j` below the diagonal
    // holds L's column and the trailing block the Schur complement.
    while rank < dim {
        let (j, pivot) = (rank..dim)
            .map(|i| (i, a[i * dim + i]))
            .fold((rank, f64::NEG_INFINITY), |m, c| if c.1 > m.1 { c } else { m });
        if pivot.is_nan() || pivot <= tolerance * top {
            break;
        }
        swap_symmetric(&mut a, dim, rank, j);
        perm.swap(rank, j);
        let d = a[rank * dim + rank].sqrt();
        for i in rank..dim {
            a[i * dim + rank] /= d;
        }
        for i in rank + 1..dim {
            let li = a[i * dim + rank];
            for m in rank + 1..=i {
                a[i * dim + m] -= li * a[m * dim + rank];
                a[m * dim + i] = a[i * dim + m];
            }
        }
        rank += 1;
    }
    (rank..dim).map(|free| null_vector(&a, dim, rank, free, &perm)).collect()
}

/// The null vector that sets pivoted coordinate `free` (>= `rank`) to 1: solve
/// `L11^T u = -L21[free]^T` by back substitution, then undo the permutation.
fn null_vector(a: &[f64], dim: usize, rank: usize, free: usize, perm: &[usize]) -> Vec<f64> {
    let mut u = vec![0.0; rank];
    for i in (0..rank).rev() {
        let tail: f64 = (i + 1..rank).map(|m| a[m * dim + i] * u[m]).sum();
        u[i] = (-a[free * dim + i] - tail) / a[i * dim + i];
    }
    let mut v = vec![0.0; dim];
    for (i, ui) in u.iter().enumerate() {
        v[perm[i]] = *ui;
    }
    v[perm[free]] = 1.0;
    v
}

/// Swaps rows and columns `i` and `j` of the symmetric `a`.
fn swap_symmetric(a: &mut [f64], dim: usize, i: usize, j: usize) {
    if i == j {
        return;
    }
    for m in 0..dim {
        a.swap(i * dim + m, j * dim + m);
    }
    for m in 0..dim {
        a.swap(m * dim + i, m * dim + j);
    }
}

/// Modified Gram-Schmidt, twice (enough for orthonormality to round-off).
fn orthonormal(mut vs: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    for _ in 0..2 {
        for i in 0..vs.len() {
            let (done, rest) = vs.split_at_mut(i);
            let v = &mut rest[0];
            for u in done.iter() {
                let along: f64 = v.iter().zip(u).map(|(a, b)| a * b).sum();
                v.iter_mut().zip(u).for_each(|(a, b)| *a -= along * b);
            }
            let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            v.iter_mut().for_each(|a| *a /= norm);
        }
    }
    vs
}

#[cfg(test)]
mod tests {
    use calib_core::synthetic::SplitMix64;

    use super::*;

    /// `n` rows of `k` features that are `h`-dimensional hidden activations through a fixed
    /// random layer plus a bias (rank `h + 1` with the constant): the LeNet-5 situation.
    fn narrow_rows(n: usize, k: usize, h: usize, seed: u64) -> HostRows {
        let mut rng = SplitMix64(seed);
        let layer: Vec<f64> = (0..k * h).map(|_| rng.normal()).collect();
        let bias: Vec<f64> = (0..k).map(|_| rng.normal()).collect();
        let mut features = Vec::with_capacity(n * k);
        for _ in 0..n {
            let hidden: Vec<f64> = (0..h).map(|_| rng.normal()).collect();
            for c in 0..k {
                let v: f64 = (0..h).map(|j| layer[c * h + j] * hidden[j]).sum();
                features.push(v + bias[c]);
            }
        }
        let labels = (0..n).map(|i| i % k).collect();
        HostRows { features, labels, n, k, weights: None }
    }

    #[test]
    fn full_rank_features_have_no_null_directions() {
        let rows = narrow_rows(500, 6, 8, 1);
        assert!(FeatureSpan::of(&rows).is_none());
    }

    /// Narrow hidden layer: `K - h` null directions, orthonormal, invisible to every row, and
    /// the projection removes exactly them (idempotent, leaves logits unchanged).
    #[test]
    fn narrow_features_project_out_the_invisible_directions() {
        let (n, k, h) = (400, 10, 6);
        let rows = narrow_rows(n, k, h, 2);
        let span = FeatureSpan::of(&rows).expect("rank deficient");
        assert_eq!(span.nullity(), k - h);
        for (a, u) in span.null.iter().enumerate() {
            for (b, v) in span.null.iter().enumerate() {
                let d: f64 = u.iter().zip(v).map(|(x, y)| x * y).sum();
                assert!((d - f64::from(u8::from(a == b))).abs() < 1e-12, "{a} {b} {d}");
            }
            for row in rows.features.chunks_exact(k) {
                let seen: f64 = row.iter().zip(u).map(|(x, y)| x * y).sum::<f64>() + u[k];
                assert!(seen.abs() < 1e-9, "{seen}");
            }
        }
        let mut rng = SplitMix64(3);
        let params: Vec<f64> = (0..k * k + k).map(|_| rng.normal()).collect();
        let mut projected = params.clone();
        span.project(&mut projected);
        let mut twice = projected.clone();
        span.project(&mut twice);
        assert!(projected.iter().zip(&twice).all(|(a, b)| (a - b).abs() < 1e-12));
        let logits = |p: &[f64], row: &[f64], c: usize| {
            row.iter().zip(&p[c * k..(c + 1) * k]).map(|(x, w)| x * w).sum::<f64>() + p[k * k + c]
        };
        for row in rows.features.chunks_exact(k).take(20) {
            for c in 0..k {
                let (a, b) = (logits(&params, row, c), logits(&projected, row, c));
                assert!((a - b).abs() < 1e-9 * a.abs().max(1.0), "{a} {b}");
            }
        }
    }
}
