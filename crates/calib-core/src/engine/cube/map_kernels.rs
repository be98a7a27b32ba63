//! The kernel that applies binary maps on the device ([`super::map_ops`]): each class's map a
//! table of thresholds and values, read at every score of the class.

use cubecl::prelude::*;

use super::kernels::{MAX, SUM, flat_index};
use super::range_kernels::{item_class, item_row, n_items};

/// One thread per score (class-wise `t = i K + c`, binary `t = i` with map 0): the map's value
/// at the score into `out[t]`. Class `c`'s thresholds are `x[xo[c]..xo[c + 1]]`, its values
/// `y[yo[c]..yo[c + 1]]` (no values: the identity). `linear`: a line between thresholds (with
/// the slopes in `slopes` beside the values), the end values outside, as isotonic maps read;
/// otherwise steps, value `j` where `j` thresholds (a histogram's inner edges) are below the
/// score (right-closed bins).
#[cube(launch, launch_unchecked)]
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
    if yo[(c + 1) as usize] > y0 {
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
