//! [`MapCalibrator`]: binary maps applied to predictions in one of three [`Form`]s.

use std::collections::BTreeMap;

use burn::tensor::{DType, Device, Tensor, TensorData};
use calib_core::input::{InputConfig, Predictions, ScoreKind};

use super::TopLabelPrediction;
use super::form::{Form, top_label_confidences};
use super::map::BinaryMap;
use super::scores::HostScores;
use crate::api::{Calibrator, Method, SavedSettings, SavedTensor};
use crate::error::{FitError, Result};

/// A calibrator made of binary maps `M`: one on binary scores, one per class (one-vs-rest) or
/// one per predicted class (top-label). See [`crate::binary`] for the formulas.
///
/// Output: probabilities `[N, K]` (binary input: positive-class probabilities `[N, 1]`).
/// Input: logits (softmax first), probabilities or binary scores.
#[derive(Debug, Clone)]
pub struct MapCalibrator<M> {
    pub(crate) form: Form,
    pub(crate) n_classes: usize,
    pub(crate) maps: Vec<M>,
    pub(crate) device: Device,
}

impl<M: BinaryMap> MapCalibrator<M> {
    /// The maps, in class order (one map on column 1 for a two-column one-vs-rest).
    pub fn maps(&self) -> &[M] {
        &self.maps
    }

    /// Host scores calibrated in place.
    pub(crate) fn apply_host(&self, scores: &mut HostScores) {
        self.form.apply(&self.maps, scores)
    }

    /// The calibrated rows computed on the device, where they live on a GPU (unweighted,
    /// one-vs-rest on more than two classes or binary) and every map is a table the device
    /// applies (`calib_core::engine::apply_map_tables`); `None`: the host applies them.
    #[cfg(feature = "wgpu")]
    fn calibrate_on_device(&self, preds: &Predictions) -> Option<Result<Predictions>> {
        let form_fits = match self.form {
            Form::Binary => true,
            Form::OneVsRest => self.maps.len() > 2,
            Form::TopLabel => false,
        };
        if !form_fits || !calib_core::engine::DevicePairs::takes(preds) {
            return None;
        }
        let tables: Option<Vec<_>> = self.maps.iter().map(BinaryMap::device_table).collect();
        Some(calib_core::engine::apply_map_tables(preds, &tables?).map_err(Into::into))
    }

    fn check_input(&self, preds: &Predictions) -> Result<()> {
        let binary = preds.kind() == ScoreKind::Binary;
        if binary != (self.form == Form::Binary) {
            return Err(FitError::UnsuitableInput {
                method: self.method().name().into(),
                reason: format!(
                    "it was fitted on {} scores, got {:?}",
                    if binary { "multiclass" } else { "binary" },
                    preds.kind()
                ),
            });
        }
        if preds.n_classes() != self.n_classes {
            return Err(FitError::ClassMismatch {
                expected: self.n_classes,
                found: preds.n_classes(),
            });
        }
        Ok(())
    }
}

impl<M: BinaryMap> Calibrator for MapCalibrator<M> {
    const METHOD: Method = M::METHOD;

    fn method(&self) -> Method {
        if self.form == Form::TopLabel { Method::TopLabel } else { M::METHOD }
    }

    fn n_classes(&self) -> usize {
        self.n_classes
    }

    fn device(&self) -> Device {
        self.device.clone()
    }

    fn dtype(&self) -> DType {
        DType::F64
    }

    fn output_kind(&self) -> ScoreKind {
        if self.form == Form::Binary { ScoreKind::Binary } else { ScoreKind::Probabilities }
    }

    /// Calibrated probabilities `[N, C]` from probabilities `[N, C]` (binary: `C = 1`).
    ///
    /// # Note
    /// Reads the chunk back and computes on the host (these maps are table lookups).
    fn forward_scores(&self, scores: Tensor<2>) -> Tensor<2> {
        let [n, c] = scores.dims();
        let device = scores.device();
        let values = scores.into_data().convert::<f64>().try_into_vec::<f64>().unwrap_or_default();
        let mut host =
            HostScores { values: values.into(), n_columns: c, labels: vec![0; n].into() };
        self.apply_host(&mut host);
        Tensor::from_data(TensorData::new(host.values.into_owned(), [n, c]), (&device, DType::F64))
    }

    fn parameters(&self) -> Result<BTreeMap<String, SavedTensor>> {
        let mut out = BTreeMap::new();
        for (k, m) in self.maps.iter().enumerate() {
            m.save(&format!("{k}."), &mut out);
        }
        Ok(out)
    }

    fn settings(&self) -> SavedSettings {
        let base = (self.form == Form::TopLabel).then_some(M::METHOD);
        SavedSettings { form: Some(self.form), base, ..SavedSettings::default() }
    }

    fn from_parameters(
        parameters: &BTreeMap<String, SavedTensor>,
        settings: &SavedSettings,
        n_classes: usize,
        device: &Device,
    ) -> Result<Self> {
        let form = settings
            .form
            .ok_or_else(|| FitError::Format("a binary map's file names no form".into()))?;
        if n_classes < 2 || (form == Form::Binary && n_classes != 2) {
            return Err(FitError::Format(format!("n_classes {n_classes} does not fit the form")));
        }
        let maps = (0..form.n_maps(n_classes))
            .map(|k| M::load(&format!("{k}."), parameters))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { form, n_classes, maps, device: device.clone() })
    }

    /// Applies the maps on the host (one read-back of `preds`); probabilities come back on
    /// `preds`' device.
    fn calibrate(&self, preds: &Predictions) -> Result<Predictions> {
        Ok(self.calibrate_with_top_label(preds)?.0)
    }

    fn is_top_label(&self) -> bool {
        self.form == Form::TopLabel
    }

    /// The calibrated probabilities of `preds` and, for the top-label form, each row's
    /// prediction and calibrated confidence ([`TopLabelPrediction`]), from one read-back of
    /// `preds`.
    ///
    /// # Errors
    /// As [`Calibrator::calibrate`].
    fn calibrate_with_top_label(
        &self,
        preds: &Predictions,
    ) -> Result<(Predictions, Option<TopLabelPrediction>)> {
        self.check_input(preds)?;
        #[cfg(feature = "wgpu")]
        if let Some(calibrated) = self.calibrate_on_device(preds) {
            return Ok((calibrated?, None));
        }
        let mut scores = HostScores::read(preds)?;
        let top = (self.form == Form::TopLabel).then(|| {
            let (pred, confidence) = top_label_confidences(&self.maps, &scores);
            TopLabelPrediction {
                pred,
                confidence,
                labels: scores.labels.to_vec(),
                n_classes: self.n_classes,
            }
        });
        self.apply_host(&mut scores);
        let config = InputConfig::new(self.output_kind()).with_row_sum_tolerance(1e-6);
        let calibrated = Predictions::from_host_vec(
            scores.values.into_owned(),
            scores.n_columns,
            scores.labels.into_owned(),
            config,
            preds.device(),
        )?;
        Ok((calibrated.with_weights_of(preds)?, top))
    }
}
