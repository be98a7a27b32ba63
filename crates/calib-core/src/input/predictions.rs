//! [`Predictions`]: scores and labels, validated once, ready for every metric.

use std::borrow::Cow;

use burn::tensor::{DType, Device, Int, Tensor, TensorData, Transaction};

use super::ScoreKind;
use super::buffer::{HostStore, ScoreBuffer};
use super::validate::{DEFAULT_ROW_SUM_TOLERANCE, validate_host, validate_shape};
use super::values::HostValues;
use super::weights::SampleWeights;
use crate::backend::BackendKind;
use crate::error::{CalibError, Result};
use crate::host::read_f64;

/// Options for turning raw arrays into [`Predictions`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputConfig {
    /// What the scores are. Default: [`ScoreKind::Logits`].
    pub kind: ScoreKind,
    /// Allowed `|sum_k p[i,k] - 1|` for [`ScoreKind::Probabilities`].
    /// Default: [`DEFAULT_ROW_SUM_TOLERANCE`].
    pub row_sum_tolerance: f64,
}

impl Default for InputConfig {
    fn default() -> Self {
        Self { kind: ScoreKind::Logits, row_sum_tolerance: DEFAULT_ROW_SUM_TOLERANCE }
    }
}

impl InputConfig {
    /// Config for input of the given kind.
    pub fn new(kind: ScoreKind) -> Self {
        Self { kind, ..Self::default() }
    }

    /// Sets the row-sum tolerance for probability input.
    pub fn with_row_sum_tolerance(mut self, tolerance: f64) -> Self {
        self.row_sum_tolerance = tolerance;
        self
    }
}

/// Host rows: values and labels, borrowed where possible.
pub type HostRows<'a> = (HostValues<'a>, Cow<'a, [i64]>);

/// Float types [`Predictions::from_host`] takes: `f32` is stored as is, `f64` too (no rounding).
pub trait HostScore: Copy + Into<f64> + Send + Sync + private::Sealed {
    /// Whether the type is stored at double precision.
    const DOUBLE: bool;

    /// The values as stored, without a copy.
    fn into_host_values(values: Vec<Self>) -> HostValues<'static>;
}

impl HostScore for f32 {
    const DOUBLE: bool = false;

    fn into_host_values(values: Vec<Self>) -> HostValues<'static> {
        HostValues::F32(Cow::Owned(values))
    }
}

impl HostScore for f64 {
    const DOUBLE: bool = true;

    fn into_host_values(values: Vec<Self>) -> HostValues<'static> {
        HostValues::F64(Cow::Owned(values))
    }
}

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Where the rows live until a metric reads them.
#[derive(Debug, Clone)]
enum Storage {
    /// Already on the device, as the caller gave them.
    Device { values: Box<Tensor<2>>, labels: Box<Tensor<1, Int>> },
    /// On the host; uploaded one row chunk at a time, so no device buffer holds all of N.
    Host { values: HostStore, labels: Vec<i64> },
}

/// Most values [`Predictions::resident`] holds on a device in one buffer: 2^28 (1 GiB of f32),
/// the kernels' chunk.
pub const RESIDENT_VALUES: usize = 1 << 28;

/// Validated predictions: `[N, K]` scores (or `[N, 1]` binary scores) and `[N]` labels.
///
/// Built once with one of the constructors, which check everything
/// (see [`crate::input`]); every metric then trusts them.
///
/// # Example
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use calib_core::input::Predictions;
///
/// let device = Device::flex();
/// let logits = Tensor::<2>::from_floats([[2.0, 0.0], [0.0, 1.0], [3.0, 0.5]], &device);
/// let labels = Tensor::<1, Int>::from_ints([0, 1, 1], &device);
/// let preds = Predictions::logits(logits, labels).unwrap();
/// assert_eq!((preds.n_samples(), preds.n_classes()), (3, 2));
/// ```
#[derive(Debug, Clone)]
pub struct Predictions {
    kind: ScoreKind,
    n_samples: usize,
    n_columns: usize,
    device: Device,
    storage: Storage,
    weights: Option<SampleWeights>,
}

impl Predictions {
    /// Logits `[N, K]` with labels `[N]` in `[0, K)`.
    pub fn logits(logits: Tensor<2>, labels: Tensor<1, Int>) -> Result<Self> {
        Self::from_tensors(logits, labels, InputConfig::new(ScoreKind::Logits))
    }

    /// Probabilities `[N, K]` with labels `[N]`.
    pub fn probabilities(probabilities: Tensor<2>, labels: Tensor<1, Int>) -> Result<Self> {
        Self::from_tensors(probabilities, labels, InputConfig::new(ScoreKind::Probabilities))
    }

