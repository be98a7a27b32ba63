//! The affine fits' passes: the diagonal maps' (vector scaling, structured vector scaling)
//! whole, the full maps' (matrix scaling, SMS, Dirichlet) softmax terms:
//!
//! ```text
//! s_ic = w_c x_ic + b_c,   m_i = max_c s_ic,   rest_i = sum_{s_ic < m_i} exp(s_ic - m_i) + (ties_i - 1)
//! p_ic = exp(s_ic - m_i) / (1 + rest_i),   nll_i = m_i - s_iy + ln(1 + rest_i)  (log1p)
//! g_ic = p_ic - [c = y_i]:   dL/dw_c = sum_i g_ic x_ic,   dL/db_c = sum_i g_ic
//! q_ic = p_ic (1 - p_ic):    d2L/dw_c^2 = sum_i q_ic x_ic^2,   d2L/db_c^2 = sum_i q_ic
//! ```
//!
//! the same function as the fit's burn tensor passes (calib-train's `DeviceObjective`), which
//! took some twenty tensor ops, each a pass over the `N x K` rows, per evaluation. Here it is
//! two kernels, each one read of the rows:
//!
//! - **rows** ([`affine_rows`]): a warp takes a row (lane `l` the classes `l, l + 32, ...`,
//!   the maximum and `rest` reduced through shared memory, the row's second read from the
//!   cache) and writes `nll_i` and the row's softmax terms `(m_i, 1 + rest_i)`;
//! - **columns** ([`affine_columns`]): a thread takes a class over a block of rows (the loads
//!   of a warp are 32 adjacent classes of one row), recomputes `p_ic` from `s_ic` and the
//!   row's terms, and keeps its class's two (four) sums in registers; each row block writes
//!   one row of partial sums that burn adds up.
//!
//! The column kernel keeps four sums a thread; a lane that kept its `K / 32` classes' sums over
//! its rows would hold 128 values at `K = 1,000`, more than a thread's registers.
//!
//! A full map (`s_i = W x_i + b`) gets `X W^T` from burn's matrix product; the row kernel reads
//! it with the bias (`scaled` off), a kernel of one thread per entry writes `G = P - onehot(y)`
//! and `Q = P (1 - P)` ([`affine_softmax_terms`]), and burn's products `G^T X` and `Q^T X^2`
//! give the gradient and the Hessian diagonal: two kernels beside the products and their sums,
//! where the tensor ops took some twenty passes.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, Dispatch, backend_extension};
use burn::tensor::{DType, Int, Shape, Tensor as DeviceTensor};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::kernels::flat_index;
use super::launch::launch;
use super::ops::grid;
use crate::backend::BackendKind;
use crate::engine::cost::count_launch;

/// Lanes per row (one warp) in the row kernel.
const LANES: u32 = 32;
/// Rows a cube of the row kernel takes at a time (warps per cube).
const WARPS: u32 = 8;
/// Most cubes of the row kernel; each strides over the rows.
const MAX_CUBES: usize = 1024;
/// Most classes a column cube takes (threads per cube).
const COLUMNS: usize = 256;
/// Rows a column cube takes, at least, before the row blocks reach [`MAX_ROW_BLOCKS`].
const BLOCK_ROWS: usize = 64;
/// Most row blocks of the column kernel (rows of partial sums).
const MAX_ROW_BLOCKS: usize = 1024;
/// Most classes: the row kernel's lanes take 32 classes each.
pub const MAX_CLASSES: usize = 1024;

/// The affine pass as a burn backend extension.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
pub trait AffineKernels: Backend {
    /// Per-row NLL `[N]` and per-row-block partial sums `[blocks, 2K]` (`[blocks, 4K]` with the
    /// Hessian diagonal) of the pass over `features` `[N, K]` with `labels` `[N]` (i32) and
    /// the parameters `weight`, `bias` `[K]`.
    fn calib_diagonal_affine(
        features: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        diagonal: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);

