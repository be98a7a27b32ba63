//! calib's kernels as a burn backend extension: `Tensor` in, `Tensor` out, launched on the
//! CubeCL runtime of the tensors' device (wgpu here; the same code serves cuda).

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, backend_extension};
use burn::tensor::{DType, Device, Int, Shape, Tensor};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::fixed_bins::WORDS;
use super::kernels::{self, ROW_FIELDS};
use super::launch::launch;
use crate::engine::cost::count_launch;

/// Threads per cube of the one-thread-per-item kernels.
const THREADS: u32 = 256;
/// Threads per cube along the classes in the class-wise kernel.
pub(super) const CLASS_THREADS: u32 = 64;
/// Largest cube count along one grid axis.
const MAX_GRID: u32 = 65_535;
/// Most u32 words of a top-label histogram kept in shared memory (16 KiB).
const SHARED_WORDS: usize = 4096;
/// Rows each thread of the shared-memory histogram takes, about.
const ROWS_PER_THREAD: usize = 16;

/// calib's device kernels. Each takes contiguous f32 values and i32 labels.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
pub trait CalibKernels: Backend {
    /// The fused row pass over `[N, K]` values: `[ROW_FIELDS, N]` per-row fields and the
    /// `[N]` predicted classes.
    fn calib_row_pass(
        values: FloatTensor<Self>,
        labels: IntTensor<Self>,
        logits: bool,
    ) -> (FloatTensor<Self>, IntTensor<Self>);

    /// Adds a chunk's top-label bin sums to `bins` (`[G B WORDS]` u32, from
    /// [`accumulator`]) from its row pass; `G` > 1 groups by predicted class.
    fn calib_top_label_bins(
        rows: FloatTensor<Self>,
        pred: IntTensor<Self>,
        edges: FloatTensor<Self>,
        bins: IntTensor<Self>,
        groups: usize,
        threshold: f32,
    ) -> IntTensor<Self>;

    /// Adds a chunk's class-wise bin sums to `bins` (`[K B WORDS]` u32).
    fn calib_class_bins(
        values: FloatTensor<Self>,
        labels: IntTensor<Self>,
        rows: FloatTensor<Self>,
        edges: FloatTensor<Self>,
        bins: IntTensor<Self>,
        logits: bool,
        threshold: f32,
    ) -> IntTensor<Self>;

    /// Per used row (`offset`, then every `stride`-th) the temperature NLL and its two
    /// derivatives in `s = 1/T`, `[3, used]`.
    fn calib_tempered_moments(
        values: FloatTensor<Self>,
        labels: IntTensor<Self>,
        max: FloatTensor<Self>,
        s: f32,
        offset: usize,
        stride: usize,
    ) -> FloatTensor<Self>;
}

/// A 1-D launch of `n` threads folded into a grid no axis of which exceeds [`MAX_GRID`].
pub(super) fn grid(n: usize) -> (CubeCount, CubeDim) {
    let cubes = (n.div_ceil(THREADS as usize)).max(1) as u32;
    let x = cubes.min(MAX_GRID);
    (CubeCount::Static(x, cubes.div_ceil(x), 1), CubeDim::new_1d(THREADS))
}

/// The launch of a one-thread-per-(class, run of rows) kernel over `[n, k]` values: about
/// 2^18 threads in all. Returns the grid and the rows per run.
pub(super) fn class_grid(n: usize, k: usize) -> (CubeCount, usize) {
    let chunks = (262_144usize.div_ceil(k)).clamp(1, n.max(1)).min(MAX_GRID as usize);
    let chunk = n.div_ceil(chunks).max(1);
    let chunks = n.div_ceil(chunk).max(1);
    (CubeCount::Static((k as u32).div_ceil(CLASS_THREADS), chunks as u32, 1), chunk)
}

/// A zeroed u32 accumulator of `n_bins` bins on `device`.
pub(super) fn accumulator(device: &Device, n_bins: usize) -> Tensor<1, Int> {
    Tensor::<1, Int>::zeros([n_bins * WORDS], (device, DType::U32))
}