    /// Binary input: positive-class scores `[N]` in `[0, 1]` with labels `[N]` in `{0, 1}`.
    pub fn binary(scores: Tensor<1>, labels: Tensor<1, Int>) -> Result<Self> {
        let n = scores.dims()[0];
        Self::from_tensors(scores.reshape([n, 1]), labels, InputConfig::new(ScoreKind::Binary))
    }

    /// Device tensors of any kind; the general constructor behind the three above.
    ///
    /// Validation runs on the device with one read-back of a few scalars; only when it fails
    /// are the rows read to the host to name the first offending one.
    pub fn from_tensors(
        values: Tensor<2>,
        labels: Tensor<1, Int>,
        config: InputConfig,
    ) -> Result<Self> {
        let [n_samples, n_columns] = values.dims();
        let n_columns = if config.kind == ScoreKind::Binary { n_columns.max(1) } else { n_columns };
        validate_shape(config.kind, n_samples, n_columns, labels.dims()[0])?;
        if config.kind == ScoreKind::Binary && n_columns != 1 {
            return Err(CalibError::InvalidConfig(format!(
                "binary input needs one score column, got {n_columns}"
            )));
        }
        let device = values.device();
        let this = Self {
            kind: config.kind,
            n_samples,
            n_columns,
            device,
            storage: Storage::Device { values: Box::new(values), labels: Box::new(labels) },
            weights: None,
        };
        this.validate_on_device(config.row_sum_tolerance)?;
        Ok(this)
    }

    /// Host rows (`values` row-major `[N, n_columns]`, any float type) for `device`.
    ///
    /// The rows stay on the host and go to the device one chunk at a time, so inputs larger
    /// than one device buffer work (wgpu on a software driver fails above ~128 MiB).
    pub fn from_host<T: HostScore>(
        values: &[T],
        n_columns: usize,
        labels: &[i64],
        config: InputConfig,
        device: &Device,
    ) -> Result<Self> {
        Self::from_host_vec(values.to_vec(), n_columns, labels.to_vec(), config, device)
    }

    /// [`Predictions::from_host`] taking ownership of the rows, so they are not copied: what a
    /// file reader that has just filled the buffers wants.
    ///
    /// # Errors
    /// As [`Predictions::from_host`].
    pub fn from_host_vec<T: HostScore>(
        values: Vec<T>,
        n_columns: usize,
        labels: Vec<i64>,
        config: InputConfig,
        device: &Device,
    ) -> Result<Self> {
        let values = HostStore::Owned(T::into_host_values(values));
        Self::from_host_store(values, n_columns, labels, config, device)
    }

    /// Host rows read in place from `buffer` (row-major `[N, n_columns]`, owned by the caller:
    /// a NumPy array, a memory map), checked as [`Self::from_host`] checks them. The scores
    /// are never copied; chunks go to the device from the buffer.
    ///
    /// # Errors
    /// As [`Self::from_host`].
    pub fn from_buffer(
        buffer: std::sync::Arc<dyn ScoreBuffer>,
        n_columns: usize,
        labels: Vec<i64>,
        config: InputConfig,
        device: &Device,
    ) -> Result<Self> {
        Self::from_host_store(HostStore::Shared(buffer), n_columns, labels, config, device)
    }

    /// Host predictions of `values`, checked: whole rows of `n_columns`, one label per row,
    /// and every row as [`validate_host`] wants it.
    fn from_host_store(
        values: HostStore,
        n_columns: usize,
        labels: Vec<i64>,
        config: InputConfig,
        device: &Device,
    ) -> Result<Self> {
        let (kind, tolerance) = (config.kind, config.row_sum_tolerance);
        let n_samples = match values.view() {
            HostValues::F32(v) => checked_rows(kind, &v, n_columns, &labels, tolerance),
            HostValues::F64(v) => checked_rows(kind, &v, n_columns, &labels, tolerance),
        }?;
        Ok(Self {
            kind,
            n_samples,
            n_columns,
            device: device.clone(),
            storage: Storage::Host { values, labels },
            weights: None,
        })
    }

    /// Whether the rows live on the device (made from tensors, or [`Self::resident`]), not in
    /// host storage uploaded chunk by chunk.
    pub fn on_device(&self) -> bool {
        matches!(self.storage, Storage::Device { .. })
    }

