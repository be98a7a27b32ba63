//! The binary maps of the current benchmarks (CIR, affine and quadratic logistic calibration
//! on the logit) against probmetrics and an independent f64 fit, and their properties.
//!
//! Expected values: `tests/fixtures/benchmark_maps.npz`, produced by
//! `python3 tests/fixtures/benchmark_maps.py` (probmetrics 1.3.0, cir-model 0.2.0,
//! scikit-learn 1.9.1, scipy 1.17.1). Calibration set: the top-label problem of the first 2000
//! val rows of `data/resnet110_cifar10-lt.npz`; calibrated: its first 1000 test rows.

mod common;

use calib::input::Predictions;
use calib::train::{
    AffineLogitScalingConfig, BayesianBinningConfig, BinStrategy, Calibrator,
    CdfSplineCalibrationConfig, CentredIsotonicRegressionConfig, Fit, QuadraticLogitScalingConfig,
    floored_logit,
};
use common::fixtures::{Fixture, binary, max_diff, multiclass, top_label_problem, values};

/// CIR equals cir_model's (as probmetrics wraps it), on binary scores and one-vs-rest; and
/// probmetrics' own output on the scores rounded to float32, as it rounds them.
#[test]
fn cir_equals_cir_model_and_probmetrics() {
    let mut fx = Fixture::open("benchmark_maps.npz");
    let (cal, test) = top_label_problem();
    let fitted = CentredIsotonicRegressionConfig::new().fit(&cal).unwrap();
    let d = max_diff(&values(&fitted.calibrator.calibrate(&test).unwrap()), &fx.f64s("cir_probs"));
    // scipy's interp1d and calib round the steep segments near 1 (slopes ~1e4) differently.
    assert!(d < 1e-10, "binary CIR vs cir_model: {d:e}");
    let round = |p: &Predictions| -> Predictions {
        let s = values(p).iter().map(|&v| f64::from(v as f32)).collect();
        binary(s, p.host_rows().unwrap().1.into_owned())
    };
    let fitted = CentredIsotonicRegressionConfig::new().fit(&round(&cal)).unwrap();
    let got = values(&fitted.calibrator.calibrate(&round(&test)).unwrap());
    let d = max_diff(&got, &fx.f64s("cir_probmetrics_probs"));
    assert!(d < 1e-6, "binary CIR on float32 scores vs probmetrics: {d:e}");
    let (cal, test) = multiclass();
    let fitted = CentredIsotonicRegressionConfig::new().fit(&cal).unwrap();
    let got = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&got, &fx.f64s("cir_ovr_probs"));
    assert!(d < 1e-10, "one-vs-rest CIR vs cir_model: {d:e}");
}

/// Strictly increasing between the first and last block centres, wherever its value is
/// inside (0, 1) (flat stretches stay only at the bounds).
#[test]
fn cir_is_strictly_increasing_inside_the_bounds() {
    let (cal, _) = top_label_problem();
    let fitted = CentredIsotonicRegressionConfig::new().fit(&cal).unwrap();
    let map = &fitted.calibrator.maps()[0];
    let (x, y) = map.points();
    assert!(x.windows(2).all(|w| w[0] < w[1]));
    for (w, v) in x.windows(2).zip(y.windows(2)) {
        if v[0] > 0.0 && v[1] < 1.0 && !(v[0] == v[1] && (w[0] == x[0] || w[1] == x[x.len() - 1])) {
            assert!(v[1] > v[0], "flat inside at {w:?}: {v:?}");
        }
    }
}

