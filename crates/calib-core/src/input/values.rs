//! [`HostValues`]: host scores at the precision they came in.

use std::borrow::Cow;

/// Row-major host scores `[N, n_columns]`, at the precision they came in: what
/// `Predictions::host_rows` reads back and `Predictions::into_host_values` hands back.
#[derive(Debug, Clone)]
pub enum HostValues<'a> {
    /// f32 scores (the usual logits dump).
    F32(Cow<'a, [f32]>),
    /// f64 scores, kept exact.
    F64(Cow<'a, [f64]>),
}

impl HostValues<'_> {
    /// The values as f64 (f32 widened exactly; f64 moved when owned).
    pub fn into_f64(self) -> Vec<f64> {
        match self {
            Self::F64(v) => v.into_owned(),
            Self::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        }
    }
}
