//! Pool-adjacent-violators on the device ([`super::pav_kernels`]) as a burn backend
//! extension.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, backend_extension};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;

use super::launch::launch;
use super::ops::grid;
use super::pav_kernels as k;
use super::sort_ops::{Tiles, f32_values, u32_words};
use crate::engine::cost::count_launch;

/// The PAV kernels: u32 tensors in and out (the spread's values f32). A launch counts the
/// bytes it reads of the pairs' keys and payloads as score bytes.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
#[allow(clippy::type_complexity)] // level one's five tensors
pub trait PavKernels: Backend {
    /// Level one: each tile's pooled blocks over its items (each block's first item,
    /// positives and last run's first item), the tiles' first run starts and block counts.
    fn calib_pav_tiles(
        keys: IntTensor<Self>,
        payload: IntTensor<Self>,
        tiles: Tiles,
        tie: f32,
    ) -> (IntTensor<Self>, IntTensor<Self>, IntTensor<Self>, IntTensor<Self>, IntTensor<Self>);

    /// Level two, in place (the three block tensors, written over): each segment's pooled
    /// blocks from its start; returns their number and the segment's positives
    /// (`[2 n_segs]`).
    fn calib_pav_merge(
        starts: IntTensor<Self>,
        sums: IntTensor<Self>,
        lasts: IntTensor<Self>,
        tile_first: IntTensor<Self>,
        tile_blocks: IntTensor<Self>,
        tiles: Tiles,
    ) -> IntTensor<Self>;

    /// The final blocks, `[4 total]`: count, positives, first and last key of each, segment
    /// by segment (`offsets`: `n_segs + 1` words, each segment's first block); with
    /// `means`, `[5 total]`: a fifth word, the f32 bits of the block's mean score less its
    /// first (points of runs tied within `tie` at the run's first score).
    #[allow(clippy::too_many_arguments)] // the blocks' four tensors, the layout, the tie
    fn calib_block_gather(
        keys: IntTensor<Self>,
        starts: IntTensor<Self>,
        sums: IntTensor<Self>,
        lasts: IntTensor<Self>,
        offsets: IntTensor<Self>,
        tiles: Tiles,
        total: usize,
        means: Option<f32>,
    ) -> IntTensor<Self>;

    /// Each pair's fitted value at its row's place, `[N n_segs]` f32.
    fn calib_block_spread(
        keys: IntTensor<Self>,
        payload: IntTensor<Self>,
        starts: IntTensor<Self>,
        sums: IntTensor<Self>,
        lasts: IntTensor<Self>,
        n_final: IntTensor<Self>,
        tiles: Tiles,
    ) -> FloatTensor<Self>;
}

impl PavKernels for Cube {
    fn calib_pav_tiles(
        keys: CubeTensor,
        payload: CubeTensor,
        tiles: Tiles,
        tie: f32,
    ) -> (CubeTensor, CubeTensor, CubeTensor, CubeTensor, CubeTensor) {
        let (keys, payload) = (into_contiguous(keys), into_contiguous(payload));
        let n = keys.meta.shape()[0];
        count_launch(n * 8);
        let (starts, sums, lasts) = (u32_words(&keys, n), u32_words(&keys, n), u32_words(&keys, n));
        let (first, blocks) = (u32_words(&keys, tiles.count()), u32_words(&keys, tiles.count()));
        let (count, dim) = grid(tiles.count());
        launch!(k::pav_tiles(
            &keys.client.clone(),
            count,
            dim,
            keys.into_tensor_arg(),
            payload.into_tensor_arg(),
            starts.clone().into_tensor_arg(),
            sums.clone().into_tensor_arg(),
            lasts.clone().into_tensor_arg(),
            first.clone().into_tensor_arg(),
            blocks.clone().into_tensor_arg(),
            tiles.count() as u32,
            tiles.seg_len as u32,
            tiles.per_seg() as u32,
            tiles.tile as u32,
            tie,
        ));
        (starts, sums, lasts, first, blocks)
    }

    fn calib_pav_merge(
        starts: CubeTensor,
        sums: CubeTensor,
        lasts: CubeTensor,
        tile_first: CubeTensor,
        tile_blocks: CubeTensor,
        tiles: Tiles,
    ) -> CubeTensor {
        count_launch(0);
        let n_final = u32_words(&starts, 2 * tiles.n_segs);
        let (count, dim) = grid(tiles.n_segs);
        launch!(k::pav_merge(
            &starts.client.clone(),
            count,
            dim,
            starts.into_tensor_arg(),
            sums.into_tensor_arg(),
            lasts.into_tensor_arg(),
            into_contiguous(tile_first).into_tensor_arg(),
            into_contiguous(tile_blocks).into_tensor_arg(),
            n_final.clone().into_tensor_arg(),
            tiles.n_segs as u32,
            tiles.seg_len as u32,
            tiles.per_seg() as u32,
        ));
        n_final
    }

    fn calib_block_gather(
        keys: CubeTensor,
        starts: CubeTensor,
        sums: CubeTensor,
        lasts: CubeTensor,
        offsets: CubeTensor,
        tiles: Tiles,
        total: usize,
        means: Option<f32>,
    ) -> CubeTensor {
        // The means read each block's keys: one read of the pairs' keys in all.
        count_launch(if means.is_some() { tiles.n_segs * tiles.seg_len * 4 } else { 0 });
        let stride = if means.is_some() { 5 } else { 4 };
        let out = u32_words(&keys, stride * total.max(1));
        let (count, dim) = grid(total);
        launch!(k::block_gather(
            &keys.client.clone(),
            count,
            dim,
            into_contiguous(keys).into_tensor_arg(),
            starts.into_tensor_arg(),
            sums.into_tensor_arg(),
            lasts.into_tensor_arg(),
            into_contiguous(offsets).into_tensor_arg(),
            out.clone().into_tensor_arg(),
            tiles.n_segs as u32,
            tiles.seg_len as u32,
            means.unwrap_or(0.0),
            means.is_some(),
        ));
        out
    }

    fn calib_block_spread(
        keys: CubeTensor,
        payload: CubeTensor,
        starts: CubeTensor,
        sums: CubeTensor,
        lasts: CubeTensor,
        n_final: CubeTensor,
        tiles: Tiles,
    ) -> CubeTensor {
        let n = tiles.n_segs * tiles.seg_len;
        count_launch(n * 8);
        let (client, out) = (keys.client.clone(), f32_values(&keys, n));
        let (count, dim) = grid(n);
        launch!(k::block_spread(
            &client,
            count,
            dim,
            into_contiguous(keys).into_tensor_arg(),
            into_contiguous(payload).into_tensor_arg(),
            starts.into_tensor_arg(),
            sums.into_tensor_arg(),
            lasts.into_tensor_arg(),
            n_final.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            tiles.n_segs as u32,
            tiles.seg_len as u32,
        ));
        out
    }
}
