//! ODIR-regularised Dirichlet calibration and matrix scaling at fixed strengths equal
//! dirichletcal's (`tests/fixtures/odir.py`): the same objective, the same optimum.

mod common;

use calib::train::{
    Calibrator, DirichletCalibrationConfig, Fit, MatrixScalingConfig, Regularisation,
};
use common::fixtures::{Fixture, logit_rows, max_diff, softmax_rows};

#[test]
fn odir_fits_equal_dirichletcal() {
    let mut fx = Fixture::open("odir.npz");
    let (lambda, mu) = (fx.f64s("lambda")[0], fx.f64s("mu")[0]);
    let odir = Regularisation::Odir { lambda, mu };
    let (val, test) = (
        logit_rows("densenet40_cifar10.npz", "val", 2000),
        logit_rows("densenet40_cifar10.npz", "test", 1000),
    );

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
        let diff = max_diff(&softmax_rows(&calibrated), &fx.f64s(&format!("{name}_probs")));
        assert!(diff < 1e-6, "{name}: test probabilities differ by {diff}");
    }
}
