//! The segmented radix sort on the device ([`super::sort_kernels`]) as a burn backend
//! extension, and [`sort_segments`], the sort itself: four stable passes of 8 bits over
//! 32-bit keys, each a count per tile, an exclusive scan and a scatter; no read-back.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, Dispatch, backend_extension};
use burn::tensor::{DType, Int, Shape, Tensor};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;

use super::launch::launch;
use super::ops::grid;
use super::sort_kernels::{self as k, DIGIT_BITS, RADIX};
use crate::engine::cost::count_launch;

/// Items each thread of a digit pass takes, in order.
pub(crate) const SORT_TILE: usize = 512;
/// Words each thread of the scan adds up.
const SCAN_PIECE: usize = 1024;

/// How `n_segs` segments of `seg_len` items are cut into tiles of `tile` items.
#[derive(Debug, Clone, Copy)]
pub struct Tiles {
    /// Segments.
    pub n_segs: usize,
    /// Items per segment.
    pub seg_len: usize,
    /// Items per tile.
    pub tile: usize,
}

impl Tiles {
    /// Tiles per segment.
    pub fn per_seg(&self) -> usize {
        self.seg_len.div_ceil(self.tile).max(1)
    }

    /// Tiles in all.
    pub fn count(&self) -> usize {
        self.n_segs * self.per_seg()
    }
}

/// The sort's kernels: u32 tensors in and out. Each launch counts the bytes it reads of
/// `N x K`-sized arrays (the values, or the pairs' keys and payloads) as score bytes.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
pub trait SortKernels: Backend {
    /// The `(key, payload)` words of the pairs of `[N, K]` values: class-wise (class-major,
    /// `K` segments of `N`) or, `classes` false, the `[N, 1]` scores of binary input
    /// ([`super::sort_kernels::class_pairs`]; `rows` is the row pass's for logits).
    fn calib_class_pairs(
        values: FloatTensor<Self>,
        labels: IntTensor<Self>,
        rows: FloatTensor<Self>,
        classes: bool,
        logits: bool,
    ) -> (IntTensor<Self>, IntTensor<Self>);

    /// The per-tile counts of each segment's digits at `shift`, `[segments][RADIX][tiles]`.
    fn calib_digit_counts(keys: IntTensor<Self>, tiles: Tiles, shift: u32) -> IntTensor<Self>;

    /// The exclusive scan of `words`, in place.
    fn calib_exclusive_scan(words: IntTensor<Self>) -> IntTensor<Self>;

    /// The stable scatter of one digit pass to the scanned `offsets`.
    fn calib_digit_scatter(
        keys: IntTensor<Self>,
        payload: IntTensor<Self>,
        offsets: IntTensor<Self>,
        tiles: Tiles,
        shift: u32,
    ) -> (IntTensor<Self>, IntTensor<Self>);
}

/// Sorts each segment's `(key, payload)` items by key, stably (equal keys keep their order).
pub(crate) fn sort_segments(
    mut keys: Tensor<1, Int>,
    mut payload: Tensor<1, Int>,
    n_segs: usize,
    seg_len: usize,
) -> (Tensor<1, Int>, Tensor<1, Int>) {
    let tiles = Tiles { n_segs, seg_len, tile: SORT_TILE };
    for pass in 0..32 / DIGIT_BITS {
        let shift = pass * DIGIT_BITS;
        let counts = <Dispatch as SortKernels>::calib_digit_counts(
            keys.clone().into_dispatch(),
            tiles,
            shift,
        );
        let offsets = <Dispatch as SortKernels>::calib_exclusive_scan(counts);
        let (k, p) = <Dispatch as SortKernels>::calib_digit_scatter(
            keys.into_dispatch(),
            payload.into_dispatch(),
            offsets,
            tiles,
            shift,
        );
        (keys, payload) = (Tensor::from_dispatch(k), Tensor::from_dispatch(p));
    }
    (keys, payload)
}

/// An uninitialised u32 tensor of `n` words on `like`'s device.
pub(super) fn u32_words(like: &CubeTensor, n: usize) -> CubeTensor {
    empty_device_dtype(like.client.clone(), like.device.clone(), Shape::new([n]), DType::U32)
}

