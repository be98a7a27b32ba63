//! Histogram binning on the device ([`super::bin_kernels`]) as a burn backend extension.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, backend_extension};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;

use super::bin_kernels as k;
use super::launch::launch;
use super::ops::grid;
use super::sort_ops::{Tiles, f32_values, u32_words};
use crate::engine::cost::count_launch;

/// The binning kernels: u32 tensors in and out (the spread's values f32). A launch counts
/// the bytes it reads of the pairs' keys and payloads as score bytes.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
pub trait BinKernels: Backend {
    /// The pairs' hits as `n + 1` words (the last 0).
    fn calib_hit_words(payload: IntTensor<Self>) -> IntTensor<Self>;

    /// The order keys at the sorted places `at`.
    fn calib_key_gather(keys: IntTensor<Self>, at: IntTensor<Self>) -> IntTensor<Self>;

    /// Each segment's bin places and the positives before them (`[2 n_segs n_edges]`, from
    /// the scanned hits `prefix` and the edges' order keys `[n_segs n_edges]`).
    fn calib_bin_places(
        keys: IntTensor<Self>,
        prefix: IntTensor<Self>,
        edge_keys: IntTensor<Self>,
        tiles: Tiles,
    ) -> IntTensor<Self>;

    /// Each pair's bin value at its row's place, `[N n_segs]` f32.
    fn calib_bin_spread(
        keys: IntTensor<Self>,
        payload: IntTensor<Self>,
        places: IntTensor<Self>,
        tiles: Tiles,
        n_edges: usize,
    ) -> FloatTensor<Self>;
}

impl BinKernels for Cube {
    fn calib_hit_words(payload: CubeTensor) -> CubeTensor {
        let payload = into_contiguous(payload);
        let n = payload.meta.shape()[0];
        count_launch(n * 4);
        let hits = u32_words(&payload, n + 1);
        let (count, dim) = grid(n + 1);
        launch!(k::hit_words(
            &payload.client.clone(),
            count,
            dim,
            payload.into_tensor_arg(),
            hits.clone().into_tensor_arg(),
            n as u32,
        ));
        hits
    }

    fn calib_key_gather(keys: CubeTensor, at: CubeTensor) -> CubeTensor {
        let at = into_contiguous(at);
        let m = at.meta.shape()[0];
        count_launch(0);
        let out = u32_words(&at, m.max(1));
        let (count, dim) = grid(m);
        launch!(k::key_gather(
            &at.client.clone(),
            count,
            dim,
            into_contiguous(keys).into_tensor_arg(),
            at.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            m as u32,
        ));
        out
    }

    fn calib_bin_places(
        keys: CubeTensor,
        prefix: CubeTensor,
        edge_keys: CubeTensor,
        tiles: Tiles,
    ) -> CubeTensor {
        let edge_keys = into_contiguous(edge_keys);
        let q = edge_keys.meta.shape()[0];
        count_launch(0);
        let out = u32_words(&edge_keys, 2 * q);
        let (count, dim) = grid(q);
        launch!(k::bin_places(
            &edge_keys.client.clone(),
            count,
            dim,
            into_contiguous(keys).into_tensor_arg(),
            into_contiguous(prefix).into_tensor_arg(),
            edge_keys.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            tiles.n_segs as u32,
            tiles.seg_len as u32,
            (q / tiles.n_segs) as u32,
        ));
        out
    }

    fn calib_bin_spread(
        keys: CubeTensor,
        payload: CubeTensor,
        places: CubeTensor,
        tiles: Tiles,
        n_edges: usize,
    ) -> CubeTensor {
        let n = tiles.n_segs * tiles.seg_len;
        count_launch(n * 8);
        let (client, out) = (keys.client.clone(), f32_values(&keys, n));
        let (count, dim) = grid(n);
        launch!(k::bin_spread(
            &client,
            count,
            dim,
            into_contiguous(keys).into_tensor_arg(),
            into_contiguous(payload).into_tensor_arg(),
            into_contiguous(places).into_tensor_arg(),
            out.clone().into_tensor_arg(),
            tiles.n_segs as u32,
            tiles.seg_len as u32,
            n_edges as u32,
        ));
        out
    }
}