    /// These predictions with their rows held on their device, uploaded once (scores as f32,
    /// labels as the device's integers), when the device is a GPU, the rows are on the host
    /// and they fit one device buffer ([`RESIDENT_VALUES`]); the predictions unchanged
    /// otherwise (CPU devices read host rows where they are; larger inputs go on streaming
    /// chunk by chunk). Weights stay as they are.
    ///
    /// For a caller that runs many metrics and fits on the same rows (`calib compare`,
    /// `calib fit` with `--backend wgpu`): every device path then reads the rows where they
    /// live (the kernels' metrics, the device fits, the binary maps' sorted pairs), and none
    /// uploads them again. The rows were checked when these predictions were made.
    pub fn resident(self) -> Self {
        let Storage::Host { values, labels } = &self.storage else { return self };
        let too_large = self.n_samples.saturating_mul(self.n_columns) > RESIDENT_VALUES;
        if BackendKind::of(&self.device).is_cpu() || too_large || self.n_samples == 0 {
            return self;
        }
        let (n, k) = (self.n_samples, self.n_columns);
        let (v, l) = upload_rows(&values.view(), labels, k, 0..n, DType::F32, &self.device);
        Self { storage: Storage::Device { values: Box::new(v), labels: Box::new(l) }, ..self }
    }

    /// The scores tensor when the rows live on the device.
    pub(super) fn device_values(&self) -> Option<Tensor<2>> {
        match &self.storage {
            Storage::Device { values, .. } => Some((**values).clone()),
            Storage::Host { .. } => None,
        }
    }

