//! [`ScoreBuffer`]: host scores that something other than calib owns, read in place.

use std::borrow::Cow;
use std::fmt::Debug;
use std::sync::Arc;

use super::values::HostValues;

/// Row-major host scores owned outside calib (a NumPy array handed over from Python, a memory
/// map), which [`Predictions::from_buffer`](super::Predictions::from_buffer) reads in place
/// instead of copying.
///
/// The owner keeps the values alive and unchanged for as long as the buffer lives: `values`
/// returns the same slice on every call.
pub trait ScoreBuffer: Send + Sync + Debug {
    /// The scores, borrowed.
    fn values(&self) -> HostValues<'_>;
}

/// Where host predictions keep their scores: their own values or someone else's buffer.
#[derive(Debug, Clone)]
pub(crate) enum HostStore {
    /// Values the predictions own (moved in by `from_host_vec`).
    Owned(HostValues<'static>),
    /// A buffer shared with its owner (`from_buffer`).
    Shared(Arc<dyn ScoreBuffer>),
}

impl HostStore {
    /// The values, borrowed.
    pub(crate) fn view(&self) -> HostValues<'_> {
        match self {
            Self::Owned(HostValues::F32(v)) => HostValues::F32(Cow::Borrowed(v)),
            Self::Owned(HostValues::F64(v)) => HostValues::F64(Cow::Borrowed(v)),
            Self::Shared(buffer) => buffer.values(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use burn::tensor::Device;

    use super::*;
    use crate::input::{InputConfig, Predictions, ScoreKind};
    use crate::{EvaluationConfig, Metric};

    #[derive(Debug)]
    struct Borrowed(Vec<f32>);

    impl ScoreBuffer for Borrowed {
        fn values(&self) -> HostValues<'_> {
            HostValues::F32(Cow::Borrowed(&self.0))
        }
    }

    #[test]
    fn predictions_read_a_buffer_in_place_and_equal_owned_rows() {
        let values = vec![2.0f32, 0.0, 0.5, 0.0, 1.0, 3.0, 3.0, 0.5, 0.1];
        let labels = vec![0i64, 2, 1];
        let buffer = Arc::new(Borrowed(values.clone()));
        let at = buffer.0.as_ptr();
        let (config, device) = (InputConfig::new(ScoreKind::Logits), Device::flex());
        let shared = Predictions::from_buffer(buffer, 3, labels.clone(), config, &device).unwrap();
        let owned = Predictions::from_host_vec(values, 3, labels, config, &device).unwrap();
        let (HostValues::F32(Cow::Borrowed(read)), _) = shared.host_rows().unwrap() else {
            panic!("a buffer's rows are borrowed")
        };
        assert_eq!(read.as_ptr(), at);
        let eval = EvaluationConfig::new().with_metrics(vec![Metric::Nll, Metric::Ece]);
        let (a, b) = (eval.evaluate(&shared).unwrap(), eval.evaluate(&owned).unwrap());
        assert_eq!(a.named_values(), b.named_values());
    }

    #[test]
    fn a_buffer_is_checked_as_host_rows_are() {
        let buffer = Arc::new(Borrowed(vec![0.5, f32::NAN]));
        let config = InputConfig::new(ScoreKind::Logits);
        let err = Predictions::from_buffer(buffer, 2, vec![0], config, &Device::flex());
        assert!(err.unwrap_err().to_string().contains("NaN"), "a NaN is named");
        let buffer = Arc::new(Borrowed(vec![0.5, 0.5, 0.5]));
        assert!(Predictions::from_buffer(buffer, 2, vec![0], config, &Device::flex()).is_err());
    }
}