impl CalibKernels for Cube {
    fn calib_row_pass(
        values: CubeTensor,
        labels: CubeTensor,
        logits: bool,
    ) -> (CubeTensor, CubeTensor) {
        let (values, labels) = (into_contiguous(values), into_contiguous(labels));
        let (n, k) = (values.meta.shape()[0], values.meta.shape()[1]);
        count_launch(n * k * 4);
        let (client, device) = (values.client.clone(), values.device.clone());
        let shape = Shape::new([ROW_FIELDS, n]);
        let rows = empty_device_dtype(client.clone(), device.clone(), shape, DType::F32);
        let pred = empty_device_dtype(client.clone(), device, Shape::new([n]), DType::I32);
        let (count, dim) = grid(n * kernels::LANES as usize);
        debug_assert_eq!(THREADS, kernels::ROW_THREADS);
        launch!(kernels::row_pass(
            &client,
            count,
            dim,
            values.into_tensor_arg(),
            labels.into_tensor_arg(),
            rows.clone().into_tensor_arg(),
            pred.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            logits,
        ));
        (rows, pred)
    }

    fn calib_top_label_bins(
        rows: CubeTensor,
        pred: CubeTensor,
        edges: CubeTensor,
        bins: CubeTensor,
        groups: usize,
        threshold: f32,
    ) -> CubeTensor {
        let (rows, pred, edges) =
            (into_contiguous(rows), into_contiguous(pred), into_contiguous(edges));
        let n = rows.meta.shape()[1];
        let n_bins = edges.meta.shape()[0] - 1;
        count_launch(0);
        let client = rows.client.clone();
        let n_words = groups * n_bins * WORDS;
        if n_words <= SHARED_WORDS {
            // Enough cubes to fill the device, each striding over its share of the rows.
            let cubes = n.div_ceil(THREADS as usize * ROWS_PER_THREAD).clamp(1, MAX_GRID as usize);
            launch!(kernels::top_label_bins_shared(
                &client,
                CubeCount::Static(cubes as u32, 1, 1),
                CubeDim::new_1d(THREADS),
                rows.into_tensor_arg(),
                pred.into_tensor_arg(),
                edges.into_tensor_arg(),
                bins.clone().into_tensor_arg(),
                n as u32,
                n_bins as u32,
                threshold,
                groups > 1,
                n_words as u32,
            ));
            return bins;
        }
        let (count, dim) = grid(n);
        launch!(kernels::top_label_bins(
            &client,
            count,
            dim,
            rows.into_tensor_arg(),
            pred.into_tensor_arg(),
            edges.into_tensor_arg(),
            bins.clone().into_tensor_arg(),
            n as u32,
            n_bins as u32,
            threshold,
            groups > 1,
        ));
        bins
    }

    fn calib_class_bins(
        values: CubeTensor,
        labels: CubeTensor,
        rows: CubeTensor,
        edges: CubeTensor,
        bins: CubeTensor,
        logits: bool,
        threshold: f32,
    ) -> CubeTensor {
        let (values, labels) = (into_contiguous(values), into_contiguous(labels));
        let (rows, edges) = (into_contiguous(rows), into_contiguous(edges));
        let (n, k) = (values.meta.shape()[0], values.meta.shape()[1]);
        let n_bins = edges.meta.shape()[0] - 1;
        count_launch(n * k * 4);
        let client = values.client.clone();
        let (count, chunk) = class_grid(n, k);
        launch!(kernels::class_bins(
            &client,
            count,
            CubeDim::new_1d(CLASS_THREADS),
            values.into_tensor_arg(),
            labels.into_tensor_arg(),
            rows.into_tensor_arg(),
            edges.into_tensor_arg(),
            bins.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            chunk as u32,
            threshold,
            logits,
            n_bins as u32,
        ));
        bins
    }

    fn calib_tempered_moments(
        values: CubeTensor,
        labels: CubeTensor,
        max: CubeTensor,
        s: f32,
        offset: usize,
        stride: usize,
    ) -> CubeTensor {
        let (values, labels, max) =
            (into_contiguous(values), into_contiguous(labels), into_contiguous(max));
        let (n, k) = (values.meta.shape()[0], values.meta.shape()[1]);
        let used = n.saturating_sub(offset).div_ceil(stride);
        count_launch(used * k * 4);
        let (client, device) = (values.client.clone(), values.device.clone());
        let out = empty_device_dtype(client.clone(), device, Shape::new([3, used]), DType::F32);
        let (count, dim) = grid(used);
        launch!(kernels::tempered_moments(
            &client,
            count,
            dim,
            values.into_tensor_arg(),
            labels.into_tensor_arg(),
            max.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            used as u32,
            k as u32,
            offset as u32,
            stride as u32,
            s,
        ));
        out
    }
}
