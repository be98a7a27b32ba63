//! Isotonic regression's pooling on the device: the binary problems of predictions that live
//! on a GPU (each class one-vs-rest, or binary input's one) sorted by score there
//! ([`super::sort_ops::sort_segments`]) and pooled by PAV ([`super::pav_kernels`]), reading
//! back only the pooled blocks and the mean NLL of the pairs through them: never the scores.
//!
//! Two synchronisations: the blocks' number per problem, then the blocks with the NLL. The
//! work is 18 reads of `N K` words for logits (17 for probabilities): the row pass and the
//! pairs read the values once each, each of the sort's four passes reads the keys to count
//! and the keys and payloads to scatter, and the pooling's first level and the spread of the
//! fitted values read the keys and payloads; 26 launches (25), burn's NLL ops aside.
//! Scores are the kernels' f32 probabilities (the row pass's softmax for logits); ties are
//! the host's rule on them (within [`TIE`] of the run's first score).

use burn::backend::Dispatch;
use burn::tensor::{DType, Device, Int, Tensor, TensorData, Transaction};

use super::ops::CalibKernels;
use super::pav_ops::PavKernels;
use super::rows::{CHUNK_VALUES, device_rows};
use super::sort_ops::{SortKernels, Tiles, sort_segments};
use super::words::words_of;
use crate::backend::BackendKind;
use crate::engine::cost::read_back;
use crate::error::{CalibError, Result};
use crate::input::{Predictions, ScoreKind};

/// The host's tie tolerance (scikit-learn's `_make_unique`): scores closer than this to the
/// first of their run are one point.
pub const TIE: f64 = 1e-15;
/// Items each thread of PAV's first level pools.
const PAV_TILE: usize = 256;

/// One pooled block of a binary problem: its pairs' count and positives (its value
/// `positives / count`) and its first and last point's score (a point's score is its run of
/// tied scores' first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PooledBlock {
    /// Pairs in the block.
    pub count: u32,
    /// Of them, positive outcomes.
    pub positives: u32,
    /// The score of its first point.
    pub first: f32,
    /// The score of its last point.
    pub last: f32,
}

/// Every problem's pooled blocks in score order, and the fit's training NLL.
#[derive(Debug, Clone, PartialEq)]
pub struct PooledProblems {
    /// Per problem (class `c` one-vs-rest, or the one binary problem), its blocks.
    pub blocks: Vec<Vec<PooledBlock>>,
    /// The mean NLL of the rows at their labels through the fitted maps (one-vs-rest:
    /// renormalised over the classes, `1 / K` where every value is 0; a problem with one
    /// outcome only keeps its scores, as the identity map does), clipped at 1e-15, in f32.
    pub nll: f64,
}

/// Whether [`pooled_problems`] takes `preds`: rows that live on a GPU device, without sample
/// weights, binary or with more than two classes, in one chunk of the device's buffers.
pub fn pools_on_device(preds: &Predictions) -> bool {
    let (n, c) = (preds.n_samples(), preds.n_columns());
    preds.on_device()
        && !BackendKind::of(preds.device()).is_cpu()
        && preds.weights().is_none()
        && (preds.kind() == ScoreKind::Binary || c > 2)
        && n > 0
        && n < 1 << 31
        && n * c <= CHUNK_VALUES
}

