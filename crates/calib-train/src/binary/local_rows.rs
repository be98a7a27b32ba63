//! Feature rows given through a local basis: `x_i = A c_i`, where `c_i` has at most four
//! non-zeros at consecutive positions (a cubic B-spline basis evaluated at one score).
//!
//! ```text
//! z_i = w . x_i = (A' w) . c_i = gamma . c_i
//! grad_w = A (sum_i r_i c_i),   H_w = A (sum_i c_i' diag(u_i) c_i) A'
//! ```
//!
//! The sums over rows cost 4 and 10 products a row instead of `d` and `d^2` for dense rows of
//! `d` features; `A` (`[d, width]`) is applied once a pass. Same loss, gradient and Hessian as
//! the dense rows `A c_i`, up to rounding.

/// Rows whose loss terms are computed together.
pub(crate) const CHUNK: usize = 256;

/// Rows `x_i = A c_i`: the four values of `c_i` from position `start[i]`, and `A`.
#[derive(Debug, Clone)]
pub(crate) struct LocalRows {
    values: Vec<[f64; 4]>,
    start: Vec<u32>,
    width: usize,
    transform: Vec<f64>,
}

/// Unscaled sums of a block of rows in the local basis.
pub(crate) struct LocalSums {
    pub loss: f64,
    /// `[width]`.
    pub g: Vec<f64>,
    /// `[width, 4]`: `band[j * 4 + q] = H(j, j + q)`.
    pub band: Vec<f64>,
}

impl LocalRows {
    /// No rows yet; `transform` is `A`, `[d, width]` row-major, `width >= 4`.
    pub fn new(width: usize, transform: Vec<f64>) -> Self {
        debug_assert!(width >= 4 && transform.len().is_multiple_of(width));
        Self { values: Vec::new(), start: Vec::new(), width, transform }
    }

    /// An empty set with the same basis.
    #[cfg(test)]
    pub fn empty_like(&self) -> Self {
        Self::new(self.width, self.transform.clone())
    }

    /// Appends the row with local values `values` from position `start` (`start + 4 <= width`).
    pub fn push(&mut self, start: usize, values: [f64; 4]) {
        debug_assert!(start + 4 <= self.width);
        self.start.push(u32::try_from(start).expect("a basis of fewer than 2^32 functions"));
        self.values.push(values);
    }

