//! Binary maps applied on the device ([`super::map_kernels`]) as a burn backend extension,
//! and [`apply_map_tables`]: a map calibrator's output on rows that live on a GPU, computed
//! there.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, Dispatch, backend_extension};
use burn::tensor::{Int, Tensor, Transaction};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;

use super::launch::launch;
use super::map_kernels as k;
use super::ops::grid;
use super::rows::{device_rows, row_pass};
use super::sort_ops::f32_values;
use super::sorted_pairs::{DevicePairs, renormalised};
use super::words::{f32_tensor, u32_tensor};
use crate::binning::f32_below;
use crate::engine::cost::{count_launch, read_back};
use crate::error::{CalibError, Result};
use crate::input::{InputConfig, Predictions, ScoreKind};

/// A binary map as the device reads it (see [`apply_map_tables`]).
#[derive(Debug, Clone, PartialEq)]
pub enum MapTable {
    /// Linear between increasing thresholds `x` with values `y` (and the `slopes` between
    /// them), the end values outside: isotonic regression's maps.
    Linear {
        /// Thresholds.
        x: Vec<f64>,
        /// Values at them.
        y: Vec<f64>,
        /// `(y[j + 1] - y[j]) / (x[j + 1] - x[j])`.
        slopes: Vec<f64>,
    },
    /// Right-closed bins between `edges` (`B + 1`, ascending) with `values` (`B`): histogram
    /// binning's maps.
    Steps {
        /// Edges.
        edges: Vec<f64>,
        /// Bin values.
        values: Vec<f64>,
    },
    /// `sigmoid(c_0 + c_1 u_1 + c_2 u_2)` of features `u` of the score clipped to `clip`, with
    /// `l_0 = ln max(s, floor)` and `l_1 = ln max(1 - s, floor)`: the logistic maps (Platt,
    /// beta, affine and quadratic on the logit).
    Logistic {
        /// What `u_1, u_2` are.
        features: LogisticFeatures,
        /// The score's clip `(lo, hi)`.
        clip: (f64, f64),
        /// The floor of `s` and `1 - s` before their logarithms.
        floor: f64,
        /// `[c_0, c_1, c_2]`.
        coefficients: [f64; 3],
    },
    /// The score itself.
    Identity,
}

/// The features `u_1, u_2` of a [`MapTable::Logistic`] map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogisticFeatures {
    /// `z = l_0 - l_1` (the logit) and `z^2`.
    LogitPowers,
    /// `l_0 = ln s` and `l_1 = ln(1 - s)`.
    Logs,
    /// The score itself, and nothing.
    Score,
}

impl LogisticFeatures {
    /// The kernels' code of the features ([`super::map_kernels::logistic_feature`]).
    pub(super) fn code(self) -> f32 {
        match self {
            Self::LogitPowers => 0.0,
            Self::Logs => 1.0,
            Self::Score => 2.0,
        }
    }
}

/// The map-applying kernel.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
#[allow(clippy::too_many_arguments)] // the packed tables' five tensors
pub trait MapKernels: Backend {
    /// Each score's map value (`values` `[N, C]`, `rows` the row pass's for logits; the
    /// tables packed as [`super::map_kernels::map_apply`] reads them).
    fn calib_map_apply(
        values: FloatTensor<Self>,
        rows: FloatTensor<Self>,
        x: FloatTensor<Self>,
        y: FloatTensor<Self>,
        slopes: FloatTensor<Self>,
        xo: IntTensor<Self>,
        yo: IntTensor<Self>,
        logits: bool,
        kind: TableKind,
    ) -> FloatTensor<Self>;
}

