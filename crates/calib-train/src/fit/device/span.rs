//! The flat directions ([`FeatureSpan`]) of rows held on a device.
//!
//! Finding them needs the augmented Gram matrix in f64: the null directions of f32 logits
//! show as pivots near 1e-14 of the largest, which an f32 Gram (entries off by ~1e-7
//! relative) cannot tell from small real directions. So the Gram is first formed on the
//! device in the rows' own precision, `(K + 1)^2` values read back: in f64 that is exact and
//! decides; in f32 it is a screen, and only when it shows a pivot within [`SCREEN_TOLERANCE`]
//! of zero are the rows read back, chunk by chunk, for the exact f64 Gram (what the host path
//! reads anyway).

use burn::tensor::{DType, Int, Tensor};

use crate::error::Result;
use crate::fit::host::{FeatureSpan, RANK_TOLERANCE, add_augmented_gram};
use crate::fit::params::read_all;

/// Pivots of the f32 Gram above this fraction of its largest diagonal are real directions:
/// far above its round-off (~1e-4 relative even for a million-row chunk).
const SCREEN_TOLERANCE: f64 = 1e-3;

/// The null directions of the augmented features of `chunks` (`K` columns), if any.
pub(super) fn device_span(
    chunks: &[(Tensor<2>, Tensor<2, Int>)],
    k: usize,
) -> Result<Option<FeatureSpan>> {
    let dim = k + 1;
    let Some(gram) = device_gram(chunks)? else { return Ok(None) };
    let precise = chunks.first().is_some_and(|(x, _)| x.dtype() == DType::F64);
    if precise {
        return Ok(FeatureSpan::from_gram(gram, dim, RANK_TOLERANCE));
    }
    if FeatureSpan::from_gram(gram, dim, SCREEN_TOLERANCE).is_none() {
        return Ok(None);
    }
    let mut exact = vec![0.0; dim * dim];
    for (x, _) in chunks {
        let [rows, _] = x.dims();
        let values = read_all(vec![x.clone().reshape([rows * k])])?.remove(0);
        add_augmented_gram(&values, k, &mut exact);
    }
    Ok(FeatureSpan::from_gram(exact, dim, RANK_TOLERANCE))
}

/// `[X, 1]^T [X, 1]` summed over the chunks on the device, read back as f64 (`None` without
/// rows).
fn device_gram(chunks: &[(Tensor<2>, Tensor<2, Int>)]) -> Result<Option<Vec<f64>>> {
    let mut sum: Option<Tensor<2>> = None;
    for (x, _) in chunks {
        let [rows, _] = x.dims();
        let ones = Tensor::<2>::ones([rows, 1], (&x.device(), x.dtype()));
        let augmented = Tensor::cat(vec![x.clone(), ones], 1);
        let gram = augmented.clone().transpose().matmul(augmented);
        sum = Some(match sum {
            Some(acc) => acc + gram,
            None => gram,
        });
    }
    let Some(sum) = sum else { return Ok(None) };
    let [dim, _] = sum.dims();
    Ok(Some(read_all(vec![sum.reshape([dim * dim])])?.remove(0)))
}
