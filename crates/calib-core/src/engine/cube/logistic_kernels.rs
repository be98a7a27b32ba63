//! The kernel of the logistic maps' fits on the device ([`super::logistic_rows`]): one thread
//! per class and block of rows sums its problem's loss, gradient and Hessian there.

use cubecl::prelude::*;

use super::kernels::{MAX, SUM, flat_index};
use super::map_kernels::logistic_feature;

/// Fields of a problem's sums: the loss, the gradient `[3]`, the Hessian's upper triangle
/// `[6]` (`00, 01, 02, 11, 12, 22`) and the positives.
pub(crate) const FIELDS: usize = 11;

/// One thread per class `c` and block `b` of `block_rows` rows (`t = b C + c`): over the
/// block's rows, with the score `s` of the row's pair (logits: `exp(z - max) / sum` from the
/// row pass `rows`), `u = (1, u_1, u_2)` its features (`spec`: `[features, lo, hi, floor]`, as
/// [`logistic_feature`]), `v = params[c] . u`, `p = sigmoid(v)`, the outcome `y` and its target
/// `t` (`targets[c]`: `[positive, negative]`):
///
/// ```text
/// loss += softplus(v) - t v,   g += (p - t) u,   H += p (1 - p) u u',   positives += y
/// ```
/// into `out[(b C + c) FIELDS..]`.
#[cube(launch, launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn logistic_sums(
    values: &Tensor<f32>,
    rows: &Tensor<f32>,
    labels: &Tensor<i32>,
    spec: &Tensor<f32>,
    params: &Tensor<f32>,
    targets: &Tensor<f32>,
    out: &mut Tensor<f32>,
    n_rows: u32,
    n_cols: u32,
    block_rows: u32,
    n_blocks: u32,
    #[comptime] logits: bool,
    #[comptime] binary: bool,
) {
    let t = flat_index();
    if t >= n_blocks * n_cols {
        terminate!();
    }
    let c = t % n_cols;
    let start = (t / n_cols) * block_rows;
    let end = u32::min(start + block_rows, n_rows);
    let (kind, lo, hi, floor) = (spec[0], spec[1], spec[2], spec[3]);
    let at = (3 * c) as usize;
    let (c0, c1, c2) = (params[at], params[at + 1], params[at + 2]);
    let (t_pos, t_neg) = (targets[(2 * c) as usize], targets[(2 * c + 1) as usize]);
    let n = n_rows as usize;
    let mut sums = Array::<f32>::new(FIELDS);
    for f in 0..FIELDS {
        sums[f] = 0.0f32;
    }
    for i in start..end {
        let mut s = values[(i * n_cols + c) as usize];
        if logits {
            s = f32::exp(s - rows[MAX * n + i as usize]) / rows[SUM * n + i as usize];
        }
        let label = u32::cast_from(labels[i as usize]);
        let mut hit = label == c;
        if binary {
            hit = label == 1u32;
        }
        let u1 = logistic_feature(kind, 1u32, s, lo, hi, floor);
        let u2 = logistic_feature(kind, 2u32, s, lo, hi, floor);
        let v = c0 + c1 * u1 + c2 * u2;
        let mut target = t_neg;
        let mut y = 0.0f32;
        if hit {
            target = t_pos;
            y = 1.0f32;
        }
        // p and 1 - p each from its own exponential, and the loss as t sp(-v) + (1 - t)
        // sp(v): a well-fitted row keeps its small terms (1 - p, its loss) in full, where
        // p - 1 and sp(v) - v would round them away.
        let (p, q) = (1.0f32 / (1.0f32 + f32::exp(-v)), 1.0f32 / (1.0f32 + f32::exp(v)));
        let (r, w) = ((1.0f32 - target) * p - target * q, p * q);
        sums[0] += target * softplus(-v) + (1.0f32 - target) * softplus(v);
        sums[1] += r;
        sums[2] += r * u1;
        sums[3] += r * u2;
        sums[4] += w;
        sums[5] += w * u1;
        sums[6] += w * u2;
        sums[7] += w * u1 * u1;
        sums[8] += w * u1 * u2;
        sums[9] += w * u2 * u2;
        sums[10] += y;
    }
    let base = (t * FIELDS as u32) as usize;
    for f in 0..FIELDS {
        out[base + f] = sums[f];
    }
}

/// `ln(1 + e^x)`, its small values in full: `e^-|x|` below 1e-4 takes `ln(1 + e) = e (1 - e /
/// 2)` (to `e^3 / 3`), where `1 + e` would round `e` away in f32.
#[cube]
fn softplus(x: f32) -> f32 {
    let e = f32::exp(-f32::abs(x));
    let mut tail = f32::ln(1.0f32 + e);
    if e < 1e-4f32 {
        tail = e * (1.0f32 - 0.5f32 * e);
    }
    f32::max(x, 0.0f32) + tail
}