impl MapKernels for Cube {
    fn calib_map_apply(
        values: CubeTensor,
        rows: CubeTensor,
        x: CubeTensor,
        y: CubeTensor,
        slopes: CubeTensor,
        xo: CubeTensor,
        yo: CubeTensor,
        logits: bool,
        kind: TableKind,
    ) -> CubeTensor {
        let values = into_contiguous(values);
        let (n, c) = (values.meta.shape()[0], values.meta.shape()[1]);
        count_launch(n * c * 4);
        let out = f32_values(&values, n * c);
        let (count, dim) = grid(n * c);
        launch!(k::map_apply(
            &values.client.clone(),
            count,
            dim,
            values.into_tensor_arg(),
            into_contiguous(rows).into_tensor_arg(),
            into_contiguous(x).into_tensor_arg(),
            into_contiguous(y).into_tensor_arg(),
            into_contiguous(slopes).into_tensor_arg(),
            into_contiguous(xo).into_tensor_arg(),
            into_contiguous(yo).into_tensor_arg(),
            out.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            c > 1,
            logits,
            kind == TableKind::Linear,
            kind == TableKind::Logistic,
        ));
        out
    }
}

/// The kind of every table of one launch: the tables must not mix kinds, identities aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// [`MapTable::Steps`] (or identities only).
    Steps,
    /// [`MapTable::Linear`].
    Linear,
    /// [`MapTable::Logistic`].
    Logistic,
}

impl TableKind {
    /// The one kind of `tables`, `None` where they mix kinds.
    fn of(tables: &[MapTable]) -> Option<Self> {
        let kinds = tables.iter().filter_map(|t| match t {
            MapTable::Linear { .. } => Some(Self::Linear),
            MapTable::Steps { .. } => Some(Self::Steps),
            MapTable::Logistic { .. } => Some(Self::Logistic),
            MapTable::Identity => None,
        });
        let mut kinds = kinds.collect::<Vec<_>>();
        kinds.dedup();
        match kinds.as_slice() {
            [] => Some(Self::Steps),
            [kind] => Some(*kind),
            _ => None,
        }
    }
}

/// The calibrated probabilities of `preds` (rows on a GPU, [`DevicePairs::takes`]) through
/// one map per class (one-vs-rest, renormalised over the classes, `1 / K` where every value
/// is 0) or, for binary input, the one map: computed on the device in f32, one read-back of
/// the output's checks. Thresholds are compared through the largest f32 at or below them, so
/// a score falls where the host's f64 comparison puts it (steps exactly; a line's value to
/// f32 rounding).
///
/// # Errors
/// [`CalibError::InvalidConfig`] for rows the device does not take, tables of mixed kinds or
/// one table per class missing.
pub fn apply_map_tables(preds: &Predictions, tables: &[MapTable]) -> Result<Predictions> {
    let (p, labels) = mapped(preds, tables)?;
    if preds.kind() == ScoreKind::Binary {
        return Predictions::binary(p.reshape([preds.n_samples()]), labels);
    }
    let config = InputConfig::new(ScoreKind::Probabilities).with_row_sum_tolerance(1e-4);
    Predictions::from_tensors(p, labels, config)
}

/// The mean NLL of `preds`' labels through the maps of [`apply_map_tables`] (binary: `q` for
/// a positive row, `1 - q` for a negative one), each probability clipped at 1e-15 as the
/// host's fit records clip it: computed on the device in f32, one scalar read back.
///
/// # Errors
/// As [`apply_map_tables`]; [`CalibError::Backend`] when the device cannot read it back.
pub fn map_tables_nll(preds: &Predictions, tables: &[MapTable]) -> Result<f64> {
    let (p, labels) = mapped(preds, tables)?;
    let n = preds.n_samples();
    let at_labels = if preds.kind() == ScoreKind::Binary {
        let q = p.reshape([n]);
        q.clone().mask_where(labels.not_equal_elem(1), q.neg().add_scalar(1.0))
    } else {
        p.gather(1, labels.reshape([n, 1])).reshape([n])
    };
    let nll = at_labels.clamp(1e-15, 1.0).log().neg().mean();
    let data = read_back(Transaction::default().register(nll))?;
    let value = data.into_iter().next().map(|d| d.convert::<f64>().try_to_vec::<f64>());
    match value {
        Some(Ok(v)) if v.len() == 1 => Ok(v[0]),
        _ => Err(CalibError::Backend("the device returned no NLL".into())),
    }
}

