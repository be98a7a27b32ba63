//! The kernels' accumulators read back: u32 words of exact fixed-point sums, added into
//! [`BinStats`].

use burn::tensor::{DType, Device, Int, Tensor, TensorData, Transaction};

use super::fixed_bins::{SCALE, WORDS};
use crate::engine::cost::read_back;
use crate::error::{CalibError, Result};
use crate::stats::BinStats;

/// The u32 words of a kernel's accumulator (read as i64, so masked back to 32 bits).
pub(super) fn words_of(data: TensorData) -> Result<Vec<u32>> {
    let words = data
        .convert::<i64>()
        .try_to_vec::<i64>()
        .map_err(|e| CalibError::Backend(format!("{e:?}")))?;
    Ok(words.into_iter().map(|w| (w as u64 & 0xFFFF_FFFF) as u32).collect())
}

/// The u32 words of accumulators on the device, read back together (one synchronisation).
pub(super) fn read_words_all(accumulators: Vec<Tensor<1, Int>>) -> Result<Vec<Vec<u32>>> {
    let tx = accumulators.into_iter().fold(Transaction::default(), |tx, t| tx.register(t));
    read_back(tx)?.into_iter().map(words_of).collect()
}

/// Adds bin statistics from the kernels' u32 words.
pub(super) fn add_bins(stats: &mut BinStats, words: &[u32]) {
    let word = |i: usize| words[i] as f64;
    for key in 0..words.len() / WORDS {
        let at = key * WORDS;
        stats.count[key] += word(at);
        stats.sum_outcome[key] += word(at + 1);
        stats.sum_score[key] += (word(at + 3) * 4_294_967_296.0 + word(at + 2)) / SCALE;
    }
}

/// A u32 tensor of `values` on `device`; an empty table becomes two unused words (kernels
/// take no empty buffer).
pub(super) fn u32_tensor(mut values: Vec<u32>, device: &Device) -> Tensor<1, Int> {
    if values.is_empty() {
        values = vec![0, 0];
    }
    let n = values.len();
    Tensor::<1, Int>::from_data(TensorData::new(values, [n]), (device, DType::U32))
}

/// `values` as an f32 tensor on `device` (one zero where there are none: the kernels' tables
/// may be empty).
pub(super) fn f32_tensor(mut values: Vec<f32>, device: &Device) -> Tensor<1> {
    if values.is_empty() {
        values = vec![0.0];
    }
    let n = values.len();
    Tensor::<1>::from_data(TensorData::new(values, [n]), (device, DType::F32))
}
