//! [`FitData`]: the rows a fit optimises over, on the fit's device.

use std::sync::Arc;

use burn::tensor::{DType, Device, Int, Tensor};
use calib_core::input::{Predictions, ScoreKind};

use super::host_rows::HostRows;
use crate::error::{FitError, Result};

/// Prepared features `[N, K]` and labels `[N, 1]` on the (autodiff) device of a fit.
#[derive(Debug, Clone)]
pub(crate) struct FitData {
    /// Features: logits, or what the map's `prepare` made of them.
    pub features: Tensor<2>,
    /// Labels as a column, ready for `gather`.
    pub labels: Tensor<2, Int>,
    /// Soft targets `[N, K]` (rows sum to 1) replacing the one-hot labels in the NLL, if set.
    pub targets: Option<Tensor<2>>,
    /// N.
    pub n_samples: usize,
    /// K.
    pub n_classes: usize,
    /// The same features and labels in host memory, once [`Self::with_host_rows`] read them.
    pub host: Option<Arc<HostRows>>,
    /// The rows' sample weights (all positive: rows of weight 0 are left out), or `None`.
    /// The host objective and autodiff read them; [`crate::fit::minimise_affine_on`] keeps
    /// weighted rows off the device passes.
    pub weights: Option<Arc<[f64]>>,
    /// The same weights as a tensor `[N]` on the fit's (plain) device, for the autodiff
    /// objective.
    pub row_weights: Option<Tensor<1>>,
}

impl FitData {
    /// Uploads all rows of `preds` (logits) to `device` in `dtype` and applies `prepare`.
    pub fn new(
        preds: &Predictions,
        method: &str,
        device: &Device,
        dtype: DType,
        prepare: impl Fn(Tensor<2>) -> Tensor<2>,
    ) -> Result<Self> {
        require_logits(preds, method)?;
        let n = preds.n_samples();
        // Data are constants of the fit: plain tensors skip autodiff's bookkeeping.
        let (logits, labels) = preds.rows_on(0, n, dtype, &device.clone().without_autodiff());
        let data = Self {
            features: prepare(logits).without_autodiff(),
            labels: labels.reshape([n, 1]),
            targets: None,
            n_samples: n,
            n_classes: preds.n_classes(),
            host: None,
            weights: None,
            row_weights: None,
        }
        .with_weights(preds.weights().map(|w| w.values()));
        Ok(match preds.weights().map(|w| w.values()) {
            Some(w) if w.contains(&0.0) => {
                let kept: Vec<usize> = (0..n).filter(|&i| w[i] > 0.0).collect();
                data.select(&kept)
            }
            _ => data,
        })
    }

    /// The rows of `preds` with features computed on the host (`[N, K]`, row-major f64, in
    /// `preds`' row order; every weight positive) and `labels` (`preds`' own, as the caller
    /// read them with the logits), for a fit that [`super::host::use_host`] sends to the host
    /// objective: the host rows are the data, and `features` is an empty `[0, K]` tensor on
    /// `device` in `dtype` (the host path reads only its device and type; uploading the
    /// features would copy them twice for nothing: 2 ms of a 20 ms fit at 5,000 x 100).
    /// [`Self::has_tensor_rows`] tells the tensor paths apart.
    pub fn host_only(
        preds: &Predictions,
        features: Vec<f64>,
        labels: &[i64],
        device: &Device,
        dtype: DType,
    ) -> Self {
        let (n, k) = (preds.n_samples(), preds.n_classes());
        let plain = device.clone().without_autodiff();
        let ids: Vec<i64> = labels.to_vec();
        let labels_t =
            Tensor::<2, Int>::from_data(burn::tensor::TensorData::new(ids, [n, 1]), &plain);
        let empty = burn::tensor::TensorData::new(Vec::<f64>::new(), [0, k]);
        let weights = preds.weights().map(|w| w.values());
        let host = HostRows {
            features,
            labels: labels.iter().map(|&y| y as usize).collect(),
            n,
            k,
            weights: weights.map(<[f64]>::to_vec),
        };
        let data = Self {
            features: Tensor::<2>::from_data(empty, (&plain, dtype)),
            labels: labels_t,
            targets: None,
            n_samples: n,
            n_classes: k,
            host: None,
            weights: None,
            row_weights: None,
        }
        .with_weights(weights);
        Self { host: Some(Arc::new(host)), ..data }
    }

    /// Whether `features` holds the rows (false for [`Self::host_only`] data, which only the
    /// host objective can fit).
    pub fn has_tensor_rows(&self) -> bool {
        self.features.dims()[0] == self.n_samples
    }

    /// These rows weighted by `weights` (one per row; `None`: unweighted), as the objective
    /// tensor and the host copy.
    pub fn with_weights(mut self, weights: Option<&[f64]>) -> Self {
        self.row_weights = weights.map(|w| {
            let device = self.features.device();
            let data = burn::tensor::TensorData::new(w.to_vec(), [w.len()]);
            Tensor::<1>::from_data(data, (&device, self.features.dtype()))
        });
        self.weights = weights.map(Into::into);
        self
    }

    /// Adds a host copy of the features and labels (read back once) for the fused host
    /// objective.
    pub fn with_host_rows(mut self) -> Result<Self> {
        if self.host.is_none() {
            let weights = self.weights.as_deref();
            self.host = Some(Arc::new(HostRows::read(&self.features, &self.labels, weights)?));
        }
        Ok(self)
    }

    /// Rows `idx` (host indices) of this data, for mini-batches and folds.
    pub fn select(&self, idx: &[usize]) -> Self {
        let device = self.features.device();
        let ids: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
        let ids =
            Tensor::<1, Int>::from_data(burn::tensor::TensorData::new(ids, [idx.len()]), &device);
        Self {
            features: self.features.clone().select(0, ids.clone()),
            labels: self.labels.clone().select(0, ids.clone()),
            targets: self.targets.as_ref().map(|t| t.clone().select(0, ids.clone())),
            n_samples: idx.len(),
            n_classes: self.n_classes,
            host: self.host.as_ref().map(|h| Arc::new(h.select(idx))),
            weights: self.weights.as_ref().map(|w| idx.iter().map(|&i| w[i]).collect()),
            row_weights: self.row_weights.as_ref().map(|t| t.clone().select(0, ids.clone())),
        }
    }
}

/// Multiclass methods take logits; say so plainly otherwise.
pub(crate) fn require_logits(preds: &Predictions, method: &str) -> Result<()> {
    match preds.kind() {
        ScoreKind::Logits => Ok(()),
        kind => Err(FitError::UnsuitableInput {
            method: method.to_string(),
            reason: format!(
                "it takes logits [N, K], got {kind:?} scores{}",
                if kind == ScoreKind::Binary {
                    " (use Platt scaling for binary scores)"
                } else {
                    ""
                }
            ),
        }),
    }
}
