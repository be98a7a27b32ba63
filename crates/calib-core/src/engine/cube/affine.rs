//! The diagonal affine fits' pass (vector scaling, structured vector scaling) as one kernel:
//!
//! ```text
//! s_ic = w_c x_ic + b_c,   m_i = max_c s_ic,   rest_i = sum_{s_ic < m_i} exp(s_ic - m_i) + (ties_i - 1)
//! p_ic = exp(s_ic - m_i) / (1 + rest_i),   nll_i = m_i - s_iy + ln(1 + rest_i)  (log1p)
//! g_ic = p_ic - [c = y_i]:   dL/dw_c = sum_i g_ic x_ic,   dL/db_c = sum_i g_ic
//! q_ic = p_ic (1 - p_ic):    d2L/dw_c^2 = sum_i q_ic x_ic^2,   d2L/db_c^2 = sum_i q_ic
//! ```
//!
//! the same function as the fit's burn tensor passes (calib-train's `DeviceObjective`), which
//! took some twenty tensor ops, each a pass over the `N x K` rows, per evaluation. Here a warp
//! takes a row (lane `l` the classes `l, l + 32, ...`, the row's maximum and `rest` reduced
//! through shared memory), each lane keeps its classes' sums in registers over the cube's
//! rows, and each cube writes one row of partial sums that burn adds up: one read of the
//! rows per evaluation.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, Dispatch, backend_extension};
use burn::tensor::{DType, Int, Shape, Tensor as DeviceTensor};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::launch::launch;
use crate::backend::BackendKind;
use crate::engine::cost::count_launch;

/// Lanes per row (one warp).
const LANES: u32 = 32;
/// Rows a cube takes at a time (warps per cube).
const WARPS: u32 = 8;
/// Most cubes of one launch; each strides over the rows.
const MAX_CUBES: usize = 1024;
/// Most classes: 32 per lane in registers.
pub const MAX_CLASSES: usize = 1024;

/// The affine pass as a burn backend extension.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
pub trait AffineKernels: Backend {
    /// Per-row NLL `[N]` and per-cube partial sums `[cubes, 2K]` (`[cubes, 4K]` with the
    /// Hessian diagonal) of the pass over `features` `[N, K]` with `labels` `[N]` (i32) and
    /// the parameters `weight`, `bias` `[K]`.
    fn calib_diagonal_affine(
        features: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        diagonal: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);
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
        count_launch(n * k * 4);
        let cubes = n.div_ceil(WARPS as usize).clamp(1, MAX_CUBES);
        let width = if diagonal { 4 * k } else { 2 * k };
        let (client, device) = (features.client.clone(), features.device.clone());
        let nll = empty_device_dtype(client.clone(), device.clone(), Shape::new([n]), DType::F32);
        let sums =
            empty_device_dtype(client.clone(), device, Shape::new([cubes, width]), DType::F32);
        launch!(diagonal_affine(
            &client,
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(LANES * WARPS),
            features.into_tensor_arg(),
            labels.into_tensor_arg(),
            weight.into_tensor_arg(),
            bias.into_tensor_arg(),
            nll.clone().into_tensor_arg(),
            sums.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            k.div_ceil(LANES as usize) as u32,
            diagonal,
        ));
        (nll, sums)
    }
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

