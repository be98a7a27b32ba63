//! Each row's predicted class and confidence ([`Predictions::top_labels`]), computed where the
//! rows live:
//!
//! ```text
//! pred_i = min { j : s_ij = max_l s_il }        (the first largest score)
//! conf_i = 1 / sum_j exp(z_ij - z_i,pred)       (logits: the softmax's largest probability)
//! conf_i = p_i,pred                             (probabilities);   conf_i = s_i   (binary)
//! ```
//!
//! Host rows are read in place, in f64. Rows on a device are reduced there, in its float type
//! (f32 on a GPU), and only the two `[N]` results come back in one synchronisation, never the
//! `N x K` scores.

use burn::tensor::{Tensor, Transaction};
use calib_kernels::max_and_argmax;

use super::{Predictions, ScoreKind};
use crate::engine::{first_argmax, read_back};
use crate::error::Result;
use crate::host::read_f64;
use crate::pairs::probability;

impl Predictions {
    /// Each row's predicted class (`None` for binary input) and its confidence (module docs).
    ///
    /// # Errors
    /// [`crate::CalibError::Backend`] when the device cannot send the results back.
    ///
    /// ```
    /// use burn::tensor::Device;
    /// use calib_core::input::{InputConfig, Predictions, ScoreKind};
    /// let config = InputConfig::new(ScoreKind::Probabilities);
    /// let rows = [0.2f64, 0.5, 0.3, 0.4, 0.4, 0.2];
    /// let preds = Predictions::from_host(&rows, 3, &[1, 0], config, &Device::flex()).unwrap();
    /// let (pred, confidence) = preds.top_labels().unwrap();
    /// assert_eq!((pred, confidence), (Some(vec![1, 0]), vec![0.5, 0.4]));
    /// ```
    pub fn top_labels(&self) -> Result<(Option<Vec<u32>>, Vec<f64>)> {
        match self.device_values() {
            Some(values) => top_labels_on_device(values, self.kind()),
            None => self.top_labels_on_host(),
        }
    }

    fn top_labels_on_host(&self) -> Result<(Option<Vec<u32>>, Vec<f64>)> {
        let (values, _) = self.host_rows()?;
        let values: Vec<f64> = values.into_f64();
        let kind = self.kind();
        if kind == ScoreKind::Binary {
            return Ok((None, values));
        }
        let (pred, confidence) = values
            .chunks_exact(self.n_columns())
            .map(|row| {
                let (top, c) = max_and_argmax(row);
                (c as u32, probability(row, top, c, kind))
            })
            .unzip();
        Ok((Some(pred), confidence))
    }
}

/// [`Predictions::top_labels`] of `[N, C]` device scores of `kind`: tensor ops there (the
/// tensor engine's first argmax), two `[N]` tensors read back.
fn top_labels_on_device(
    values: Tensor<2>,
    kind: ScoreKind,
) -> Result<(Option<Vec<u32>>, Vec<f64>)> {
    let [n, k] = values.dims();
    if kind == ScoreKind::Binary {
        let data = read_back(Transaction::default().register(values.reshape([n])))?;
        return Ok((None, read_f64(data.into_iter().next().expect("one read"))?));
    }
    let largest = values.clone().max_dim(1);
    let first = first_argmax(values.clone(), largest.clone(), values.dtype()).reshape([n]);
    let confidence = match kind {
        ScoreKind::Logits => (values - largest.expand([n, k])).exp().sum_dim(1).recip(),
        _ => largest,
    };
    let tx = Transaction::default().register(first).register(confidence.reshape([n]));
    let mut data = read_back(tx)?.into_iter().map(read_f64);
    let pred = data.next().expect("two reads")?.into_iter().map(|c| c as u32).collect();
    Ok((Some(pred), data.next().expect("two reads")?))
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use burn::tensor::{Device, Int, Tensor, TensorData};

    use super::*;
    use crate::input::InputConfig;

    /// Rows with tied maxima (the first is the prediction), as logits and as probabilities.
    const ROWS: [f32; 12] = [0.5, 2.0, 2.0, -1.0, 3.0, 0.0, 1.0, 1.0, 1.0, 0.25, -2.0, 0.0];

    fn both(kind: ScoreKind, values: &[f32]) -> [Predictions; 2] {
        let device = Device::flex();
        let labels = [0i64, 1, 2, 0];
        let config = InputConfig::new(kind).with_row_sum_tolerance(1.0);
        let host = Predictions::from_host(values, 3, &labels, config, &device).unwrap();
        let v = Tensor::<2>::from_data(TensorData::new(values.to_vec(), [4, 3]), &device);
        let l = Tensor::<1, Int>::from_data(TensorData::new(labels.to_vec(), [4]), &device);
        [host, Predictions::from_tensors(v, l, config).unwrap()]
    }

    #[test]
    fn rows_on_the_device_give_the_host_predictions_and_confidences() {
        let probabilities: Vec<f32> = ROWS.iter().map(|z| z.abs() / 4.0).collect();
        for (kind, values) in
            [(ScoreKind::Logits, ROWS.to_vec()), (ScoreKind::Probabilities, probabilities)]
        {
            let [host, device] = both(kind, &values);
            let (pred, confidence) = host.top_labels().unwrap();
            let (device_pred, device_confidence) = device.top_labels().unwrap();
            assert_eq!(pred, device_pred, "{kind:?}");
            for (a, b) in confidence.iter().zip(&device_confidence) {
                assert!((a - b).abs() < 1e-6, "{kind:?}: {a} vs {b}");
            }
        }
        let [host, _] = both(ScoreKind::Logits, &ROWS);
        assert_eq!(host.top_labels().unwrap().0, Some(vec![1, 1, 0, 0]));
    }
}