/// calib's Newton fit reaches the independent f64 optimum (coefficients to 1e-7, loss to
/// 1e-12); scikit-learn's lbfgs inside probmetrics stops at its tolerance 1e-4 with a loss
/// 1e-3 (affine) and 2e-3 (quadratic) higher, on the unscaled logits, whose test probabilities
/// are 0.035 and 0.060 from the optimum's.
#[test]
fn affine_and_quadratic_equal_the_maximum_likelihood_fit() {
    let mut fx = Fixture::open("benchmark_maps.npz");
    let (cal, test) = top_label_problem();
    let (s, o) = (values(&cal), cal.host_rows().unwrap().1.into_owned());
    let loss = |c: &[f64]| {
        let terms = s.iter().zip(&o).map(|(&s, &y)| {
            let z = floored_logit(s);
            let eta: f64 = c.iter().rev().fold(0.0, |acc, c| acc * z + c);
            let p = 1.0 / (1.0 + (-eta).exp());
            if y == 1 { -p.ln() } else { -(1.0 - p).ln() }
        });
        terms.sum::<f64>() / s.len() as f64
    };
    let affine = AffineLogitScalingConfig::new().fit(&cal).unwrap();
    let quadratic = QuadraticLogitScalingConfig::new().fit(&cal).unwrap();
    let fits = [
        (
            "affine",
            affine.calibrator.maps()[0].coefficients().to_vec(),
            affine.calibrator.calibrate(&test).unwrap(),
        ),
        (
            "quadratic",
            quadratic.calibrator.maps()[0].coefficients().to_vec(),
            quadratic.calibrator.calibrate(&test).unwrap(),
        ),
    ];
    for (name, c, calibrated) in fits {
        let reference = fx.f64s(&format!("{name}_reference"));
        assert!(max_diff(&c, &reference) < 1e-7, "{name}: {c:?} vs {reference:?}");
        let want = fx.f64s(&format!("{name}_reference_loss"))[0];
        assert!((loss(&c) - want).abs() < 1e-12, "{name}: {} vs {want}", loss(&c));
        let theirs = fx.f64s(&format!("{name}_loss"))[0];
        assert!(loss(&c) < theirs, "{name}: {} vs probmetrics' {theirs}", loss(&c));
        let d = max_diff(&values(&calibrated), &fx.f64s(&format!("{name}_probs")));
        assert!(d < 0.07, "{name} vs probmetrics: {d:e}");
    }
}

/// BBQ equals netcal's: binary and one-vs-rest (netcal 1.4 has no equal-mass variant). netcal
/// sums its log-likelihoods in float32 (torch), which moves the BIC weights by ~1e-6 relative.
#[test]
fn bbq_equals_netcal() {
    let mut fx = Fixture::open("benchmark_maps.npz");
    let (cal, test) = top_label_problem();
    let fitted = BayesianBinningConfig::new().fit(&cal).unwrap();
    let got = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&got, &fx.f64s("bbq_probs"));
    assert!(d < 1e-5, "binary BBQ vs netcal: {d:e}");
    // The paper's equal-mass bins: a different mixture, still a probability.
    let mass = BayesianBinningConfig::new().with_strategy(BinStrategy::Mass).fit(&cal).unwrap();
    let got = values(&mass.calibrator.calibrate(&test).unwrap());
    assert!(got.iter().all(|p| (0.0..=1.0).contains(p)));
    let (cal, test) = multiclass();
    let fitted = BayesianBinningConfig::new().fit(&cal).unwrap();
    let got = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&got, &fx.f64s("bbq_ovr_probs"));
    assert!(d < 1e-5, "one-vs-rest BBQ vs netcal: {d:e}");
}

/// The CDF spline equals probmetrics' fit run in f64, clipped to [0, 1]; probmetrics' own
/// output leaves [0, 1] near the ends of the scores, where its log-loss is NaN.
#[test]
fn cdf_spline_equals_probmetrics_clipped() {
    let mut fx = Fixture::open("benchmark_maps.npz");
    let (cal, test) = top_label_problem();
    let fitted = CdfSplineCalibrationConfig::new().fit(&cal).unwrap();
    let got = values(&fitted.calibrator.calibrate(&test).unwrap());
    let want: Vec<f64> = fx.f64s("cdf_probs").iter().map(|p| p.clamp(0.0, 1.0)).collect();
    let d = max_diff(&got, &want);
    assert!(d < 1e-10, "binary CDF spline vs probmetrics in f64: {d:e}");
    let (_, labels) = test.host_rows().unwrap();
    let log_loss = |p: &[f64]| {
        let terms = p
            .iter()
            .zip(labels.iter())
            .map(|(&p, &y)| if y == 1 { -p.ln() } else { -(1.0 - p).ln() });
        terms.sum::<f64>() / p.len() as f64
    };
    let theirs = fx.f64s("cdf_probmetrics_probs");
    assert!(theirs.iter().any(|p| !(0.0..=1.0).contains(p)) && log_loss(&theirs).is_nan());
    assert!(got.iter().all(|p| (0.0..=1.0).contains(p)) && !log_loss(&got).is_nan());
    let (cal, test) = multiclass();
    let fitted = CdfSplineCalibrationConfig::new().fit(&cal).unwrap();
    let got = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&got, &fx.f64s("cdf_ovr_probs"));
    assert!(d < 1e-10, "one-vs-rest CDF spline: {d:e}");
}
