//! The [`Calibrator`] trait every method implements (applying it runs in row chunks on its
//! device), and [`Fitted`]: a calibrator with the record of its fit.

use std::collections::BTreeMap;

use super::method::Method;
use super::settings::SavedSettings;
use super::tensor::SavedTensor;
use crate::binary::TopLabelPrediction;
use crate::error::{FitError, Result};
use crate::fit::FitRecord;
use crate::fit::params::to_f64;
use burn::tensor::{DType, Device, Tensor, Transaction};
use calib_core::input::{InputConfig, Predictions, ScoreKind};

/// What every calibrator can do once fitted (or loaded).
///
/// Implemented by [`crate::TemperatureScaling`], [`crate::VectorScaling`],
/// [`crate::MatrixScaling`], [`crate::DirichletCalibration`] and [`crate::PlattScaling`];
/// [`crate::AnyCalibrator`] holds any of them.
pub trait Calibrator: Sized {
    /// The method.
    const METHOD: Method;

    /// The method of this calibrator ([`Calibrator::METHOD`], or [`Method::TopLabel`] for a
    /// binary method in its top-label form).
    fn method(&self) -> Method {
        Self::METHOD
    }

    /// K the calibrator applies to (2 for binary; 0 when any K works, as for temperature
    /// scaling).
    fn n_classes(&self) -> usize;

    /// The device the calibrator's parameters live on.
    fn device(&self) -> Device;

    /// The float type of its parameters.
    fn dtype(&self) -> DType;

    /// Calibrated scores `[N, C]` from scores `[N, C]` on the calibrator's device, outside
    /// autodiff: logits for the multiclass methods (`C = K`), positive-class probabilities for
    /// Platt (`C = 1`). The tensor form of [`Calibrator::calibrate`], one chunk of rows.
    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2>;

    /// What the calibrated scores are ([`ScoreKind::Logits`] or [`ScoreKind::Binary`]).
    fn output_kind(&self) -> ScoreKind {
        ScoreKind::Logits
    }

    /// Named parameters, read back to the host.
    ///
    /// # Errors
    /// [`FitError::Backend`] when the read-back fails.
    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>>;

    /// The real-valued hyper-parameters the fit chose (regularisation strengths `lambda`,
    /// `mu`), for the record; [`Calibrator::settings`] is what rebuilds the calibrator.
    fn hyperparameters(&self) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }

    /// The typed choices that shape the map beyond its parameters (a binary map's form and
    /// base, a penalty, Platt's scale), saved beside the parameters.
    fn settings(&self) -> SavedSettings {
        SavedSettings::default()
    }

    /// Rebuilds the calibrator from saved parameters and settings on `device`.
    ///
    /// # Errors
    /// [`FitError::Format`] when a parameter is missing or has the wrong shape, or a setting
    /// the calibrator needs is missing.
    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        settings: &SavedSettings,
        n_classes: usize,
        device: &Device,
    ) -> Result<Self>;

    /// Applies the calibrator to `preds`: the one way to calibrate [`Predictions`]. Runs in
    /// row chunks on the calibrator's device; the calibrated scores come back as host
    /// [`Predictions`] on `preds`' device (logits for multiclass methods, probabilities for
    /// Platt), labels and sample weights unchanged.
    ///
    /// # Errors
    /// [`FitError::ClassMismatch`] when K differs; [`FitError::UnsuitableInput`] for the
    /// wrong kind of input.
    fn calibrate(&self, preds: &Predictions) -> Result<Predictions> {
        calibrate_in_chunks(self, preds, DEFAULT_CHUNK_ROWS)
    }

    /// True for binary maps in their top-label form, whose metrics are read from
    /// [`Calibrator::calibrate_with_top_label`]'s predictions and confidences.
    fn is_top_label(&self) -> bool {
        false
    }

    /// Calibrated scores of `preds` (see [`Calibrator::calibrate`]) and, for top-label
    /// calibrators, each row's prediction and calibrated confidence ([`TopLabelPrediction`];
    /// `None` for every other calibrator), from one read of `preds`.
    ///
    /// # Errors
    /// As [`Calibrator::calibrate`].
    fn calibrate_with_top_label(
        &self,
        preds: &Predictions,
    ) -> Result<(Predictions, Option<TopLabelPrediction>)> {
        Ok((self.calibrate(preds)?, None))
    }
}

