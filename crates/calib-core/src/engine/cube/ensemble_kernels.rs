//! The kernels of ensemble temperature scaling's passes on the device
//! ([`super::ensemble_ops`]): one thread per row of logits, two loops over its classes (the
//! exponentials' sums first, then the centred sums), with `d_j = z_j - max z <= 0`.

use cubecl::prelude::*;

use super::kernels::flat_index;

/// One thread per row: the row's terms of `dL/du` and `d^2L/du^2` of `p = softmax(u z)` into
/// `out[row]` and `out[n + row]`, with `zbar = sum_j p_j d_j`, `c_j = d_j - zbar`,
/// `v = sum_j p_j c_j^2`:
///
/// ```text
/// NLL  L = -ln p_y:                    L' = -c_y,  L'' = v
/// MSE  L = (1/K) sum_j (p_j - y_j)^2:  L' = (2/K) (sum_j p_j^2 c_j - p_y c_y),
///      L'' = (2/K) (2 sum_j p_j^2 c_j^2 - v sum_j p_j^2 - p_y (c_y^2 - v))
/// ```
#[cube(launch, launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ets_derivatives(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    max: &Tensor<f32>,
    out: &mut Tensor<f32>,
    n: u32,
    n_classes: u32,
    u: f32,
    #[comptime] mse: bool,
) {
    let row = flat_index();
    if row >= n {
        terminate!();
    }
    let k = n_classes as usize;
    let base = (row * n_classes) as usize;
    let m = max[row as usize];
    let mut s0 = 0.0f32;
    let mut s1 = 0.0f32;
    for j in 0..k {
        let d = values[base + j] - m;
        let e = f32::exp(u * d);
        s0 += e;
        s1 += e * d;
    }
    let zbar = s1 / s0;
    let mut v = 0.0f32;
    let mut q = 0.0f32;
    let mut qc = 0.0f32;
    let mut qcc = 0.0f32;
    for j in 0..k {
        let d = values[base + j] - m;
        let p = f32::exp(u * d) / s0;
        let c = d - zbar;
        v += p * c * c;
        if mse {
            q += p * p;
            qc += p * p * c;
            qcc += p * p * c * c;
        }
    }
    let dy = values[base + u32::cast_from(labels[row as usize]) as usize] - m;
    let cy = dy - zbar;
    if mse {
        let py = f32::exp(u * dy) / s0;
        let two_k = 2.0f32 / f32::cast_from(n_classes);
        out[row as usize] = two_k * (qc - py * cy);
        out[(n + row) as usize] = two_k * (2.0f32 * qcc - v * q - py * (cy * cy - v));
    } else {
        out[row as usize] = -cy;
        out[(n + row) as usize] = v;
    }
}

/// One thread per row: with `a = softmax(u z)` and `b = softmax(z)`, the row's
/// `[sum a^2, sum a b, sum b^2, a_y, b_y]` into `out[f n + row]` (field `f`).
#[cube(launch, launch_unchecked)]
pub(crate) fn ets_mixture(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    max: &Tensor<f32>,
    out: &mut Tensor<f32>,
    n: u32,
    n_classes: u32,
    u: f32,
) {
    let row = flat_index();
    if row >= n {
        terminate!();
    }
    let k = n_classes as usize;
    let base = (row * n_classes) as usize;
    let m = max[row as usize];
    let mut sa = 0.0f32;
    let mut sb = 0.0f32;
    for j in 0..k {
        let d = values[base + j] - m;
        sa += f32::exp(u * d);
        sb += f32::exp(d);
    }
    let mut aa = 0.0f32;
    let mut ab = 0.0f32;
    let mut bb = 0.0f32;
    for j in 0..k {
        let d = values[base + j] - m;
        let a = f32::exp(u * d) / sa;
        let b = f32::exp(d) / sb;
        aa += a * a;
        ab += a * b;
        bb += b * b;
    }
    let dy = values[base + u32::cast_from(labels[row as usize]) as usize] - m;
    let r = row as usize;
    let rows = n as usize;
    out[r] = aa;
    out[rows + r] = ab;
    out[2 * rows + r] = bb;
    out[3 * rows + r] = f32::exp(u * dy) / sa;
    out[4 * rows + r] = f32::exp(dy) / sb;
}