    /// The full maps' per-row NLL `[N]`, `G` `[N, K]` and (with `diagonal`, else an empty
    /// tensor) `Q` `[N, K]` of the scores `X W^T` `[N, K]` with `labels` `[N]` (i32) and the
    /// bias `[K]`.
    fn calib_softmax_terms(
        scores: FloatTensor<Self>,
        labels: IntTensor<Self>,
        bias: FloatTensor<Self>,
        diagonal: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);
}

impl AffineKernels for Cube {
    fn calib_diagonal_affine(
        features: CubeTensor,
        labels: CubeTensor,
        weight: CubeTensor,
        bias: CubeTensor,
        diagonal: bool,
    ) -> (CubeTensor, CubeTensor) {
        let (features, labels) = (into_contiguous(features), into_contiguous(labels));
        let (weight, bias) = (into_contiguous(weight), into_contiguous(bias));
        let (n, k) = (features.meta.shape()[0], features.meta.shape()[1]);
        let (nll, terms) = launch_rows(&features, &labels, &weight, &bias, true);
        let columns = k.next_multiple_of(LANES as usize).min(COLUMNS);
        let row_blocks = n.div_ceil(BLOCK_ROWS).clamp(1, MAX_ROW_BLOCKS);
        let width = if diagonal { 4 * k } else { 2 * k };
        let sums = empty_f32(&features, Shape::new([row_blocks, width]));
        let client = features.client.clone();
        count_launch(n * k * 4);
        launch!(affine_columns(
            &client,
            CubeCount::Static(k.div_ceil(columns) as u32, row_blocks as u32, 1),
            CubeDim::new_1d(columns as u32),
            features.into_tensor_arg(),
            labels.into_tensor_arg(),
            weight.into_tensor_arg(),
            bias.into_tensor_arg(),
            terms.into_tensor_arg(),
            sums.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            diagonal,
        ));
        (nll, sums)
    }

    fn calib_softmax_terms(
        scores: CubeTensor,
        labels: CubeTensor,
        bias: CubeTensor,
        diagonal: bool,
    ) -> (CubeTensor, CubeTensor, CubeTensor) {
        let (scores, labels, bias) =
            (into_contiguous(scores), into_contiguous(labels), into_contiguous(bias));
        let (n, k) = (scores.meta.shape()[0], scores.meta.shape()[1]);
        // The row kernel leaves its weight unread unless scaled.
        let (nll, terms) = launch_rows(&scores, &labels, &bias, &bias, false);
        let g = empty_f32(&scores, Shape::new([n, k]));
        let q = empty_f32(&scores, Shape::new([if diagonal { n } else { 0 }, k]));
        let client = scores.client.clone();
        count_launch(n * k * 4);
        let (cubes, dim) = grid(n * k);
        launch!(softmax_terms(
            &client,
            cubes,
            dim,
            scores.into_tensor_arg(),
            labels.into_tensor_arg(),
            bias.into_tensor_arg(),
            terms.into_tensor_arg(),
            g.clone().into_tensor_arg(),
            q.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            diagonal,
        ));
        (nll, g, q)
    }
}

/// An uninitialised f32 tensor of `shape` on `like`'s device.
fn empty_f32(like: &CubeTensor, shape: Shape) -> CubeTensor {
    empty_device_dtype(like.client.clone(), like.device.clone(), shape, DType::F32)
}