/// A fitted calibrator with the record of its fit.
#[derive(Debug, Clone)]
pub struct Fitted<C> {
    /// The calibrator.
    pub calibrator: C,
    /// How the fit went.
    pub record: FitRecord,
}

/// Calibrated scores as [`Predictions`] on `device` (host storage).
pub(crate) fn host_predictions(
    values: Vec<f64>,
    n_columns: usize,
    labels: &[i64],
    kind: ScoreKind,
    device: &Device,
) -> Result<Predictions> {
    Ok(Predictions::from_host(&values, n_columns, labels, InputConfig::new(kind), device)?)
}

/// Whether a calibrator computing in `dtype` on `device` leaves its output where `preds`
/// live: rows on a GPU ([`Predictions::resident`]) and an f32 calibrator there. The output
/// is then checked on the device, and nothing of the rows comes back.
fn stays_on_device(preds: &Predictions, device: &Device, dtype: DType) -> bool {
    preds.on_device()
        && preds.device() == device
        && dtype != DType::F64
        && !calib_core::BackendKind::of(device).is_cpu()
}

/// Elements per chunk (rows x K): 4 Mi values (16 MiB in f32), well inside every device's
/// buffer limit (wgpu on a software driver fails above ~128 MiB).
pub(crate) const DEFAULT_CHUNK_ROWS: usize = 4 << 20;

/// Calibrated scores of every row of `preds`, computed `chunk_elems / K` rows at a time on the
/// calibrator's device and gathered on the host; or all at once, left on the device, where
/// [`stays_on_device`] holds.
fn calibrate_in_chunks<C: Calibrator>(
    calibrator: &C,
    preds: &Predictions,
    chunk_elems: usize,
) -> Result<Predictions> {
    let want = match calibrator.output_kind() {
        ScoreKind::Binary => ScoreKind::Binary,
        _ => ScoreKind::Logits,
    };
    if preds.kind() != want {
        return Err(FitError::UnsuitableInput {
            method: C::METHOD.name().into(),
            reason: format!("it applies to {want:?} scores, got {:?}", preds.kind()),
        });
    }
    // 0: the calibrator takes any K (temperature scaling).
    if calibrator.n_classes() != 0 && preds.n_classes() != calibrator.n_classes() {
        return Err(FitError::ClassMismatch {
            expected: calibrator.n_classes(),
            found: preds.n_classes(),
        });
    }
    let (n, c) = (preds.n_samples(), preds.n_columns());
    let rows = (chunk_elems / c).max(1);
    let (device, dtype) = (calibrator.device(), calibrator.dtype());
    if stays_on_device(preds, &device, dtype) {
        let (v, l) = preds.rows_on(0, n, dtype, &device);
        let out =
            Predictions::from_tensors(calibrator.forward_scores(v), l, InputConfig::new(want));
        return Ok(out?.with_weights_of(preds)?);
    }
    let mut values = Vec::with_capacity(n * c);
    let mut labels = Vec::with_capacity(n);
    for start in (0..n).step_by(rows) {
        let len = rows.min(n - start);
        let (v, l) = preds.rows_on(start, len, dtype, &device);
        let out = calibrator.forward_scores(v);
        let tx = Transaction::default().register(out).register(l);
        let mut data =
            calib_core::engine::read_back(tx).map_err(|e| FitError::Backend(e.to_string()))?;
        let l = data.pop().expect("two reads").convert::<i64>().try_into_vec::<i64>();
        let l = l.map_err(|e| FitError::Backend(format!("cannot read labels back: {e:?}")))?;
        values.extend(to_f64(data.pop().expect("two reads"))?);
        labels.extend(l);
    }
    Ok(host_predictions(values, c, &labels, want, preds.device())?.with_weights_of(preds)?)
}