/// The pass; see the module docs. `per_lane` = ceil(K / 32) classes per lane.
#[cube(launch, launch_unchecked)]
fn diagonal_affine(
    x: &Tensor<f32>,
    labels: &Tensor<i32>,
    w: &Tensor<f32>,
    b: &Tensor<f32>,
    nll: &mut Tensor<f32>,
    sums: &mut Tensor<f32>,
    n_rows: u32,
    n_classes: u32,
    #[comptime] per_lane: u32,
    #[comptime] diagonal: bool,
) {
    let (lane, warp) = (UNIT_POS_X % LANES, UNIT_POS_X / LANES);
    let j_max = per_lane as usize;
    let mut gw = Array::<f32>::new(j_max);
    let mut gb = Array::<f32>::new(j_max);
    let mut dw = Array::<f32>::new(j_max);
    let mut db = Array::<f32>::new(j_max);
    for j in 0..j_max {
        gw[j] = 0.0;
        gb[j] = 0.0;
        dw[j] = 0.0;
        db[j] = 0.0;
    }
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
                m = f32::max(m, x[base + c] * w[c] + b[c]);
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
                let s = x[base + c] * w[c] + b[c];
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
        if valid {
            let y = labels[i as usize] as u32;
            let total = 1.0 + rest;
            for j in 0..j_max {
                let c = lane + j as u32 * LANES;
                if c < n_classes {
                    let xv = x[base + c as usize];
                    let s = xv * w[c as usize] + b[c as usize];
                    let mut e = 1.0f32;
                    if s < big {
                        e = f32::exp(s - big);
                    }
                    let p = e / total;
                    let mut g = p;
                    if c == y {
                        g = p - 1.0;
                        nll[i as usize] = big - s + f32::log1p(rest);
                    }
                    gw[j] += g * xv;
                    gb[j] += g;
                    if diagonal {
                        let q = p - p * p;
                        dw[j] += q * xv * xv;
                        db[j] += q;
                    }
                }
            }
        }
        row0 += CUBE_COUNT_X * WARPS;
    }
    let width = if diagonal { 4 * k } else { 2 * k };
    let out = CUBE_POS_X as usize * width;
    for j in 0..j_max {
        let c = (lane + j as u32 * LANES) as usize;
        first[UNIT_POS_X as usize] = gw[j];
        second[UNIT_POS_X as usize] = gb[j];
        sync_cube();
        write_class_sums(&first, &second, sums, lane, warp, c, k, out);
        sync_cube();
        if diagonal {
            first[UNIT_POS_X as usize] = dw[j];
            second[UNIT_POS_X as usize] = db[j];
            sync_cube();
            write_class_sums(&first, &second, sums, lane, warp, c, k, out + 2 * k);
            sync_cube();
        }
    }
}

/// Class `c`'s two sums staged by every warp in `first` and `second`, added up by the first
/// warp and written to `sums` at `at + c` and `at + k + c`.
#[cube]
fn write_class_sums(
    first: &Shared<[f32]>,
    second: &Shared<[f32]>,
    sums: &mut Tensor<f32>,
    lane: u32,
    warp: u32,
    c: usize,
    k: usize,
    at: usize,
) {
    if warp == 0 && c < k {
        let mut a = 0.0f32;
        let mut s = 0.0f32;
        for v in 0..WARPS {
            a += first[(v * LANES + lane) as usize];
            s += second[(v * LANES + lane) as usize];
        }
        sums[at + c] = a;
        sums[at + k + c] = s;
    }
}

/// The sums of one [`diagonal_affine_pass`]: per-row NLL `[N]`, the gradient's sums `[2K]`
/// (`sum_i g_i ⊙ x_i`, then `sum_i g_i`) and, when asked for, the Hessian diagonal's `[2K]`.
pub type AffineSums = (DeviceTensor<1>, DeviceTensor<1>, Option<DeviceTensor<1>>);

/// One pass of the diagonal affine objective (module docs) over `features` `[N, K]` and
/// `labels` `[N]` with `weight` and `bias` `[K]`, on their GPU device; `None` where the
/// kernel does not apply (a CPU device, not f32, more than [`MAX_CLASSES`] classes).
pub fn diagonal_affine_pass(
    features: &DeviceTensor<2>,
    labels: &DeviceTensor<1, Int>,
    weight: &DeviceTensor<1>,
    bias: &DeviceTensor<1>,
    diagonal: bool,
) -> Option<AffineSums> {
    let [_, k] = features.dims();
    let applies = !BackendKind::of(&features.device()).is_cpu()
        && features.dtype() == DType::F32
        && (1..=MAX_CLASSES).contains(&k);
    if !applies {
        return None;
    }
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