    /// The host scores the predictions hold (those [`Self::from_host_vec`] took), for the
    /// caller to fill with the next rows instead of allocating afresh; `None` for predictions
    /// on the device or read from a caller's [`ScoreBuffer`].
    pub fn into_host_values(self) -> Option<HostValues<'static>> {
        match self.storage {
            Storage::Host { values: HostStore::Owned(values), .. } => Some(values),
            Storage::Host { values: HostStore::Shared(_), .. } | Storage::Device { .. } => None,
        }
    }

    /// These predictions with per-row sample weights (one per row, finite, non-negative, at
    /// least one positive): every metric, bootstrap and fit then weighs row `i` by `w_i`
    /// (docs/conventions.md, "Sample weights"); integer weights equal repeated rows.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] as [`SampleWeights::new`] says.
    ///
    /// ```
    /// use burn::tensor::Device;
    /// use calib_core::input::{InputConfig, Predictions, ScoreKind};
    /// let config = InputConfig::new(ScoreKind::Binary);
    /// let preds = Predictions::from_host(&[0.2f64, 0.7], 1, &[0, 1], config, &Device::flex()).unwrap();
    /// let weighted = preds.with_weights(vec![2.0, 1.0]).unwrap();
    /// assert_eq!(weighted.total_weight(), 3.0);
    /// ```
    pub fn with_weights(mut self, weights: Vec<f64>) -> Result<Self> {
        self.weights = Some(SampleWeights::new(weights, self.n_samples)?);
        Ok(self)
    }

    /// These predictions, a chunk of a larger set's rows, with their sample weights: checked
    /// as [`Self::with_weights`] does, except that a chunk's weights may all be zero. For a
    /// [`StreamingEvaluation`](crate::StreamingEvaluation), which checks the whole set's sum.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] as [`SampleWeights::of_chunk`] says.
    pub fn with_chunk_weights(mut self, weights: Vec<f64>) -> Result<Self> {
        self.weights = Some(SampleWeights::of_chunk(weights, self.n_samples)?);
        Ok(self)
    }

    /// These predictions with the sample weights of `source` (the rows they were computed
    /// from, as calibrated scores are), if it has any.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] when the row counts differ.
    pub fn with_weights_of(mut self, source: &Predictions) -> Result<Self> {
        let Some(weights) = &source.weights else { return Ok(self) };
        if source.n_samples != self.n_samples {
            return Err(CalibError::InvalidConfig(format!(
                "{} weights for {} rows: one weight per row",
                source.n_samples, self.n_samples
            )));
        }
        // Already checked: shared, not copied.
        self.weights = Some(weights.clone());
        Ok(self)
    }

    /// The predictions without their weights.
    pub fn without_weights(mut self) -> Self {
        self.weights = None;
        self
    }

    /// The sample weights, if any.
    pub fn weights(&self) -> Option<&SampleWeights> {
        self.weights.as_ref()
    }

    /// `W = sum_i w_i`, or N without weights.
    pub fn total_weight(&self) -> f64 {
        self.weights.as_ref().map_or(self.n_samples as f64, SampleWeights::total)
    }

    /// [`CalibError::InvalidConfig`] naming `what` when these predictions carry weights: the
    /// guard of every consumer that cannot weigh rows, so none ignores them silently.
    pub fn reject_weights(&self, what: &str) -> Result<()> {
        match self.weights {
            Some(_) => {
                Err(CalibError::InvalidConfig(format!("{what} does not take sample weights")))
            }
            None => Ok(()),
        }
    }

    /// The rows that whole-number weights stand for, without weights: row `i` repeated `w_i`
    /// times in place (host storage, on the same device); the predictions themselves when
    /// they carry no weights. For consumers defined on repeated rows only.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] naming `what` for weights with fractions;
    /// [`CalibError::Backend`] when device rows cannot be read back.
    pub fn repeated_rows(&self, what: &str) -> Result<Self> {
        let Some(weights) = &self.weights else { return Ok(self.clone()) };
        weights.require_integral(what)?;
        let (values, labels) = self.host_rows()?;
        let w = weights.values();
        let repeat = |row: usize| std::iter::repeat_n(row, w[row] as usize);
        let rows: Vec<usize> = (0..self.n_samples).flat_map(repeat).collect();
        let labels: Vec<i64> = rows.iter().map(|&i| labels[i]).collect();
        let k = self.n_columns;
        let values = match values {
            HostValues::F32(v) => HostValues::F32(repeat_rows(&v, k, &rows).into()),
            HostValues::F64(v) => HostValues::F64(repeat_rows(&v, k, &rows).into()),
        };
        Ok(Self {
            kind: self.kind,
            n_samples: labels.len(),
            n_columns: k,
            device: self.device.clone(),
            storage: Storage::Host { values: HostStore::Owned(values), labels },
            weights: None,
        })
    }

    /// What the scores are.
    pub fn kind(&self) -> ScoreKind {
        self.kind
    }

    /// N.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// K (2 for binary input).
    pub fn n_classes(&self) -> usize {
        match self.kind {
            ScoreKind::Binary => 2,
            _ => self.n_columns,
        }
    }

    /// Columns of the score matrix (1 for binary input, else K).
    pub fn n_columns(&self) -> usize {
        self.n_columns
    }

    /// The device the metrics run on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Rows `start .. start + len` as tensors `[len, n_columns]` (in `dtype`) and `[len]` on
    /// `device` (host rows are uploaded there; device rows are moved and cast as needed).
    ///
    /// # Panics
    /// When `start + len > N`.
    pub fn rows_on(
        &self,
        start: usize,
        len: usize,
        dtype: DType,
        device: &Device,
    ) -> (Tensor<2>, Tensor<1, Int>) {
        assert!(
            start + len <= self.n_samples,
            "rows {start}..{} of {}",
            start + len,
            self.n_samples
        );
        match &self.storage {
            Storage::Host { values, labels } => {
                let span = start..start + len;
                upload_rows(&values.view(), labels, self.n_columns, span, dtype, device)
            }
            Storage::Device { .. } => {
                let (v, l) = self.chunk(start, len, dtype);
                let v = if v.dtype() == dtype { v } else { v.cast(dtype) };
                (v.to_device(device), l.to_device(device))
            }
        }
    }

    /// Rows `start .. start + len` as device tensors `[len, n_columns]` and `[len]`; host rows
    /// are uploaded as `dtype`.
    pub(crate) fn chunk(
        &self,
        start: usize,
        len: usize,
        dtype: DType,
    ) -> (Tensor<2>, Tensor<1, Int>) {
        match &self.storage {
            Storage::Device { values, labels } if start == 0 && len == self.n_samples => {
                ((**values).clone(), (**labels).clone())
            }
            Storage::Device { values, labels } => {
                ((**values).clone().narrow(0, start, len), (**labels).clone().narrow(0, start, len))
            }
            Storage::Host { values, labels } => {
                let span = start..start + len;
                upload_rows(&values.view(), labels, self.n_columns, span, dtype, &self.device)
            }
        }
    }

    /// All rows on the host: values (row-major, f32 or f64 as stored) and i64 labels.
    ///
    /// Free for host storage (borrowed); one device read-back otherwise.
    ///
    /// # Errors
    /// [`CalibError::Backend`] when the device cannot read the rows back.
    pub fn host_rows(&self) -> Result<HostRows<'_>> {
        match &self.storage {
            Storage::Host { values, labels } => Ok((values.view(), labels.as_slice().into())),
            Storage::Device { values, labels } => {
                let tx = Transaction::default()
                    .register((**values).clone())
                    .register((**labels).clone());
                let mut data = crate::engine::read_back(tx)?;
                let l = data.pop().expect("two reads").convert::<i64>().try_into_vec::<i64>();
                let v = data.pop().expect("two reads");
                let v = match v.dtype() {
                    DType::F64 => v.try_into_vec::<f64>().map(|v| HostValues::F64(v.into())),
                    _ => {
                        v.convert::<f32>().try_into_vec::<f32>().map(|v| HostValues::F32(v.into()))
                    }
                };
                match (v, l) {
                    (Ok(v), Ok(l)) => Ok((v, l.into())),
                    _ => Err(CalibError::Backend("cannot read rows back".into())),
                }
            }
        }
    }

    fn validate_on_device(&self, tolerance: f64) -> Result<()> {
        let Storage::Device { values, labels } = &self.storage else {
            return Ok(());
        };
        let finite = (**values).clone().is_finite().all().int();
        let lmin = (**labels).clone().min();
        let lmax = (**labels).clone().max();
        let mut tx = Transaction::default().register(finite).register(lmin).register(lmax);
        if self.kind != ScoreKind::Logits {
            tx = tx.register((**values).clone().min()).register((**values).clone().max());
        }
        if self.kind == ScoreKind::Probabilities {
            let dev = (**values).clone().sum_dim(1).sub_scalar(1.0).abs().max();
            tx = tx.register(dev);
        }
        let data = crate::engine::read_back(tx)?;
        let scalars: Vec<f64> =
            data.into_iter().map(read_f64).collect::<Result<Vec<_>>>()?.concat();
        let n_classes = self.n_classes() as f64;
        let mut ok = scalars[0] == 1.0 && scalars[1] >= 0.0 && scalars[2] < n_classes;
        if self.kind != ScoreKind::Logits {
            ok &= scalars[3] >= 0.0 && scalars[4] <= 1.0;
        }
        if self.kind == ScoreKind::Probabilities {
            ok &= scalars[5] <= tolerance;
        }
        if ok {
            return Ok(());
        }
        // Slow path: find and name the first offending row on the host.
        let (v, l) = self.host_rows()?;
        match v {
            HostValues::F32(v) => validate_host(self.kind, &v, self.n_columns, &l, tolerance, 0)?,
            HostValues::F64(v) => validate_host(self.kind, &v, self.n_columns, &l, tolerance, 0)?,
        }
        // f32 device sums may exceed a tight tolerance that the f64 host check accepts.
        Ok(())
    }
}

