//! The CubeCL kernels: a fused row pass, static-bin accumulation (top-label and class-wise)
//! and the tempered moments of the temperature solver. f32 throughout (Mesa's software Vulkan
//! computes f64 `exp`/`ln` wrong, and GPUs are built for f32). Bin sums are exact fixed-point
//! integers ([`super::fixed_bins`]).

use cubecl::prelude::*;

use super::fixed_bins::{RegisterBins, add_bin, fixed};

/// Rows of the row pass's `[ROW_FIELDS, N]` output: the top-label score.
pub(crate) const CONF: usize = 0;
/// Whether the prediction is right (0 or 1).
pub(crate) const HIT: usize = 1;
/// `log p[i, y]`.
pub(crate) const LOG_PY: usize = 2;
/// The row's Brier score `sum_k (p_k - [y = k])^2`.
pub(crate) const BRIER: usize = 3;
/// The row's largest value (logits: the shift of the stable softmax).
pub(crate) const MAX: usize = 4;
/// `sum_k exp(z_k - max)` (logits), 1 for probabilities.
pub(crate) const SUM: usize = 5;
/// Number of fields of the row pass.
pub(crate) const ROW_FIELDS: usize = 6;

/// This thread's index along a 1-D launch folded into a 2-D grid (grids are at most 65,535
/// cubes along each axis).
#[cube]
pub(crate) fn flat_index() -> u32 {
    (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X
}

/// Right-closed bin of `s` among `n_bins` bins: the number of interior edges below `s`.
#[cube]
fn bin_of(s: f32, edges: &Tensor<f32>, n_bins: u32) -> u32 {
    let mut b = 0u32;
    for j in 1..n_bins {
        if s > edges[j as usize] {
            b += 1;
        }
    }
    b
}

/// Threads that share a row in the row pass: lane `l` reads the row's values `l, l + LANES,
/// ...`, so a row's lanes read `LANES` consecutive values (one 128-byte line) at a time and a
/// warp reads one whole line, where one thread per row read 32 rows' lines at once.
pub(crate) const LANES: u32 = 32;
/// Threads per cube of the row pass (`ROW_THREADS / LANES` rows).
pub(crate) const ROW_THREADS: u32 = 256;
/// A lane without values (K < [`LANES`]).
const NO_TOP: u32 = 0xFFFF_FFFF;

/// [`LANES`] threads per row, each over every `LANES`-th value in one online pass: the running
/// maximum, its first position and the sums rescaled as the maximum moves (online softmax).
/// The row's first lane then combines the lanes' shares from shared memory: the largest
/// maximum (the lowest class on ties), and for logits `rest = sum_{j != argmax} exp(z_j - m)`
/// as the holder's own `rest` plus `(rest_l + 1) f_l` of every other lane, `f_l = exp(m_l -
/// m)`, so `1 - conf` keeps its full relative precision (`conf = 1 / (1 + rest)`), as the host
/// engine's does.
#[cube(launch, launch_unchecked)]
pub(crate) fn row_pass(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    rows: &mut Tensor<f32>,
    pred: &mut Tensor<i32>,
    n_rows: u32,
    n_classes: u32,
    #[comptime] logits: bool,
) {
    let t = flat_index();
    let (row, lane) = (t / LANES, t % LANES);
    let valid = row < n_rows;
    let (n, k) = (n_rows as usize, n_classes as usize);
    let base = row as usize * k;
    let mut m = 0.0f32;
    let mut top = 0xFFFF_FFFFu32; // NO_TOP: a cube variable starts from a literal
    let mut rest = 0.0f32;
    let mut squares = 0.0f32;
    if valid && (lane as usize) < k {
        m = values[base + lane as usize];
        top = lane;
        squares = 1.0;
        if !logits {
            squares = m * m;
        }
        let mut j = lane as usize + LANES as usize;
        while j < k {
            let z = values[base + j];
            if logits {
                if z > m {
                    let f = f32::exp(m - z);
                    rest = (rest + 1.0) * f;
                    squares = squares * f * f + 1.0;
                    m = z;
                    top = j as u32;
                } else {
                    let e = f32::exp(z - m);
                    rest += e;
                    squares += e * e;
                }
            } else {
                if z > m {
                    m = z;
                    top = j as u32;
                }
                squares += z * z;
            }
            j += LANES as usize;
        }
    }
    let slot = UNIT_POS_X as usize;
    let mut shared_m = Shared::<[f32]>::new_slice(ROW_THREADS as usize);
    let mut shared_rest = Shared::<[f32]>::new_slice(ROW_THREADS as usize);
    let mut shared_squares = Shared::<[f32]>::new_slice(ROW_THREADS as usize);
    let mut shared_top = Shared::<[u32]>::new_slice(ROW_THREADS as usize);
    shared_m[slot] = m;
    shared_rest[slot] = rest;
    shared_squares[slot] = squares;
    shared_top[slot] = top;
    sync_cube();
    if valid && lane == 0 {
        for l in 1..LANES as usize {
            let other = shared_top[slot + l];
            let mo = shared_m[slot + l];
            if other != NO_TOP && (mo > m || (mo == m && other < top)) {
                m = mo;
                top = other;
            }
        }
        rest = 0.0;
        squares = 0.0;
        for l in 0..LANES as usize {
            let at = slot + l;
            if shared_top[at] != NO_TOP {
                if logits {
                    let f = f32::exp(shared_m[at] - m);
                    if shared_top[at] == top {
                        rest += shared_rest[at];
                    } else {
                        rest += shared_rest[at] * f + f;
                    }
                    squares += shared_squares[at] * f * f;
                } else {
                    squares += shared_squares[at];
                }
            }
        }
        write_row(values, labels, rows, pred, n, k, row as usize, m, top, rest, squares, logits);
    }
}

/// Writes row `i`'s fields from its maximum `m`, first argmax `top`, `rest` and squares.
#[cube]
fn write_row(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    rows: &mut Tensor<f32>,
    pred: &mut Tensor<i32>,
    n: usize,
    k: usize,
    i: usize,
    m: f32,
    top: u32,
    rest: f32,
    squares: f32,
    #[comptime] logits: bool,
) {
    let y = u32::cast_from(labels[i]);
    let zy = values[i * k + y as usize];
    let mut hit = 0.0f32;
    if top == y {
        hit = 1.0;
    }
    if logits {
        let total = 1.0 + rest;
        let ey = f32::exp(zy - m);
        rows[CONF * n + i] = 1.0 / total;
        rows[LOG_PY * n + i] = (zy - m) - f32::ln(total);
        rows[BRIER * n + i] = squares / (total * total) - 2.0 * ey / total + 1.0;
        rows[SUM * n + i] = total;
    } else {
        rows[CONF * n + i] = m;
        rows[LOG_PY * n + i] = f32::ln(zy);
        rows[BRIER * n + i] = squares - 2.0 * zy + 1.0;
        rows[SUM * n + i] = 1.0;
    }
    rows[HIT * n + i] = hit;
    rows[MAX * n + i] = m;
    pred[i] = i32::cast_from(top);
}

/// Marks a top-label pair left out by the threshold.
const DROPPED: u32 = 0xFFFF_FFFF;

/// The bin key `group * n_bins + bin` of row `i`'s top-label pair (group = predicted class
/// when `grouped`), or [`DROPPED`] when its score is at or below `threshold`.
#[cube]
fn top_label_key(
    rows: &Tensor<f32>,
    pred: &Tensor<i32>,
    edges: &Tensor<f32>,
    n: usize,
    i: usize,
    n_bins: u32,
    threshold: f32,
    #[comptime] grouped: bool,
) -> u32 {
    let s = rows[CONF * n + i];
    let mut key = 0xFFFF_FFFFu32; // DROPPED: a cube variable starts from a literal, not a const
    if s > threshold {
        let mut g = 0u32;
        if grouped {
            g = u32::cast_from(pred[i]);
        }
        key = g * n_bins + bin_of(s, edges, n_bins);
    }
    key
}

/// One thread per row: adds its top-label pair to bin `(group, bin)`, group = predicted class
/// when `grouped`. Pairs with a score at or below `threshold` are left out.
#[cube(launch, launch_unchecked)]
pub(crate) fn top_label_bins(
    rows: &Tensor<f32>,
    pred: &Tensor<i32>,
    edges: &Tensor<f32>,
    bins: &mut Tensor<Atomic<u32>>,
    n_rows: u32,
    n_bins: u32,
    threshold: f32,
    #[comptime] grouped: bool,
) {
    let row = flat_index();
    if row >= n_rows {
        terminate!();
    }
    let (n, i) = (n_rows as usize, row as usize);
    let key = top_label_key(rows, pred, edges, n, i, n_bins, threshold, grouped);
    if key != DROPPED {
        let mut hits = 0u32;
        if rows[HIT * n + i] > 0.5 {
            hits = 1;
        }
        add_bin(bins, key as usize, 1, hits, fixed(rows[CONF * n + i]), 0);
    }
}

/// Top-label bins through a per-cube histogram in shared memory (`n_words` = G B 4 u32
/// words, small enough to fit): the cube's threads stride over the rows, add into the shared
/// words, then flush the non-zero words to the global accumulator, one atomic per word and
/// cube instead of per row.
#[cube(launch, launch_unchecked)]
pub(crate) fn top_label_bins_shared(
    rows: &Tensor<f32>,
    pred: &Tensor<i32>,
    edges: &Tensor<f32>,
    bins: &mut Tensor<Atomic<u32>>,
    n_rows: u32,
    n_bins: u32,
    threshold: f32,
    #[comptime] grouped: bool,
    #[comptime] n_words: u32,
) {
    let words = n_words as usize;
    let local = Shared::<[Atomic<u32>]>::new_slice(words);
    let step = CUBE_DIM_X as usize;
    let mut w = UNIT_POS_X as usize;
    while w < words {
        local[w].store(0);
        w += step;
    }
    sync_cube();
    let n = n_rows as usize;
    let cube = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) as usize;
    let stride = (CUBE_COUNT_X * CUBE_COUNT_Y) as usize * step;
    let mut i = cube * step + UNIT_POS_X as usize;
    while i < n {
        let key = top_label_key(rows, pred, edges, n, i, n_bins, threshold, grouped);
        if key != DROPPED {
            let at = key as usize * 4;
            local[at].fetch_add(1);
            if rows[HIT * n + i] > 0.5 {
                local[at + 1].fetch_add(1);
            }
            let v = fixed(rows[CONF * n + i]);
            let before = local[at + 2].fetch_add(v);
            if before > 0xFFFF_FFFFu32 - v {
                local[at + 3].fetch_add(1);
            }
        }
        i += stride;
    }
    sync_cube();
    let mut key = UNIT_POS_X as usize;
    while key * 4 < words {
        let at = key * 4;
        let count = local[at].load();
        if count > 0 {
            let (hits, lo, hi) = (local[at + 1].load(), local[at + 2].load(), local[at + 3].load());
            add_bin(bins, key, count, hits, lo, hi);
        }
        key += step;
    }
}

