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
}

impl HostRows {
    /// Reads features `[N, K]` and labels `[N, 1]` back, as f64.
    pub fn read(features: &Tensor<2>, labels: &Tensor<2, Int>) -> Result<Self> {
        let [n, k] = features.dims();
        let labels = labels.clone().reshape([n]).float().cast(DType::F64);
        let mut read = read_all(vec![features.clone().reshape([n * k]), labels])?;
        let labels = read.pop().unwrap_or_default().into_iter().map(|v| v as usize).collect();
        let features = read.pop().unwrap_or_default();
        Ok(Self { features, labels, n, k })
    }

    /// Rows `idx`, in that order.
    pub fn select(&self, idx: &[usize]) -> Self {
        let k = self.k;
        let mut features = Vec::with_capacity(idx.len() * k);
        for &i in idx {
            features.extend_from_slice(&self.features[i * k..(i + 1) * k]);
        }
        Self { features, labels: idx.iter().map(|&i| self.labels[i]).collect(), n: idx.len(), k }
    }
}