    /// Appends row `i` of `other` (same basis).
    pub fn push_row_of(&mut self, other: &Self, i: usize) {
        self.start.push(other.start[i]);
        self.values.push(other.values[i]);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// `d`, the number of features of a row.
    pub fn n_features(&self) -> usize {
        self.transform.len() / self.width
    }

    /// `gamma = A' w`.
    pub fn gamma(&self, w: &[f64]) -> Vec<f64> {
        let mut gamma = vec![0.0; self.width];
        for (a_row, &wa) in self.transform.chunks_exact(self.width).zip(w) {
            gamma.iter_mut().zip(a_row).for_each(|(g, a)| *g += wa * a);
        }
        gamma
    }

    /// `z_i = gamma . c_i`.
    pub fn z(&self, gamma: &[f64], i: usize) -> f64 {
        let (s, c) = (self.start[i] as usize, &self.values[i]);
        c[0] * gamma[s] + c[1] * gamma[s + 1] + c[2] * gamma[s + 2] + c[3] * gamma[s + 3]
    }

    /// Loss, `sum r_i c_i` and the banded `sum u_i c_i c_i'` over `rows`, the per-row terms
    /// from `problem` a chunk at a time.
    pub fn sums(
        &self,
        gamma: &[f64],
        rows: std::ops::Range<usize>,
        derivatives: bool,
        terms_of: impl Fn(usize, &[f64], &mut [Vec<f64>; 3]),
    ) -> LocalSums {
        let w = self.width;
        let mut out = LocalSums { loss: 0.0, g: vec![0.0; w], band: vec![0.0; w * 4] };
        let mut z = Vec::with_capacity(CHUNK);
        let mut terms = [vec![0.0; CHUNK], vec![0.0; CHUNK], vec![0.0; CHUNK]];
        let last = rows.end;
        for start in rows.step_by(CHUNK) {
            let end = (start + CHUNK).min(last);
            z.clear();
            z.extend((start..end).map(|i| self.z(gamma, i)));
            terms_of(start, &z, &mut terms);
            for (j, i) in (start..end).enumerate() {
                let (loss, r, u) = (terms[0][j], terms[1][j], terms[2][j]);
                out.loss += loss;
                if derivatives {
                    self.accumulate(i, r, u, &mut out);
                }
            }
        }
        out
    }

    /// Adds row `i`'s `r c_i` and `u c_i c_i'` to `out`.
    fn accumulate(&self, i: usize, r: f64, u: f64, out: &mut LocalSums) {
        let (s, c) = (self.start[i] as usize, &self.values[i]);
        for q in 0..4 {
            out.g[s + q] += r * c[q];
            let uc = u * c[q];
            let band = &mut out.band[(s + q) * 4..(s + q) * 4 + 4 - q];
            for (b, cr) in band.iter_mut().zip(&c[q..]) {
                *b += uc * cr;
            }
        }
    }

    /// The sums in the features' space: `(A g, A H A')`, `H` from its band.
    pub fn lift(&self, sums: &LocalSums) -> (Vec<f64>, Vec<f64>) {
        let (w, d) = (self.width, self.n_features());
        let a = |i: usize, j: usize| self.transform[i * w + j];
        let g = (0..d).map(|i| (0..w).map(|j| a(i, j) * sums.g[j]).sum()).collect();
        // AH = A H ([d, w]), H symmetric with H(j, j + q) = band[j][q].
        let mut ah = vec![0.0; d * w];
        for i in 0..d {
            for j in 0..w {
                let mut v = 0.0;
                for k in j.saturating_sub(3)..(j + 4).min(w) {
                    let h = if k <= j {
                        sums.band[k * 4 + (j - k)]
                    } else {
                        sums.band[j * 4 + (k - j)]
                    };
                    v += a(i, k) * h;
                }
                ah[i * w + j] = v;
            }
        }
        let mut h = vec![0.0; d * d];
        for i in 0..d {
            for k in i..d {
                let v: f64 = (0..w).map(|j| ah[i * w + j] * a(k, j)).sum();
                (h[i * d + k], h[k * d + i]) = (v, v);
            }
        }
        (g, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::LogisticProblem;

    /// The lifted sums equal the dense sums of the rows `A c_i`.
    #[test]
    fn lift_equals_the_dense_sums() {
        let (width, d) = (6, 3);
        let transform: Vec<f64> =
            (0..d * width).map(|k| ((k * 7 % 11) as f64 - 5.0) / 3.0).collect();
        let mut rows = LocalRows::new(width, transform.clone());
        rows.push(0, [0.2, 0.5, 0.3, 0.0]);
        rows.push(2, [0.1, 0.6, 0.2, 0.1]);
        rows.push(1, [0.0, 0.4, 0.4, 0.2]);
        let w = [0.3, -0.2, 0.7];
        let gamma = rows.gamma(&w);
        let targets = [0.0, 1.0, 1.0];
        let problem = LogisticProblem {
            features: crate::binary::Features::Local(&rows),
            n_features: d,
            targets: crate::binary::Targets::Values(&targets),
            intercept: false,
            l2: 0.0,
            weights: None,
        };
        let sums = rows.sums(&gamma, 0..3, true, |s, z, t| problem.terms(s, z, t));
        let (g, h) = rows.lift(&sums);
        let dense = |i: usize| -> Vec<f64> {
            let mut c = vec![0.0; width];
            let s = rows.start[i] as usize;
            c[s..s + 4].copy_from_slice(&rows.values[i]);
            (0..d).map(|a| (0..width).map(|j| transform[a * width + j] * c[j]).sum()).collect()
        };
        let (mut g_ref, mut h_ref) = (vec![0.0; d], vec![0.0; d * d]);
        for i in 0..3 {
            let x = dense(i);
            let z: f64 = x.iter().zip(&w).map(|(a, b)| a * b).sum();
            assert!((z - rows.z(&gamma, i)).abs() < 1e-14);
            let p = super::super::sigmoid(z);
            for a in 0..d {
                g_ref[a] += (p - targets[i]) * x[a];
                for b in 0..d {
                    h_ref[a * d + b] += p * (1.0 - p) * x[a] * x[b];
                }
            }
        }
        for (a, b) in g.iter().zip(&g_ref).chain(h.iter().zip(&h_ref)) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }
}