/// One thread per (class, chunk of rows): bins the class's probabilities of the chunk in
/// registers, then adds the non-empty bins to the global accumulator. Threads of a cube take
/// consecutive classes, so each row's read is one contiguous run.
#[cube(launch, launch_unchecked)]
pub(crate) fn class_bins(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    rows: &Tensor<f32>,
    edges: &Tensor<f32>,
    bins: &mut Tensor<Atomic<u32>>,
    n_rows: u32,
    n_classes: u32,
    chunk: u32,
    threshold: f32,
    #[comptime] logits: bool,
    #[comptime] n_bins: u32,
) {
    let c = ABSOLUTE_POS_X;
    if c >= n_classes {
        terminate!();
    }
    let mut registers = RegisterBins::new(n_bins);
    let start = CUBE_POS_Y * chunk;
    let mut end = start + chunk;
    if end > n_rows {
        end = n_rows;
    }
    let (n, k) = (n_rows as usize, n_classes as usize);
    for r in start..end {
        let i = r as usize;
        let z = values[i * k + c as usize];
        let mut p = z;
        if logits {
            p = f32::exp(z - rows[MAX * n + i]) / rows[SUM * n + i];
        }
        if p > threshold {
            let b = bin_of(p, edges, n_bins) as usize;
            registers.add(b, p, u32::cast_from(labels[i]) == c);
        }
    }
    registers.flush(bins, (c * n_bins) as usize, n_bins);
}

