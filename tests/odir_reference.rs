//! ODIR-regularised Dirichlet calibration and matrix scaling at fixed strengths equal
//! dirichletcal's (`tests/fixtures/odir.py`): the same objective, the same optimum.

mod common;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::{
    Calibrator, DirichletCalibrationConfig, Fit, MatrixScalingConfig, Regularisation,
};
use common::fixtures::{Fixture, max_diff, values};
use common::load_dump;

/// The first `n` rows of a DenseNet-40 CIFAR-10 split as f64 logits on flex.
fn rows(split: &str, n: usize) -> Predictions {
    let dump = load_dump("densenet40_cifar10.npz", split);
    let k = dump.n_classes;
    let logits: Vec<f64> = dump.logits[..n * k].iter().map(|&x| f64::from(x)).collect();
    let labels = dump.labels[..n].to_vec();
    Predictions::from_host_vec(
        logits,
        k,
        labels,
        InputConfig::new(ScoreKind::Logits),
        &Device::flex(),
    )
    .unwrap()
}

/// Softmax of calibrated logits, row by row.
fn probabilities(calibrated: &Predictions) -> Vec<f64> {
    let k = calibrated.n_columns();
    values(calibrated)
        .chunks_exact(k)
        .flat_map(|row| {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = row.iter().map(|z| (z - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}

#[test]
fn odir_fits_equal_dirichletcal() {
    let mut fx = Fixture::open("odir.npz");
    let (lambda, mu) = (fx.f64s("lambda")[0], fx.f64s("mu")[0]);
    let odir = Regularisation::Odir { lambda, mu };
    let (val, test) = (rows("val", 2000), rows("test", 1000));

    let dirichlet = DirichletCalibrationConfig::new().with_regularisation(odir).fit(&val).unwrap();
    let matrix = MatrixScalingConfig::new()
        .with_regularisation(odir)
        .with_underdetermined(None)
        .fit(&val)
        .unwrap();
    for (name, record, calibrated) in [
        ("dirichlet", &dirichlet.record, dirichlet.calibrator.calibrate(&test).unwrap()),
        ("matrix", &matrix.record, matrix.calibrator.calibrate(&test).unwrap()),
    ] {
        assert!(record.converged, "{name}: {record:?}");
        let want_loss = fx.f64s(&format!("{name}_loss"))[0];
        // calib's optimum is at least as low as the reference's, and the same point.
        assert!(
            record.final_loss <= want_loss + 1e-9,
            "{name}: {} vs {want_loss}",
            record.final_loss
        );
        let diff = max_diff(&probabilities(&calibrated), &fx.f64s(&format!("{name}_probs")));
        assert!(diff < 1e-6, "{name}: test probabilities differ by {diff}");
    }
}
