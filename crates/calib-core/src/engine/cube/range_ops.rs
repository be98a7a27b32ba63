//! The adaptive-range kernels ([`super::range_kernels`]) as a burn backend extension.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, backend_extension};
use burn::tensor::{DType, Shape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::launch::launch;
use super::ops::{CLASS_THREADS, class_grid, grid};
use super::range_kernels as k;
use crate::engine::cost::count_launch;

/// Where a request's pairs come from, and which rows a chunk holds.
#[derive(Debug, Clone, Copy)]
pub struct PairSource {
    /// Class-wise pairs (else top-label).
    pub classes: bool,
    /// Top-label pairs grouped by predicted class.
    pub grouped: bool,
    /// The values are logits.
    pub logits: bool,
    /// Pairs at or below this score are left out.
    pub threshold: f32,
    /// The chunk's first row in the whole input.
    pub first_row: u32,
}

/// One digit pass of the radix selection.
#[derive(Debug, Clone, Copy)]
pub struct DigitPass {
    /// The digit's lowest bit.
    pub shift: u32,
    /// Its width in bits.
    pub width: u32,
    /// Table entries per group (0 on the first pass, which has no table).
    pub per_group: u32,
}

/// Blocks of rows a tie pass counts in.
#[derive(Debug, Clone, Copy)]
pub struct TieBlocks {
    /// Rows per block.
    pub block: u32,
    /// Blocks per tie.
    pub n_blocks: u32,
    /// Table entries per group.
    pub per_group: u32,
    /// Entries of the table's key and id parts (groups x `per_group`).
    pub half: u32,
}

/// The adaptive-range kernels. Tables are u32 tensors laid out as the kernels say; each
/// accumulator is added to in place and returned.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
pub trait RangeKernels: Backend {
    /// Adds a chunk's pairs to the digit histograms `hist` of `pass`.
    fn calib_range_histogram(
        values: FloatTensor<Self>,
        rows: FloatTensor<Self>,
        pred: IntTensor<Self>,
        table: IntTensor<Self>,
        hist: IntTensor<Self>,
        source: PairSource,
        pass: DigitPass,
    ) -> IntTensor<Self>;

    /// Adds a chunk's pairs tied with a cut to their tie's row-block counts.
    fn calib_range_tie_counts(
        values: FloatTensor<Self>,
        rows: FloatTensor<Self>,
        pred: IntTensor<Self>,
        table: IntTensor<Self>,
        counts: IntTensor<Self>,
        source: PairSource,
        blocks: TieBlocks,
    ) -> IntTensor<Self>;

    /// Where the ranks of `queries` (`m` offsets into `counts`, then `m` ranks) fall in the
    /// histograms of `width` buckets `counts`: `[3 m]` u32, buckets, ranks inside them and
    /// their counts ([`super::range_kernels::range_locate`]; `first`: the ranks are cut
    /// numbers of `n_ranges` ranges).
    fn calib_range_locate(
        counts: IntTensor<Self>,
        queries: IntTensor<Self>,
        width: usize,
        n_ranges: usize,
        first: bool,
    ) -> IntTensor<Self>;

    /// Adds a chunk's class-wise pairs to their ranges' sums `[K R WORDS]`.
    fn calib_class_ranges(
        values: FloatTensor<Self>,
        labels: IntTensor<Self>,
        rows: FloatTensor<Self>,
        cuts: IntTensor<Self>,
        bins: IntTensor<Self>,
        source: PairSource,
        n_ranges: usize,
    ) -> IntTensor<Self>;

    /// Adds a chunk's top-label pairs to their ranges' sums `[G R WORDS]`.
    fn calib_top_label_ranges(
        rows: FloatTensor<Self>,
        pred: IntTensor<Self>,
        cuts: IntTensor<Self>,
        bins: IntTensor<Self>,
        source: PairSource,
        n_ranges: usize,
    ) -> IntTensor<Self>;
}

/// Pairs in a chunk of `[N, K]` values.
fn n_items(values: &CubeTensor, source: PairSource) -> (usize, usize, usize) {
    let (n, k) = (values.meta.shape()[0], values.meta.shape()[1]);
    (n, k, if source.classes { n * k } else { n })
}

impl RangeKernels for Cube {
    fn calib_range_histogram(
        values: CubeTensor,
        rows: CubeTensor,
        pred: CubeTensor,
        table: CubeTensor,
        hist: CubeTensor,
        source: PairSource,
        pass: DigitPass,
    ) -> CubeTensor {
        let (values, rows, pred) =
            (into_contiguous(values), into_contiguous(rows), into_contiguous(pred));
        let (n, k, items) = n_items(&values, source);
        count_launch(if source.classes { items * 4 } else { 0 });
        let half = table.meta.shape()[0] / 2;
        let (count, dim) = grid(items);
        launch!(k::range_histogram(
            &values.client.clone(),
            count,
            dim,
            values.into_tensor_arg(),
            rows.into_tensor_arg(),
            pred.into_tensor_arg(),
            into_contiguous(table).into_tensor_arg(),
            hist.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            source.threshold,
            pass.shift,
            pass.shift + pass.width,
            1u32 << pass.width,
            pass.per_group,
            half as u32,
            pass.per_group == 0,
            source.classes,
            source.grouped,
            source.logits,
        ));
        hist
    }

    fn calib_range_tie_counts(
        values: CubeTensor,
        rows: CubeTensor,
        pred: CubeTensor,
        table: CubeTensor,
        counts: CubeTensor,
        source: PairSource,
        blocks: TieBlocks,
    ) -> CubeTensor {
        let (values, rows, pred) =
            (into_contiguous(values), into_contiguous(rows), into_contiguous(pred));
        let (n, k, items) = n_items(&values, source);
        count_launch(if source.classes { items * 4 } else { 0 });
        let (count, dim) = grid(items);
        launch!(k::range_tie_counts(
            &values.client.clone(),
            count,
            dim,
            values.into_tensor_arg(),
            rows.into_tensor_arg(),
            pred.into_tensor_arg(),
            into_contiguous(table).into_tensor_arg(),
            counts.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            source.first_row,
            source.threshold,
            blocks.block,
            blocks.n_blocks,
            blocks.per_group,
            blocks.half,
            source.classes,
            source.grouped,
            source.logits,
        ));
        counts
    }

    fn calib_range_locate(
        counts: CubeTensor,
        queries: CubeTensor,
        width: usize,
        n_ranges: usize,
        first: bool,
    ) -> CubeTensor {
        let (counts, queries) = (into_contiguous(counts), into_contiguous(queries));
        let m = queries.meta.shape()[0] / 2;
        count_launch(0);
        let (client, device) = (counts.client.clone(), counts.device.clone());
        let out = empty_device_dtype(client.clone(), device, Shape::new([3 * m]), DType::U32);
        let (count, dim) = grid(m);
        launch!(k::range_locate(
            &client,
            count,
            dim,
            counts.into_tensor_arg(),
            queries.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            m as u32,
            width as u32,
            n_ranges as u32,
            first,
        ));
        out
    }

    fn calib_class_ranges(
        values: CubeTensor,
        labels: CubeTensor,
        rows: CubeTensor,
        cuts: CubeTensor,
        bins: CubeTensor,
        source: PairSource,
        n_ranges: usize,
    ) -> CubeTensor {
        let (values, labels, rows) =
            (into_contiguous(values), into_contiguous(labels), into_contiguous(rows));
        let (n, k) = (values.meta.shape()[0], values.meta.shape()[1]);
        count_launch(n * k * 4);
        let (count, chunk) = class_grid(n, k);
        launch!(k::class_ranges(
            &values.client.clone(),
            count,
            CubeDim::new_1d(CLASS_THREADS),
            values.into_tensor_arg(),
            labels.into_tensor_arg(),
            rows.into_tensor_arg(),
            into_contiguous(cuts).into_tensor_arg(),
            bins.clone().into_tensor_arg(),
            n as u32,
            k as u32,
            chunk as u32,
            source.first_row,
            source.threshold,
            source.logits,
            n_ranges as u32,
        ));
        bins
    }

    fn calib_top_label_ranges(
        rows: CubeTensor,
        pred: CubeTensor,
        cuts: CubeTensor,
        bins: CubeTensor,
        source: PairSource,
        n_ranges: usize,
    ) -> CubeTensor {
        let (rows, pred) = (into_contiguous(rows), into_contiguous(pred));
        let n = rows.meta.shape()[1];
        count_launch(0);
        let (count, dim) = grid(n);
        launch!(k::top_label_ranges(
            &rows.client.clone(),
            count,
            dim,
            rows.into_tensor_arg(),
            pred.into_tensor_arg(),
            into_contiguous(cuts).into_tensor_arg(),
            bins.clone().into_tensor_arg(),
            n as u32,
            source.first_row,
            n_ranges as u32,
            source.threshold,
            source.grouped,
        ));
        bins
    }
}