/// The maps' values on `preds`' rows, `[N, C]` (binary: `C = 1`; one-vs-rest renormalised),
/// with the rows' labels.
fn mapped(preds: &Predictions, tables: &[MapTable]) -> Result<(Tensor<2>, Tensor<1, Int>)> {
    let binary = preds.kind() == ScoreKind::Binary;
    let want = if binary { 1 } else { preds.n_columns() };
    let kind = TableKind::of(tables);
    if !DevicePairs::takes(preds) || tables.len() != want || kind.is_none() {
        return Err(CalibError::InvalidConfig(
            "applying maps on the device needs unweighted rows on a GPU and one map per class"
                .into(),
        ));
    }
    let (n, logits) = (preds.n_samples(), preds.kind() == ScoreKind::Logits);
    let (values, labels) = device_rows(preds, (0, n));
    let rows = match logits {
        true => row_pass(values.clone(), labels.clone(), true).0,
        false => values.clone(),
    };
    let packed = Packed::of(tables);
    let device = values.device();
    let f32s = |v: Vec<f32>| f32_tensor(v, &device).into_dispatch();
    let q = <Dispatch as MapKernels>::calib_map_apply(
        values.into_dispatch(),
        rows.into_dispatch(),
        f32s(packed.x),
        f32s(packed.y),
        f32s(packed.slopes),
        u32_tensor(packed.xo, &device).into_dispatch(),
        u32_tensor(packed.yo, &device).into_dispatch(),
        logits,
        kind.unwrap_or(TableKind::Steps),
    );
    let q: Tensor<1> = Tensor::from_dispatch(q);
    let k = want;
    let q = q.reshape([n, k]);
    if binary {
        return Ok((q, labels));
    }
    let sums = q.clone().sum_dim(1);
    Ok((renormalised(q, sums, k), labels))
}

/// The tables packed for the kernel: every map's thresholds, values and slopes one after the
/// other, with each map's offsets.
struct Packed {
    x: Vec<f32>,
    y: Vec<f32>,
    slopes: Vec<f32>,
    xo: Vec<u32>,
    yo: Vec<u32>,
}

impl Packed {
    fn of(tables: &[MapTable]) -> Self {
        let mut p = Self { x: vec![], y: vec![], slopes: vec![], xo: vec![0], yo: vec![0] };
        for table in tables {
            let (x, y, slopes): (&[f64], &[f64], &[f64]) = match table {
                MapTable::Linear { x, y, slopes } => (x, y, slopes),
                // The inner edges: a score's bin is the number of them below it.
                MapTable::Steps { edges, values } => {
                    (&edges[1..edges.len().saturating_sub(1).max(1)], values, &[])
                }
                MapTable::Identity => (&[], &[], &[]),
                MapTable::Logistic { features, clip, floor, coefficients: [c0, c1, c2] } => {
                    let (lo, hi, floor) = (clip.0 as f32, clip.1 as f32, *floor as f32);
                    p.y.extend([features.code(), lo, hi, floor]);
                    p.y.extend([c0, c1, c2].map(|&c| c as f32));
                    p.slopes.extend([0.0; 7]);
                    p.xo.push(p.x.len() as u32);
                    p.yo.push(p.y.len() as u32);
                    continue;
                }
            };
            p.x.extend(x.iter().map(|&v| f32_below(v)));
            p.y.extend(y.iter().map(|&v| v as f32));
            // Slopes beside the values (one fewer: padded), so that they share offsets.
            let padded = slopes.iter().map(|&v| v as f32).chain(std::iter::repeat(0.0));
            p.slopes.extend(padded.take(y.len()));
            p.xo.push(p.x.len() as u32);
            p.yo.push(p.y.len() as u32);
        }
        p
    }
}