/// An uninitialised f32 tensor of `n` values on `like`'s device.
pub(super) fn f32_values(like: &CubeTensor, n: usize) -> CubeTensor {
    empty_device_dtype(like.client.clone(), like.device.clone(), Shape::new([n]), DType::F32)
}

impl SortKernels for Cube {
    fn calib_class_pairs(
        values: CubeTensor,
        labels: CubeTensor,
        rows: CubeTensor,
        classes: bool,
        logits: bool,
    ) -> (CubeTensor, CubeTensor) {
        let (values, labels, rows) =
            (into_contiguous(values), into_contiguous(labels), into_contiguous(rows));
        let (n, c) = (values.meta.shape()[0], values.meta.shape()[1]);
        let items = if classes { n * c } else { n };
        count_launch(n * c * 4);
        let (keys, payload) = (u32_words(&values, items), u32_words(&values, items));
        let (count, dim) = grid(items);
        launch!(k::class_pairs(
            &values.client.clone(),
            count,
            dim,
            values.into_tensor_arg(),
            labels.into_tensor_arg(),
            rows.into_tensor_arg(),
            keys.clone().into_tensor_arg(),
            payload.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            classes,
            logits,
        ));
        (keys, payload)
    }

    fn calib_digit_counts(keys: CubeTensor, tiles: Tiles, shift: u32) -> CubeTensor {
        let keys = into_contiguous(keys);
        count_launch(tiles.n_segs * tiles.seg_len * 4);
        let words = tiles.n_segs * RADIX as usize * tiles.per_seg();
        let counts =
            zeros_client(keys.client.clone(), keys.device.clone(), Shape::new([words]), DType::U32);
        let (count, dim) = grid(tiles.count());
        launch!(k::digit_counts(
            &keys.client.clone(),
            count,
            dim,
            keys.into_tensor_arg(),
            counts.clone().into_tensor_arg(),
            tiles.count() as u32,
            tiles.seg_len as u32,
            tiles.per_seg() as u32,
            tiles.tile as u32,
            shift,
        ));
        counts
    }

    fn calib_exclusive_scan(words: CubeTensor) -> CubeTensor {
        let words = into_contiguous(words);
        let n = words.meta.shape()[0];
        let pieces = n.div_ceil(SCAN_PIECE).max(1);
        let sums = u32_words(&words, pieces);
        let client = words.client.clone();
        let (count, dim) = grid(pieces);
        count_launch(0);
        launch!(k::piece_sums(
            &client,
            count.clone(),
            dim,
            words.clone().into_tensor_arg(),
            sums.clone().into_tensor_arg(),
            n as u32,
            SCAN_PIECE as u32,
        ));
        count_launch(0);
        let (one, one_dim) = grid(1);
        launch!(k::scan_sums(&client, one, one_dim, sums.clone().into_tensor_arg(), pieces as u32));
        count_launch(0);
        launch!(k::scan_pieces(
            &client,
            count,
            dim,
            words.clone().into_tensor_arg(),
            sums.into_tensor_arg(),
            n as u32,
            SCAN_PIECE as u32,
        ));
        words
    }

    fn calib_digit_scatter(
        keys: CubeTensor,
        payload: CubeTensor,
        offsets: CubeTensor,
        tiles: Tiles,
        shift: u32,
    ) -> (CubeTensor, CubeTensor) {
        let (keys, payload) = (into_contiguous(keys), into_contiguous(payload));
        let n = keys.meta.shape()[0];
        count_launch(n * 8);
        let (out_keys, out_payload) = (u32_words(&keys, n), u32_words(&keys, n));
        let (count, dim) = grid(tiles.count());
        launch!(k::digit_scatter(
            &keys.client.clone(),
            count,
            dim,
            keys.into_tensor_arg(),
            payload.into_tensor_arg(),
            into_contiguous(offsets).into_tensor_arg(),
            out_keys.clone().into_tensor_arg(),
            out_payload.clone().into_tensor_arg(),
            tiles.count() as u32,
            tiles.seg_len as u32,
            tiles.per_seg() as u32,
            tiles.tile as u32,
            shift,
        ));
        (out_keys, out_payload)
    }
}
