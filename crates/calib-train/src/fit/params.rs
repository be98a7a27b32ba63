//! Flat views of a module's float parameters and gradients (host reads and re-registration).

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData, Transaction};

use crate::error::{FitError, Result};

/// Each float parameter of `module`, flattened to `[numel]`, in visit order.
pub(crate) fn flat_params<M: Module>(module: &M) -> Vec<(ParamId, Tensor<1>)> {
    struct Collect(Vec<(ParamId, Tensor<1>)>);
    impl ModuleVisitor for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let t = param.val();
            let n = t.shape().num_elements();
            self.0.push((param.id, t.reshape([n])));
        }
    }
    let mut c = Collect(Vec::new());
    module.visit(&mut c);
    c.0
}

/// The gradient of each float parameter of `module` in `grads`, flattened, in visit order.
pub(crate) fn flat_grads<M: Module>(
    module: &M,
    grads: &GradientsParams,
) -> Vec<(ParamId, Tensor<1>)> {
    struct Collect<'a>(&'a GradientsParams, Vec<(ParamId, Tensor<1>)>);
    impl ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.0.get::<D>(param.id) {
                let n = g.shape().num_elements();
                self.1.push((param.id, g.reshape([n])));
            }
        }
    }
    let mut c = Collect(grads, Vec::new());
    module.visit(&mut c);
    c.1
}

/// Rebuilds a [`GradientsParams`] for `module` from flattened gradients, times `scale`.
pub(crate) fn regrad<M: Module>(
    module: &M,
    flat: &[(ParamId, Tensor<1>)],
    scale: f64,
) -> GradientsParams {
    struct Build<'a>(&'a [(ParamId, Tensor<1>)], GradientsParams, f64);
    impl ModuleVisitor for Build<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some((_, g)) = self.0.iter().find(|(id, _)| *id == param.id) {
                let shape = param.val().shape();
                self.1.register::<D>(param.id, g.clone().mul_scalar(self.2).reshape(shape));
            }
        }
    }
    let mut b = Build(flat, GradientsParams::new(), scale);
    module.visit(&mut b);
    b.1
}

/// Reads tensors back in one transaction, each as f64 values.
pub(crate) fn read_all(tensors: Vec<Tensor<1>>) -> Result<Vec<Vec<f64>>> {
    let mut tx = Transaction::default();
    for t in tensors {
        tx = tx.register(t.without_autodiff());
    }
    let data = calib_core::engine::read_back(tx).map_err(|e| FitError::Backend(e.to_string()))?;
    data.into_iter().map(to_f64).collect()
}

/// A tensor's data as f64 values.
pub(crate) fn to_f64(data: TensorData) -> Result<Vec<f64>> {
    data.convert::<f64>()
        .try_into_vec::<f64>()
        .map_err(|e| FitError::Backend(format!("cannot read values back: {e:?}")))
}

/// `module` with its float parameters replaced by `flat` (concatenated in visit order, as
/// [`flat_params`] lists them), on the same device and in the same float type.
pub(crate) fn load_flat<M: Module>(module: &M, flat: &[f64]) -> M {
    struct Load<'a>(&'a [f64], usize);
    impl ModuleMapper for Load<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            param.map(|old| {
                let shape = old.shape();
                let n = shape.num_elements();
                let values = self.0[self.1..self.1 + n].to_vec();
                self.1 += n;
                let data = TensorData::new(values, shape);
                let fresh = Tensor::<D>::from_data(data, (&old.device(), old.dtype()));
                fresh.set_require_grad(old.is_require_grad())
            })
        }
    }
    let mut load = Load(flat, 0);
    let out = module.clone().map(&mut load);
    assert_eq!(load.1, flat.len(), "parameter count");
    out
}
