//! The kernel that applies binary maps on the device ([`super::map_ops`]): each class's map a
//! table of thresholds and values, or a logistic map's coefficients, read at every score of
//! the class.

use cubecl::prelude::*;

use super::kernels::{MAX, SUM, flat_index};
use super::range_kernels::{item_class, item_row, n_items};

/// One thread per score (class-wise `t = i K + c`, binary `t = i` with map 0): the map's value
/// at the score into `out[t]`. Class `c`'s thresholds are `x[xo[c]..xo[c + 1]]`, its values
/// `y[yo[c]..yo[c + 1]]` (no values: the identity). `linear`: a line between thresholds (with
/// the slopes in `slopes` beside the values), the end values outside, as isotonic maps read;
/// otherwise steps, value `j` where `j` thresholds (a histogram's inner edges) are below the
/// score (right-closed bins). `logistic`: no thresholds, the values a logistic map's
/// `[features, lo, hi, floor, c_0, c_1, c_2]` ([`logistic_value`]).
#[cube(launch, launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn map_apply(
    values: &Tensor<f32>,
    rows: &Tensor<f32>,
    x: &Tensor<f32>,
    y: &Tensor<f32>,
    slopes: &Tensor<f32>,
    xo: &Tensor<u32>,
    yo: &Tensor<u32>,
    out: &mut Tensor<f32>,
    n_rows: u32,
    n_classes: u32,
    #[comptime] classes: bool,
    #[comptime] logits: bool,
    #[comptime] linear: bool,
    #[comptime] logistic: bool,
) {
    let t = flat_index();
    if t >= n_items(n_rows, n_classes, classes) {
        terminate!();
    }
    let (i, c) = (item_row(t, n_classes, classes), item_class(t, n_classes, classes));
    let mut s = values[t as usize];
    if logits {
        let n = n_rows as usize;
        s = f32::exp(s - rows[MAX * n + i as usize]) / rows[SUM * n + i as usize];
    }
    let (x0, nx) = (xo[c as usize], xo[(c + 1) as usize] - xo[c as usize]);
    let y0 = yo[c as usize];
    let mut value = s;
    if logistic {
        if yo[(c + 1) as usize] > y0 {
            value = logistic_value(y, y0 as usize, s);
        }
    } else if yo[(c + 1) as usize] > y0 {
        // The thresholds at or below the score.
        let (mut lo, mut hi) = (0u32, nx);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if x[(x0 + mid) as usize] <= s {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if linear {
            if lo == 0 {
                value = y[y0 as usize];
            } else if lo >= nx {
                value = y[(y0 + nx - 1) as usize];
            } else {
                let j = (y0 + lo - 1) as usize;
                value = slopes[j] * (s - x[(x0 + lo - 1) as usize]) + y[j];
            }
        } else {
            // Steps compare `e < s`: thresholds at the score are not below it.
            let mut below = lo;
            while below > 0 && x[(x0 + below - 1) as usize] == s {
                below -= 1;
            }
            value = y[(y0 + below) as usize];
        }
    }
    out[t as usize] = value;
}

/// `sigmoid(c_0 + c_1 u_1 + c_2 u_2)` of score `s` from the map at `y[at..at + 7]`:
/// `[features, lo, hi, floor, c_0, c_1, c_2]` ([`logistic_feature`]).
#[cube]
fn logistic_value(y: &Tensor<f32>, at: usize, s: f32) -> f32 {
    let (features, lo, hi, floor) = (y[at], y[at + 1], y[at + 2], y[at + 3]);
    let u1 = logistic_feature(features, 1u32, s, lo, hi, floor);
    let u2 = logistic_feature(features, 2u32, s, lo, hi, floor);
    let v = y[at + 4] + y[at + 5] * u1 + y[at + 6] * u2;
    1.0f32 / (1.0f32 + f32::exp(-v))
}

/// Feature `which` (1 or 2) of score `s` clipped to `[lo, hi]`, with `l_0 = ln max(s, floor)`
/// and `l_1 = ln max(1 - s, floor)`: `(u_1, u_2)` = `(l_0 - l_1, (l_0 - l_1)^2)` (`features`
/// 0: the logit's powers), `(l_0, l_1)` (1: the logs) or `(s, 0)` (2: the score).
#[cube]
pub(crate) fn logistic_feature(
    features: f32,
    which: u32,
    s: f32,
    lo: f32,
    hi: f32,
    floor: f32,
) -> f32 {
    let clipped = f32::min(f32::max(s, lo), hi);
    let l0 = f32::ln(f32::max(clipped, floor));
    let l1 = f32::ln(f32::max(1.0f32 - clipped, floor));
    let z = l0 - l1;
    let mut u = z;
    if which == 2u32 {
        u = z * z;
    }
    if features == 1.0f32 {
        u = l0;
        if which == 2u32 {
            u = l1;
        }
    } else if features == 2.0f32 {
        u = clipped;
        if which == 2u32 {
            u = 0.0f32;
        }
    }
    u
}
