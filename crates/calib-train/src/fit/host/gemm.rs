//! A safe, bounds-checked front for `matrixmultiply::dgemm` and `sgemm` (the matrix products
//! the `ndarray` crate uses), in f64 and f32.
//!
//! This is the second audited use of `unsafe` in the workspace (the lint is `deny`): `dgemm`
//! and `sgemm` take raw pointers and strides; [`MatRef::check`] proves every element it can
//! touch lies inside the borrowed slice before the call, and the output is an exclusively
//! borrowed, contiguous row-major block, so nothing aliases.
#![allow(unsafe_code)]

/// The element types of [`gemm`]: f64 and f32.
pub(crate) trait Element: Copy + PartialEq + 'static {
    /// Zero.
    const ZERO: Self;

    /// `matrixmultiply`'s product of this type, `c = alpha a b + beta c`.
    ///
    /// # Safety
    /// As `matrixmultiply::dgemm`: every element the strides address lies in its buffer, and
    /// `c` aliases neither input.
    unsafe fn raw_gemm(
        dims: (usize, usize, usize),
        a: (*const Self, isize, isize),
        b: (*const Self, isize, isize),
        beta: Self,
        c: (*mut Self, isize, isize),
    );
}

/// [`Element`] for `$t` through `matrixmultiply`'s `$gemm`.
macro_rules! element {
    ($t:ty, $gemm:path) => {
        impl Element for $t {
            const ZERO: Self = 0.0;

            unsafe fn raw_gemm(
                (m, k, n): (usize, usize, usize),
                a: (*const Self, isize, isize),
                b: (*const Self, isize, isize),
                beta: Self,
                c: (*mut Self, isize, isize),
            ) {
                // SAFETY: the caller's contract, as matrixmultiply's.
                unsafe { $gemm(m, k, n, 1.0, a.0, a.1, a.2, b.0, b.1, b.2, beta, c.0, c.1, c.2) }
            }
        }
    };
}

element!(f64, matrixmultiply::dgemm);
element!(f32, matrixmultiply::sgemm);

/// A read-only strided view of an `rows x cols` matrix inside `data`:
/// element `(i, j)` is `data[i * row_stride + j * col_stride]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatRef<'a, T = f64> {
    pub data: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a, T> MatRef<'a, T> {
    /// A contiguous row-major `rows x cols` matrix.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self { data, rows, cols, row_stride: cols, col_stride: 1 }
    }

    /// The transpose (same data, strides swapped).
    pub fn t(self) -> Self {
        Self {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }

    /// Panics unless every element lies in `data` (an internal invariant: callers build views
    /// from their own buffers).
    fn check(&self) {
        if self.rows > 0 && self.cols > 0 {
            let last = (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride;
            assert!(last < self.data.len(), "matrix view out of bounds");
        }
    }
}

/// `c = a b + beta c` for a row-major `c` of `a.rows x b.cols` (`beta` 0 or 1: overwrite
/// or accumulate).
pub(crate) fn gemm<T: Element>(a: MatRef<'_, T>, b: MatRef<'_, T>, beta: T, c: &mut [T]) {
    assert_eq!(a.cols, b.rows, "inner dimensions differ");
    a.check();
    b.check();
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(c.len(), m * n, "output has the wrong size");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if beta == T::ZERO {
            c.fill(T::ZERO);
        }
        return;
    }
    let s = |v: usize| v as isize;
    let view = |x: MatRef<'_, T>| (x.data.as_ptr(), s(x.row_stride), s(x.col_stride));
    // SAFETY: `check` bounds every element `a` and `b` can address inside their slices; `c`
    // is an exclusive, contiguous m x n row-major buffer (length asserted), so the strides
    // (n, 1) address exactly its elements and none alias.
    unsafe { T::raw_gemm((m, k, n), view(a), view(b), beta, (c.as_mut_ptr(), s(n), 1)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: MatRef<'_>, b: MatRef<'_>) -> Vec<f64> {
        let mut c = vec![0.0; a.rows * b.cols];
        for i in 0..a.rows {
            for j in 0..b.cols {
                for l in 0..a.cols {
                    c[i * b.cols + j] += a.data[i * a.row_stride + l * a.col_stride]
                        * b.data[l * b.row_stride + j * b.col_stride];
                }
            }
        }
        c
    }

    #[test]
    fn products_and_transposes_match_a_plain_loop() {
        let a: Vec<f64> = (0..35).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..35).map(|i| (i as f64 * 0.11).cos()).collect();
        let am = MatRef::row_major(&a, 5, 7);
        let bm = MatRef::row_major(&b, 5, 7);
        // a b^T (5 x 5), a^T b (7 x 7), accumulation with beta = 1.
        for (x, y) in [(am, bm.t()), (am.t(), bm)] {
            let want = naive(x, y);
            let mut got = vec![0.0; want.len()];
            gemm(x, y, 0.0, &mut got);
            gemm(x, y, 1.0, &mut got);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - 2.0 * w).abs() < 1e-12, "{g} vs {}", 2.0 * w);
            }
        }
    }

    #[test]
    fn f32_products_match_the_f64_ones() {
        let a: Vec<f64> = (0..35).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..35).map(|i| (i as f64 * 0.11).cos()).collect();
        let (a32, b32): (Vec<f32>, Vec<f32>) =
            a.iter().zip(&b).map(|(&x, &y)| (x as f32, y as f32)).unzip();
        let want = naive(MatRef::row_major(&a, 5, 7), MatRef::row_major(&b, 5, 7).t());
        let mut got = vec![0.0f32; want.len()];
        gemm(MatRef::row_major(&a32, 5, 7), MatRef::row_major(&b32, 5, 7).t(), 0.0, &mut got);
        for (g, w) in got.iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() < 1e-5, "{g} vs {w}");
        }
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn a_view_past_its_data_is_refused() {
        let a = vec![0.0; 6];
        let view = MatRef { data: &a, rows: 3, cols: 3, row_stride: 3, col_stride: 1 };
        gemm(view, MatRef::row_major(&a, 3, 2), 0.0, &mut [0.0; 6]);
    }
}