/// One thread per used row (`offset` and every `stride`-th after it): the NLL of temperature scaling at `s = 1/T`
/// and its first two derivatives in `s`, from the row's maximum `m` (row pass field `MAX`):
/// `S_r = sum_j d_j^r exp(s d_j)` with `d_j = z_j - m <= 0`; NLL `= s (m - z_y) + ln S_0`,
/// `L' = m + S_1/S_0 - z_y`, `L'' = S_2/S_0 - (S_1/S_0)^2`. Output `[3, n_used]`.
#[cube(launch, launch_unchecked)]
pub(crate) fn tempered_moments(
    values: &Tensor<f32>,
    labels: &Tensor<i32>,
    max: &Tensor<f32>,
    out: &mut Tensor<f32>,
    n_used: u32,
    n_classes: u32,
    offset: u32,
    stride: u32,
    s: f32,
) {
    let t = flat_index();
    if t >= n_used {
        terminate!();
    }
    let row = (offset + t * stride) as usize;
    let k = n_classes as usize;
    let base = row * k;
    let m = max[row];
    let mut s0 = 0.0f32;
    let mut s1 = 0.0f32;
    let mut s2 = 0.0f32;
    for j in 0..k {
        let d = values[base + j] - m;
        let e = f32::exp(s * d);
        s0 += e;
        s1 += d * e;
        s2 += d * d * e;
    }
    let zy = values[base + u32::cast_from(labels[row]) as usize];
    let mean = s1 / s0;
    let mut var = s2 / s0 - mean * mean;
    if var < 0.0 {
        var = 0.0;
    }
    let used = n_used as usize;
    out[t as usize] = s * (m - zy) + f32::ln(s0);
    out[used + t as usize] = (m - zy) + mean;
    out[2 * used + t as usize] = var;
}
