//! Ensemble temperature scaling's passes on the device ([`super::ensemble_kernels`]) as a
//! burn backend extension.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Cube, backend_extension};
use burn::tensor::{DType, Shape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;

use super::ensemble_kernels as k;
use super::launch::launch;
use super::ops::grid;
use crate::engine::cost::count_launch;

/// The ETS kernels: `[N, K]` f32 logits, their i32 labels and `[N]` row maxima in.
#[backend_extension(Cube: cfg(feature = "wgpu"))]
pub trait EnsembleKernels: Backend {
    /// Each row's terms of the temperature step's `(L', L'')` at `u = 1/t`, `[2, N]`; the
    /// MSE's where `mse`, else the NLL's.
    fn calib_ets_derivatives(
        values: FloatTensor<Self>,
        labels: IntTensor<Self>,
        max: FloatTensor<Self>,
        u: f32,
        mse: bool,
    ) -> FloatTensor<Self>;

    /// Each row's `[sum a^2, sum a b, sum b^2, a_y, b_y]` at `u`, `[5, N]`.
    fn calib_ets_mixture(
        values: FloatTensor<Self>,
        labels: IntTensor<Self>,
        max: FloatTensor<Self>,
        u: f32,
    ) -> FloatTensor<Self>;
}

impl EnsembleKernels for Cube {
    fn calib_ets_derivatives(
        values: CubeTensor,
        labels: CubeTensor,
        max: CubeTensor,
        u: f32,
        mse: bool,
    ) -> CubeTensor {
        let (values, labels, max) =
            (into_contiguous(values), into_contiguous(labels), into_contiguous(max));
        let (n, c) = (values.meta.shape()[0], values.meta.shape()[1]);
        // Two reads of the logits: the exponentials' sums, then the centred sums.
        count_launch(2 * n * c * 4);
        let (client, device) = (values.client.clone(), values.device.clone());
        let out = empty_device_dtype(client.clone(), device, Shape::new([2, n]), DType::F32);
        let (count, dim) = grid(n);
        launch!(k::ets_derivatives(
            &client,
            count,
            dim,
            values.into_tensor_arg(),
            labels.into_tensor_arg(),
            max.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            u,
            mse,
        ));
        out
    }

    fn calib_ets_mixture(
        values: CubeTensor,
        labels: CubeTensor,
        max: CubeTensor,
        u: f32,
    ) -> CubeTensor {
        let (values, labels, max) =
            (into_contiguous(values), into_contiguous(labels), into_contiguous(max));
        let (n, c) = (values.meta.shape()[0], values.meta.shape()[1]);
        count_launch(2 * n * c * 4);
        let (client, device) = (values.client.clone(), values.device.clone());
        let out = empty_device_dtype(client.clone(), device, Shape::new([5, n]), DType::F32);
        let (count, dim) = grid(n);
        launch!(k::ets_mixture(
            &client,
            count,
            dim,
            values.into_tensor_arg(),
            labels.into_tensor_arg(),
            max.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            u,
        ));
        out
    }
}
