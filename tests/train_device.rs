//! Vector, matrix and Dirichlet fits whose passes stay on the device (`FitEngine::Device`:
//! objective, gradient and Hessian diagonal as tensor ops, the host L-BFGS) reach the host
//! engine's f64 optimum on every compiled-in backend, in f32.

mod common;

use calib::burn::tensor::Device;
use calib::engine::DeviceCost;
use calib::input::Predictions;
use calib::train::{
    DirichletCalibrationConfig, Fit, FitConfig, FitEngine, FitRecord, MatrixScalingConfig,
    Regularisation, VectorScalingConfig,
};
use calib::{Engine, Precision};
use common::{devices, load_dump};

/// The vector, matrix (ODIR) and Dirichlet (ODIR) fits of `preds` under `fit`.
fn fits(preds: &Predictions, fit: FitConfig) -> Vec<(&'static str, FitRecord)> {
    let odir = Regularisation::Odir { lambda: 1e-2, mu: 1e-2 };
    vec![
        ("vector", VectorScalingConfig::new().with_fit(fit.clone()).fit(preds).unwrap().record),
        (
            "matrix",
            MatrixScalingConfig::new()
                .with_regularisation(odir)
                .with_fit(fit.clone())
                .fit(preds)
                .unwrap()
                .record,
        ),
        (
            "dirichlet",
            DirichletCalibrationConfig::new()
                .with_regularisation(odir)
                .with_fit(fit)
                .fit(preds)
                .unwrap()
                .record,
        ),
    ]
}

#[test]
fn device_fits_reach_the_host_optimum_on_every_backend() {
    let val = load_dump("densenet40_cifar10.npz", "val");
    let host = fits(&val.host_on(&Device::flex()), FitConfig::new().with_engine(Engine::Fused));
    for (name, device) in devices() {
        let f32_fit = FitConfig::new().with_precision(Precision::F32);
        for ((method, fit), (_, reference)) in
            fits(&val.on(&device), f32_fit).into_iter().zip(&host)
        {
            assert_eq!(fit.engine, FitEngine::Device, "{name} {method}");
            assert!(fit.converged, "{name} {method}: {fit:?}");
            // The f32 gradient tolerance (1e-5, max-norm) leaves matrix scaling up to ~4e-6
            // (relative) above the optimum; runs that go on stop within ~1e-7 of it.
            let (a, b) = (fit.final_loss, reference.final_loss);
            assert!(a >= b * (1.0 - 1e-7) && a <= b * (1.0 + 1e-5), "{name} {method}: {a} vs {b}");
        }
    }
}

/// `Engine::Tensor` keeps the autodiff reference; soft targets and Adam also stay there.
#[test]
fn the_tensor_engine_keeps_autodiff() {
    let val = load_dump("densenet40_cifar10.npz", "val").on(&Device::flex());
    let fit = FitConfig::new().with_precision(Precision::F32).with_engine(Engine::Tensor);
    let record = VectorScalingConfig::new().with_fit(fit).fit(&val).unwrap().record;
    assert_eq!(record.engine, FitEngine::Autodiff);
}

/// What a device fit costs (counted, `DeviceCost`): one host synchronisation per evaluation of
/// the objective (the line search's trial points, usually one an iteration; the Jacobi
/// scaling's refresh every 20 iterations rides on the evaluation of its point), plus one for
/// the screen of the features' Gram matrix (an unpenalised map's flat directions); each reads
/// back sums and the rows' NLLs, never the rows.
#[test]
fn a_device_fit_synchronises_once_per_evaluation() {
    let val = load_dump("densenet40_cifar10.npz", "val");
    let (n, k) = (val.n_samples(), val.n_classes);
    let preds = val.on(&Device::flex());
    let fit = FitConfig::new().with_precision(Precision::F32);
    let vector = VectorScalingConfig::new().with_fit(fit);
    let (fitted, cost) = DeviceCost::measure(|| vector.fit(&preds).unwrap());
    let r = fitted.record;
    assert_eq!(r.engine, FitEngine::Device);
    assert_eq!(cost.syncs, r.evaluations as u64 + 1, "{cost:?} {r:?}");
    assert!(r.evaluations <= r.iterations * 5 / 4 + 1, "{r:?}");
    assert!(cost.read_back_bytes <= cost.syncs * ((n + 2 * k) * 4) as u64, "{cost:?}");
}