/// The row kernel ([`affine_rows`]) over `x` `[N, K]`: per-row NLL `[N]` and softmax terms
/// `[N, 2]`.
fn launch_rows(
    x: &CubeTensor,
    labels: &CubeTensor,
    w: &CubeTensor,
    b: &CubeTensor,
    scaled: bool,
) -> (CubeTensor, CubeTensor) {
    let (n, k) = (x.meta.shape()[0], x.meta.shape()[1]);
    let (nll, terms) = (empty_f32(x, Shape::new([n])), empty_f32(x, Shape::new([n, 2])));
    count_launch(n * k * 4);
    launch!(affine_rows(
        &x.client,
        CubeCount::Static(n.div_ceil(WARPS as usize).clamp(1, MAX_CUBES) as u32, 1, 1),
        CubeDim::new_1d(LANES * WARPS),
        x.clone().into_tensor_arg(),
        labels.clone().into_tensor_arg(),
        w.clone().into_tensor_arg(),
        b.clone().into_tensor_arg(),
        nll.clone().into_tensor_arg(),
        terms.clone().into_tensor_arg(),
        n as u32,
        k as u32,
        k.div_ceil(LANES as usize) as u32,
        scaled,
    ));
    (nll, terms)
}

/// Class `c`'s score of the entry `xv`: `w_c xv + b_c`, or `xv + b_c` unless `scaled`.
#[cube]
fn affine_score(
    xv: f32,
    w: &Tensor<f32>,
    b: &Tensor<f32>,
    c: usize,
    #[comptime] scaled: bool,
) -> f32 {
    let mut s = xv + b[c];
    if scaled {
        s = xv * w[c] + b[c];
    }
    s
}

/// The sum of the 32 values warp `warp` staged in `shared`.
#[cube]
fn warp_sum(shared: &Shared<[f32]>, warp: u32) -> f32 {
    let mut sum = 0.0f32;
    for l in 0..LANES {
        sum += shared[(warp * LANES + l) as usize];
    }
    sum
}

/// The row kernel (module docs): `nll[i]`, and `terms[2i] = m_i`, `terms[2i + 1] = 1 + rest_i`.
/// `per_lane` = ceil(K / 32) classes per lane; the scores are `w_c x_ic + b_c` when `scaled`,
/// else `x_ic + b_c` (`x` the full map's product `X W^T`, `w` unread).
#[cube(launch, launch_unchecked)]
fn affine_rows(
    x: &Tensor<f32>,
    labels: &Tensor<i32>,
    w: &Tensor<f32>,
    b: &Tensor<f32>,
    nll: &mut Tensor<f32>,
    terms: &mut Tensor<f32>,
    n_rows: u32,
    n_classes: u32,
    #[comptime] per_lane: u32,
    #[comptime] scaled: bool,
) {
    let (lane, warp) = (UNIT_POS_X % LANES, UNIT_POS_X / LANES);
    let j_max = per_lane as usize;
    let mut first = Shared::<[f32]>::new_slice((LANES * WARPS) as usize);
    let mut second = Shared::<[f32]>::new_slice((LANES * WARPS) as usize);
    let k = n_classes as usize;
    let mut row0 = CUBE_POS_X * WARPS;
    while row0 < n_rows {
        let i = row0 + warp;
        let valid = i < n_rows;
        let base = i as usize * k;
        // Below every score (a cube variable starts from a literal).
        let mut m = 0.0f32;
        m -= 3.0e38f32;
        for j in 0..j_max {
            let c = (lane + j as u32 * LANES) as usize;
            if valid && c < k {
                m = f32::max(m, affine_score(x[base + c], w, b, c, scaled));
            }
        }
        first[UNIT_POS_X as usize] = m;
        sync_cube();
        let mut big = first[(warp * LANES) as usize];
        for l in 1..LANES {
            big = f32::max(big, first[(warp * LANES + l) as usize]);
        }
        sync_cube();
        let mut rest = 0.0f32;
        let mut ties = 0.0f32;
        for j in 0..j_max {
            let c = (lane + j as u32 * LANES) as usize;
            if valid && c < k {
                let s = affine_score(x[base + c], w, b, c, scaled);
                if s < big {
                    rest += f32::exp(s - big);
                } else {
                    ties += 1.0;
                }
            }
        }
        first[UNIT_POS_X as usize] = rest;
        second[UNIT_POS_X as usize] = ties;
        sync_cube();
        let rest = warp_sum(&first, warp) + warp_sum(&second, warp) - 1.0;
        sync_cube();
        if valid && lane == 0 {
            let y = labels[i as usize] as usize;
            let s = affine_score(x[base + y], w, b, y, scaled);
            nll[i as usize] = big - s + f32::log1p(rest);
            terms[2 * i as usize] = big;
            terms[2 * i as usize + 1] = 1.0 + rest;
        }
        row0 += CUBE_COUNT_X * WARPS;
    }
}

