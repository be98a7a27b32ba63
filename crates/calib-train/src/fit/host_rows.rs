//! [`HostRows`]: a fit's features and labels in host memory, for the fused CPU objective.

use burn::tensor::{DType, Int, Tensor};

use crate::error::Result;
use crate::fit::params::read_all;

/// Features `[N, K]` (row-major f64) and labels of a fit, read back once from the device.
#[derive(Debug, Clone)]
pub(crate) struct HostRows {
    /// Row-major features.
    pub features: Vec<f64>,
    /// Labels in `[0, K)`.
    pub labels: Vec<usize>,
    /// N.
    pub n: usize,
    /// K.
    pub k: usize,
    /// Per-row sample weights (all positive), or `None`: every row weighs 1.
    pub weights: Option<Vec<f64>>,
}

impl HostRows {
    /// Reads features `[N, K]` and labels `[N, 1]` back, as f64, with the rows' weights.
    pub fn read(
        features: &Tensor<2>,
        labels: &Tensor<2, Int>,
        weights: Option<&[f64]>,
    ) -> Result<Self> {
        let [n, k] = features.dims();
        let labels = labels.clone().reshape([n]).float().cast(DType::F64);
        let mut read = read_all(vec![features.clone().reshape([n * k]), labels])?;
        let labels = read.pop().unwrap_or_default().into_iter().map(|v| v as usize).collect();
        let features = read.pop().unwrap_or_default();
        Ok(Self { features, labels, n, k, weights: weights.map(<[f64]>::to_vec) })
    }

    /// The weight of row `i` (1 without weights).
    #[inline(always)]
    pub fn weight(&self, i: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[i])
    }

    /// The rows' total weight: N without weights.
    pub fn total(&self) -> f64 {
        self.weights.as_ref().map_or(self.n as f64, |w| w.iter().sum())
    }

    /// Rows `idx`, in that order.
    pub fn select(&self, idx: &[usize]) -> Self {
        let k = self.k;
        let mut features = Vec::with_capacity(idx.len() * k);
        for &i in idx {
            features.extend_from_slice(&self.features[i * k..(i + 1) * k]);
        }
        let labels = idx.iter().map(|&i| self.labels[i]).collect();
        let weights = self.weights.as_ref().map(|w| idx.iter().map(|&i| w[i]).collect());
        Self { features, labels, n: idx.len(), k, weights }
    }
}
