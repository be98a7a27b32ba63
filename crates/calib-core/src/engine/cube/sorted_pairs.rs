//! [`DevicePairs`]: the binary problems of predictions that live on a GPU (each class
//! one-vs-rest, or binary input's one), every problem's `(score, outcome)` pairs sorted by
//! score on the device ([`super::sort_ops::sort_segments`]), for the binary maps that are
//! sorts and scans: isotonic regression ([`DevicePairs::pooled`]) and histogram binning
//! ([`DevicePairs::binned`]). Nothing of the `N x K` scores is read back.
//!
//! Scores are the kernels' f32 probabilities (for logits, the row pass's softmax `exp(z -
//! max) / sum`). Making the pairs reads the values twice for logits (the row pass, the
//! pairs), once for probabilities; the sort reads `N K` words of keys, then keys and payloads,
//! in each of its four passes (12 reads of `N K` words); 22 launches for logits, 21 for
//! probabilities.

use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor, Transaction};

use super::bin_ops::BinKernels;
use super::ops::CalibKernels;
use super::rows::{CHUNK_VALUES, device_rows};
use super::sort_ops::{SortKernels, Tiles, sort_segments};
use super::words::{read_words_all, u32_tensor, words_of};
use crate::backend::BackendKind;
use crate::engine::cost::read_back;
use crate::error::{CalibError, Result};
use crate::input::{Predictions, ScoreKind};

/// Every binary problem's pairs, sorted by score on the device (module docs).
#[derive(Debug, Clone)]
pub struct DevicePairs {
    /// Each problem's order keys, ascending, problem after problem.
    pub(super) keys: Tensor<1, Int>,
    /// Each pair's row, with `HIT_BIT` set for a positive outcome.
    pub(super) payload: Tensor<1, Int>,
    /// The rows' labels.
    pub(super) labels: Tensor<1, Int>,
    /// Problems (segments), and pairs per problem (the rows).
    pub(super) n_problems: usize,
    pub(super) n_rows: usize,
}

impl DevicePairs {
    /// Whether [`DevicePairs::sort`] takes `preds`: rows that live on a GPU device, without
    /// sample weights, binary or with more than two classes, in one chunk of the device's
    /// buffers.
    pub fn takes(preds: &Predictions) -> bool {
        let (n, c) = (preds.n_samples(), preds.n_columns());
        preds.on_device()
            && !BackendKind::of(preds.device()).is_cpu()
            && preds.weights().is_none()
            && (preds.kind() == ScoreKind::Binary || c > 2)
            && n > 0
            && n < 1 << 31
            && n * c <= CHUNK_VALUES
    }

    /// Sorts every problem's pairs of `preds` on their device.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] when [`DevicePairs::takes`] does not hold.
    pub fn sort(preds: &Predictions) -> Result<Self> {
        if !Self::takes(preds) {
            return Err(CalibError::InvalidConfig(
                "sorting pairs on the device needs unweighted rows on a GPU device".into(),
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
        let n_problems = if classes { preds.n_columns() } else { 1 };
        let (keys, payload) = sort_segments(
            Tensor::from_dispatch(keys),
            Tensor::from_dispatch(payload),
            n_problems,
            n,
        );
        Ok(Self { keys, payload, labels, n_problems, n_rows: n })
    }

    /// Problems: K one-vs-rest, or 1 for binary input.
    pub fn n_problems(&self) -> usize {
        self.n_problems
    }

    /// Pairs per problem: the rows.
    pub fn n_pairs(&self) -> usize {
        self.n_rows
    }

    /// The scores at sorted places `(problem, place)` (one synchronisation).
    ///
    /// # Errors
    /// [`CalibError::Backend`] when the device cannot read them back.
    pub fn scores_at(&self, places: &[(usize, usize)]) -> Result<Vec<f32>> {
        let at: Vec<u32> = places.iter().map(|&(p, i)| (p * self.n_rows + i) as u32).collect();
        let keys = <Dispatch as BinKernels>::calib_key_gather(
            self.keys.clone().into_dispatch(),
            u32_tensor(at, &self.keys.device()).into_dispatch(),
        );
        let words = read_words_all(vec![Tensor::from_dispatch(keys)])?.remove(0);
        Ok(words.into_iter().take(places.len()).map(key_score).collect())
    }

    /// The problems as the kernels' tiles of `tile` pairs.
    pub(super) fn tiles(&self, tile: usize) -> Tiles {
        Tiles { n_segs: self.n_problems, seg_len: self.n_rows, tile }
    }

    /// The mean NLL of the rows at their labels through fitted values `q` (`[N n_problems]`,
    /// each pair's value at its row's place): one-vs-rest renormalised over the classes (`1 /
    /// K` where every value is 0), binary `q` or `1 - q`; clipped at 1e-15.
    pub(super) fn nll_of(&self, q: Tensor<1>) -> Tensor<1> {
        let (n, k) = (self.n_rows, self.n_problems);
        let labels = self.labels.clone();
        let p = if k > 1 {
            let q = q.reshape([n, k]);
            let sums = q.clone().sum_dim(1);
            renormalised(q.gather(1, labels.reshape([n, 1])), sums, k).reshape([n])
        } else {
            let negative = labels.not_equal_elem(1);
            q.clone().mask_where(negative, q.neg().add_scalar(1.0))
        };
        p.clamp(1e-15, 1.0).log().neg().mean()
    }
}

/// Values `at` (`[N, C]`, some of each row's K one-vs-rest values) over their rows' sums
/// `sums` (`[N, 1]`), `1 / K` in a row whose values are all 0: the renormalisation of the
/// one-vs-rest form.
pub(super) fn renormalised(at: Tensor<2>, sums: Tensor<2>, k: usize) -> Tensor<2> {
    let empty = sums.clone().lower_equal_elem(0.0).expand(at.dims());
    (at / sums).mask_fill(empty, 1.0 / k as f64)
}

/// The f32 of an order key (the kernels' `order_key` undone).
pub(super) fn key_score(key: u32) -> f32 {
    f32::from_bits(if key >= 0x8000_0000 { key ^ 0x8000_0000 } else { !key })
}

/// The order key of an f32 (the kernels' `order_key`).
pub(super) fn order_key(s: f32) -> u32 {
    let bits = s.to_bits();
    if bits >= 0x8000_0000 { !bits } else { bits | 0x8000_0000 }
}

/// The u32 words of `words` and the one value of `scalar`, read back together (one
/// synchronisation).
pub(super) fn read_words_and_scalar(
    words: Tensor<1, Int>,
    scalar: Tensor<1>,
) -> Result<(Vec<u32>, f64)> {
    let mut data = read_back(Transaction::default().register(words).register(scalar))?.into_iter();
    let words = words_of(data.next().expect("two tensors read back"))?;
    let value = data.next().expect("two tensors read back").convert::<f64>().try_to_vec::<f64>();
    let value = value.ok().and_then(|v| v.first().copied());
    Ok((words, value.ok_or_else(|| CalibError::Backend("the device returned no NLL".into()))?))
}