/// `p_ic` of the score `s = s_ic` from row `i`'s softmax terms (the row kernel's `terms`):
/// `exp(s - m_i) / (1 + rest_i)`, the maximum's `exp` exactly 1.
#[cube]
fn softmax_entry(s: f32, terms: &Tensor<f32>, i: usize) -> f32 {
    let big = terms[2 * i];
    let mut e = 1.0f32;
    if s < big {
        e = f32::exp(s - big);
    }
    e / terms[2 * i + 1]
}

/// The column kernel (module docs): class `c = CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X` over the
/// rows `CUBE_POS_Y, CUBE_POS_Y + CUBE_COUNT_Y, ...`; row block `CUBE_POS_Y` of `sums` gets
/// `[sum g x, sum g]` (and `[sum q x^2, sum q]`) at `c` and `K + c` (and `2K + c`, `3K + c`).
#[cube(launch, launch_unchecked)]
fn affine_columns(
    x: &Tensor<f32>,
    labels: &Tensor<i32>,
    w: &Tensor<f32>,
    b: &Tensor<f32>,
    terms: &Tensor<f32>,
    sums: &mut Tensor<f32>,
    n_rows: u32,
    n_classes: u32,
    #[comptime] diagonal: bool,
) {
    let c = CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X;
    if c < n_classes {
        let (k, cu) = (n_classes as usize, c as usize);
        let (wc, bc) = (w[cu], b[cu]);
        let mut gw = 0.0f32;
        let mut gb = 0.0f32;
        let mut dw = 0.0f32;
        let mut db = 0.0f32;
        let mut i = CUBE_POS_Y;
        while i < n_rows {
            let iu = i as usize;
            let xv = x[iu * k + cu];
            let p = softmax_entry(xv * wc + bc, terms, iu);
            let mut g = p;
            if c == labels[iu] as u32 {
                g = p - 1.0;
            }
            gw += g * xv;
            gb += g;
            if diagonal {
                let q = p - p * p;
                dw += q * xv * xv;
                db += q;
            }
            i += CUBE_COUNT_Y;
        }
        let width = if diagonal { 4 * k } else { 2 * k };
        let out = CUBE_POS_Y as usize * width;
        sums[out + cu] = gw;
        sums[out + k + cu] = gb;
        if diagonal {
            sums[out + 2 * k + cu] = dw;
            sums[out + 3 * k + cu] = db;
        }
    }
}

/// The full maps' entries (module docs), a thread each: with `s = scores[i, c] + b_c` and the
/// row kernel's `terms`, `g[i, c] = p_ic - [c = y_i]` and, when `diagonal`, `q[i, c] =
/// p_ic (1 - p_ic)`.
#[cube(launch, launch_unchecked)]
fn softmax_terms(
    scores: &Tensor<f32>,
    labels: &Tensor<i32>,
    b: &Tensor<f32>,
    terms: &Tensor<f32>,
    g: &mut Tensor<f32>,
    q: &mut Tensor<f32>,
    n_rows: u32,
    n_classes: u32,
    #[comptime] diagonal: bool,
) {
    let at = flat_index() as usize;
    let k = n_classes as usize;
    if at < n_rows as usize * k {
        let (i, c) = (at / k, at % k);
        let p = softmax_entry(scores[at] + b[c], terms, i);
        let mut gv = p;
        if c == labels[i] as usize {
            gv = p - 1.0;
        }
        g[at] = gv;
        if diagonal {
            q[at] = p - p * p;
        }
    }
}