/// The pooled blocks of `preds`' binary problems, fitted on the device.
///
/// # Errors
/// [`CalibError::InvalidConfig`] when [`pools_on_device`] does not hold; [`CalibError::Backend`]
/// when the device cannot read the results back.
pub fn pooled_problems(preds: &Predictions) -> Result<PooledProblems> {
    if !pools_on_device(preds) {
        return Err(CalibError::InvalidConfig(
            "pooling on the device needs unweighted rows on a GPU device".into(),
        ));
    }
    let (n, classes) = (preds.n_samples(), preds.kind() != ScoreKind::Binary);
    let logits = preds.kind() == ScoreKind::Logits;
    let (values, labels) = device_rows(preds, (0, n));
    let rows = if logits {
        let (rows, _) = <Dispatch as CalibKernels>::calib_row_pass(
            values.clone().into_dispatch(),
            labels.clone().into_dispatch(),
            true,
        );
        rows
    } else {
        values.clone().into_dispatch()
    };
    let (keys, payload) = <Dispatch as SortKernels>::calib_class_pairs(
        values.into_dispatch(),
        labels.clone().into_dispatch(),
        rows,
        classes,
        logits,
    );
    let n_segs = if classes { preds.n_columns() } else { 1 };
    let (keys, payload) =
        sort_segments(Tensor::from_dispatch(keys), Tensor::from_dispatch(payload), n_segs, n);
    let tiles = Tiles { n_segs, seg_len: n, tile: PAV_TILE };
    let (starts, sums, lasts, first, blocks) = <Dispatch as PavKernels>::calib_pav_tiles(
        keys.clone().into_dispatch(),
        payload.clone().into_dispatch(),
        tiles,
        tie_f32(),
    );
    let n_final = <Dispatch as PavKernels>::calib_pav_merge(
        starts.clone(),
        sums.clone(),
        lasts.clone(),
        first,
        blocks,
        tiles,
    );
    let n_final: Tensor<1, Int> = Tensor::from_dispatch(n_final);
    let counts = read_u32(n_final.clone())?;
    let mut offsets = vec![0u32; n_segs + 1];
    for s in 0..n_segs {
        offsets[s + 1] = offsets[s] + counts[s];
    }
    let total = offsets[n_segs] as usize;
    let device = preds.device();
    let gathered = <Dispatch as PavKernels>::calib_block_gather(
        keys.clone().into_dispatch(),
        starts.clone(),
        sums.clone(),
        lasts.clone(),
        u32_tensor(offsets.clone(), device).into_dispatch(),
        tiles,
        total,
    );
    let spread = <Dispatch as PavKernels>::calib_block_spread(
        keys.into_dispatch(),
        payload.into_dispatch(),
        starts,
        sums,
        lasts,
        n_final.into_dispatch(),
        tiles,
    );
    let nll = mean_nll(Tensor::<1>::from_dispatch(spread), labels, n_segs, classes);
    let tx = Transaction::default().register(Tensor::<1, Int>::from_dispatch(gathered));
    let mut data = read_back(tx.register(nll))?.into_iter();
    let words = words_of(data.next().expect("two tensors read back"))?;
    let nll = scalar_of(data.next().expect("two tensors read back"))?;
    let blocks = (0..n_segs)
        .map(|s| {
            let range = offsets[s] as usize..offsets[s + 1] as usize;
            range.map(|b| block_of(&words[4 * b..4 * b + 4])).collect()
        })
        .collect();
    Ok(PooledProblems { blocks, nll })
}

/// The smallest f32 at or above [`TIE`]: an f32 difference `d` is then at or above it exactly
/// when `d >= TIE` in f64.
fn tie_f32() -> f32 {
    let t = TIE as f32;
    if f64::from(t) < TIE { t.next_up() } else { t }
}

/// The mean NLL of the rows at their labels through the pooled values `q` (`[N n_segs]`).
fn mean_nll(q: Tensor<1>, labels: Tensor<1, Int>, n_segs: usize, classes: bool) -> Tensor<1> {
    let p = if classes {
        let n = q.dims()[0] / n_segs;
        let q = q.reshape([n, n_segs]);
        let sums = q.clone().sum_dim(1);
        let at = q.gather(1, labels.reshape([n, 1]));
        let empty = sums.clone().lower_equal_elem(0.0);
        (at / sums).mask_fill(empty, 1.0 / n_segs as f64).reshape([n])
    } else {
        let negative = labels.not_equal_elem(1);
        q.clone().mask_where(negative, q.neg().add_scalar(1.0))
    };
    p.clamp(1e-15, 1.0).log().neg().mean()
}

/// A pooled block from its four words (count, positives, first and last order key).
fn block_of(w: &[u32]) -> PooledBlock {
    PooledBlock { count: w[0], positives: w[1], first: key_score(w[2]), last: key_score(w[3]) }
}

/// The f32 of an order key (the kernels' `order_key` undone).
pub(crate) fn key_score(key: u32) -> f32 {
    f32::from_bits(if key >= 0x8000_0000 { key ^ 0x8000_0000 } else { !key })
}

/// The u32 words of `t`, read back (one synchronisation).
fn read_u32(t: Tensor<1, Int>) -> Result<Vec<u32>> {
    let data = read_back(Transaction::default().register(t))?;
    words_of(data.into_iter().next().expect("one tensor read back"))
}

/// The one value of a read-back scalar.
fn scalar_of(data: TensorData) -> Result<f64> {
    let v = data.convert::<f64>().try_to_vec::<f64>();
    v.ok()
        .and_then(|v| v.first().copied())
        .ok_or_else(|| CalibError::Backend("the device returned no NLL".into()))
}

/// A u32 tensor of `values` on `device`.
fn u32_tensor(values: Vec<u32>, device: &Device) -> Tensor<1, Int> {
    let n = values.len();
    Tensor::<1, Int>::from_data(TensorData::new(values, [n]), (device, DType::U32))
}
