//! The logistic maps' fit kernel ([`super::logistic_kernels`]) as a burn backend extension.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, backend_extension};
use burn::tensor::{DType, Shape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;

use super::launch::launch;
use super::logistic_kernels::{self as k, FIELDS};
use super::ops::grid;
use crate::engine::cost::count_launch;

/// The logistic sums kernel.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
#[allow(clippy::too_many_arguments)] // the rows, their pass, the labels, three tables
pub trait LogisticKernels: Backend {
    /// Every problem's sums per block of `block_rows` rows, `[blocks, C, FIELDS]`, of the
    /// scores `values` `[N, C]` (`rows`: the row pass's fields, for logits).
    fn calib_logistic_sums(
        values: FloatTensor<Self>,
        rows: FloatTensor<Self>,
        labels: IntTensor<Self>,
        spec: FloatTensor<Self>,
        params: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        block_rows: usize,
        logits: bool,
    ) -> FloatTensor<Self>;
}

impl LogisticKernels for Cube {
    fn calib_logistic_sums(
        values: CubeTensor,
        rows: CubeTensor,
        labels: CubeTensor,
        spec: CubeTensor,
        params: CubeTensor,
        targets: CubeTensor,
        block_rows: usize,
        logits: bool,
    ) -> CubeTensor {
        let values = into_contiguous(values);
        let (n, c) = (values.meta.shape()[0], values.meta.shape()[1]);
        count_launch(n * c * 4);
        let blocks = n.div_ceil(block_rows).max(1);
        let (client, device) = (values.client.clone(), values.device.clone());
        let shape = Shape::new([blocks, c, FIELDS]);
        let out = empty_device_dtype(client.clone(), device, shape, DType::F32);
        let (count, dim) = grid(blocks * c);
        launch!(k::logistic_sums(
            &client,
            count,
            dim,
            values.into_tensor_arg(),
            into_contiguous(rows).into_tensor_arg(),
            into_contiguous(labels).into_tensor_arg(),
            into_contiguous(spec).into_tensor_arg(),
            into_contiguous(params).into_tensor_arg(),
            into_contiguous(targets).into_tensor_arg(),
            out.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            block_rows as u32,
            blocks as u32,
            logits,
            c == 1,
        ));
        out
    }
}