/// The number of rows of row-major `values` of `n_columns`, once they are checked: whole rows,
/// one label per row, each row valid for `kind` (see [`validate_host`]).
fn checked_rows<T: Copy + Into<f64> + Sync>(
    kind: ScoreKind,
    values: &[T],
    n_columns: usize,
    labels: &[i64],
    tolerance: f64,
) -> Result<usize> {
    let n_samples = values.len().checked_div(n_columns).unwrap_or(0);
    if n_columns == 0 || !values.len().is_multiple_of(n_columns) {
        return Err(CalibError::InvalidConfig(format!(
            "{} values do not form rows of {n_columns} columns",
            values.len()
        )));
    }
    validate_shape(kind, n_samples, n_columns, labels.len())?;
    validate_host(kind, values, n_columns, labels, tolerance, 0)?;
    Ok(n_samples)
}

/// The rows `rows` (in that order, repeats included) of row-major `values` of `k` columns.
fn repeat_rows<T: Copy>(values: &[T], k: usize, rows: &[usize]) -> Vec<T> {
    let mut out = Vec::with_capacity(rows.len() * k);
    rows.iter().for_each(|&i| out.extend_from_slice(&values[i * k..(i + 1) * k]));
    out
}

/// Host rows `rows` (of `k` columns) as tensors `[len, k]` in `dtype` and `[len]` on `device`.
fn upload_rows(
    values: &HostValues<'_>,
    labels: &[i64],
    k: usize,
    rows: std::ops::Range<usize>,
    dtype: DType,
    device: &Device,
) -> (Tensor<2>, Tensor<1, Int>) {
    let (len, span) = (rows.len(), rows.start * k..rows.end * k);
    let v = match values {
        HostValues::F32(v) => TensorData::new(v[span].to_vec(), [len, k]),
        HostValues::F64(v) => TensorData::new(v[span].to_vec(), [len, k]),
    };
    let l = TensorData::new(labels[rows].to_vec(), [len]);
    (Tensor::from_data(v, (device, dtype)), Tensor::from_data(l, device))
}