/// Whether the kernels take `[N, K]` rows: f32 on a GPU device, at most [`MAX_CLASSES`]
/// classes.
fn kernels_apply(rows: &DeviceTensor<2>) -> bool {
    let [_, k] = rows.dims();
    !BackendKind::of(&rows.device()).is_cpu()
        && rows.dtype() == DType::F32
        && (1..=MAX_CLASSES).contains(&k)
}

/// The terms of one [`affine_softmax_terms`]: per-row NLL `[N]`, `G = P - onehot(y)` `[N, K]`
/// and, when asked for, `Q = P (1 - P)` `[N, K]`.
pub type SoftmaxTerms = (DeviceTensor<1>, DeviceTensor<2>, Option<DeviceTensor<2>>);

/// The full affine maps' pass (matrix scaling, SMS, Dirichlet on log-probabilities) after
/// burn's product `scores = X W^T` `[N, K]`: with `P = softmax(scores + b)`, the per-row NLL,
/// `G` and (for `diagonal`) `Q` of the module docs in two kernels (the row kernel, then one
/// thread per entry) where some fifteen tensor ops took a pass each; the caller's `G^T X` and
/// `Q^T X^2` products give the gradient and the Hessian diagonal. `None` where the kernels do
/// not apply (a CPU device, not f32, more than [`MAX_CLASSES`] classes).
pub fn affine_softmax_terms(
    scores: &DeviceTensor<2>,
    labels: &DeviceTensor<1, Int>,
    bias: &DeviceTensor<1>,
    diagonal: bool,
) -> Option<SoftmaxTerms> {
    if !kernels_apply(scores) {
        return None;
    }
    let (nll, g, q) = <Dispatch as AffineKernels>::calib_softmax_terms(
        scores.clone().into_dispatch(),
        labels.clone().cast(DType::I32).into_dispatch(),
        bias.clone().into_dispatch(),
        diagonal,
    );
    let q = diagonal.then(|| DeviceTensor::from_dispatch(q));
    Some((DeviceTensor::from_dispatch(nll), DeviceTensor::from_dispatch(g), q))
}

/// The sums of one [`diagonal_affine_pass`]: per-row NLL `[N]`, the gradient's sums `[2K]`
/// (`sum_i g_i ⊙ x_i`, then `sum_i g_i`) and, when asked for, the Hessian diagonal's `[2K]`.
pub type AffineSums = (DeviceTensor<1>, DeviceTensor<1>, Option<DeviceTensor<1>>);

/// One pass of the diagonal affine objective (module docs: the row and the column kernels)
/// over `features` `[N, K]` and `labels` `[N]` with `weight` and `bias` `[K]`, on their GPU
/// device; `None` where the kernels do not apply (a CPU device, not f32, more than
/// [`MAX_CLASSES`] classes).
pub fn diagonal_affine_pass(
    features: &DeviceTensor<2>,
    labels: &DeviceTensor<1, Int>,
    weight: &DeviceTensor<1>,
    bias: &DeviceTensor<1>,
    diagonal: bool,
) -> Option<AffineSums> {
    if !kernels_apply(features) {
        return None;
    }
    let [_, k] = features.dims();
    let (nll, sums) = <Dispatch as AffineKernels>::calib_diagonal_affine(
        features.clone().into_dispatch(),
        labels.clone().cast(DType::I32).into_dispatch(),
        weight.clone().into_dispatch(),
        bias.clone().into_dispatch(),
        diagonal,
    );
    let sums = DeviceTensor::<2>::from_dispatch(sums).sum_dim(0);
    let width = sums.dims()[1];
    let sums = sums.reshape([width]);
    let gradient = sums.clone().narrow(0, 0, 2 * k);
    let hessian = diagonal.then(|| sums.narrow(0, 2 * k, 2 * k));
    Some((DeviceTensor::from_dispatch(nll), gradient, hessian))
}
