//! Sample weights in every fit of the registry: whole-number weights give the fit of the
//! repeated rows; weighted methods take fractional weights (and their scale does not matter);
//! the others refuse fractions with an error that names the method; calibrated predictions
//! keep their weights.

mod common;

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::synthetic::SplitMix64;
use calib::train::{FitAny, Method, SampleWeighting};
use common::fixtures::values;
use common::synthetic;

/// Binary scores (class 1's softmax probability) or 4-class logits, as f64 host rows.
fn rows(method: Method) -> (Vec<f64>, usize, Vec<i64>, ScoreKind) {
    if method == Method::Platt {
        let d = synthetic(300, 2, 7);
        let p: Vec<f64> =
            d.logits.chunks(2).map(|z| 1.0 / (1.0 + f64::from(z[0] - z[1]).exp())).collect();
        (p, 1, d.labels, ScoreKind::Binary)
    } else {
        let d = synthetic(300, 4, 3);
        (d.logits.iter().map(|&v| f64::from(v)).collect(), 4, d.labels, ScoreKind::Logits)
    }
}

fn preds(values: &[f64], width: usize, labels: &[i64], kind: ScoreKind) -> Predictions {
    Predictions::from_host(values, width, labels, InputConfig::new(kind), &Device::flex()).unwrap()
}

fn repeated(values: &[f64], width: usize, labels: &[i64], w: &[f64]) -> (Vec<f64>, Vec<i64>) {
    let (mut v, mut l) = (Vec::new(), Vec::new());
    for (i, &wi) in w.iter().enumerate() {
        for _ in 0..wi as usize {
            v.extend_from_slice(&values[i * width..(i + 1) * width]);
            l.push(labels[i]);
        }
    }
    (v, l)
}

fn weighting(config: &dyn FitAny) -> SampleWeighting {
    config.sample_weighting()
}

/// The property of the conventions, for every registered method.
#[test]
fn whole_number_weights_fit_as_repeated_rows() {
    let mut walked = 0;
    for method in Method::ALL {
        let Some(config) = method.default_config() else { continue };
        let (v, width, labels, kind) = rows(method);
        let mut rng = SplitMix64(5);
        let w: Vec<f64> = (0..labels.len()).map(|_| rng.below(4) as f64).collect();
        let weighted = preds(&v, width, &labels, kind).with_weights(w.clone()).unwrap();
        let (rv, rl) = repeated(&v, width, &labels, &w);
        let plain = preds(&rv, width, &rl, kind);
        let fit = |p: &Predictions| {
            config.fit_any(p, &mut |_| {}).unwrap_or_else(|e| panic!("{method}: {e}"))
        };
        let (a, b) = (fit(&weighted), fit(&plain));
        let test = preds(&v, width, &labels, kind);
        let (a, b) = (
            values(&a.calibrator.calibrate(&test).unwrap()),
            values(&b.calibrator.calibrate(&test).unwrap()),
        );
        // Searches that hold rows out hold a row out with all its weight, where the repeated
        // rows hold out one copy (docs/conventions.md): LCE's bandwidth, the cross-validated
        // penalties of Dirichlet and the spline; `held_out_rows_keep_their_weight` below.
        if matches!(method, Method::Lce | Method::Dirichlet | Method::Spline) {
            walked += 1;
            continue;
        }
        let diff = common::fixtures::max_diff(&a, &b);
        // Repeated methods fit the very same rows; weighted ones sum in another order and
        // stop at their tolerances.
        let tol = match weighting(config.as_ref()) {
            SampleWeighting::Repeated => 0.0,
            SampleWeighting::Weighted => 1e-6,
        };
        assert!(diff <= tol, "{method}: {diff}");
        walked += 1;
    }
    assert_eq!(walked, 21, "the registry's calibrators");
}

/// Fractional weights: a weighted method fits them, and weights scaled by a constant give
/// the same map (but for SMS, SVS and Platt, which read weights as counts); a method
/// fitted on repeated rows refuses them, naming itself.
#[test]
fn fractional_weights_fit_weighted_methods_and_are_refused_by_the_others() {
    let mut weighted_methods = Vec::new();
    for method in Method::ALL {
        let Some(config) = method.default_config() else { continue };
        let (v, width, labels, kind) = rows(method);
        let mut rng = SplitMix64(9);
        let w: Vec<f64> = (0..labels.len()).map(|_| 0.2 + rng.uniform()).collect();
        let test = preds(&v, width, &labels, kind);
        let with = |scale: f64| {
            let w = w.iter().map(|x| x * scale).collect();
            preds(&v, width, &labels, kind).with_weights(w).unwrap()
        };
        match weighting(config.as_ref()) {
            SampleWeighting::Weighted => {
                let a = config.fit_any(&with(1.0), &mut |_| {}).unwrap();
                let b = config.fit_any(&with(2.5), &mut |_| {}).unwrap();
                let a = values(&a.calibrator.calibrate(&test).unwrap());
                let b = values(&b.calibrator.calibrate(&test).unwrap());
                // Some read weights as counts: SMS and SVS the total as N (ridge strengths,
                // mixture), Platt's targets the positives' and negatives' weights, the kernel's
                // bandwidth rule and BBQ's bin counts and BIC the total, Venn-ABERS adds a
                // test point of weight 1, the spline and LCE a prior of fixed weight, and the
                // CDF spline cuts rows into unit copies.
                let counts = [
                    Method::Sms,
                    Method::Svs,
                    Method::Platt,
                    Method::Kernel,
                    Method::Bbq,
                    Method::VennAbers,
                    Method::Spline,
                    Method::CdfSpline,
                    Method::Lce,
                ];
                if !counts.contains(&method) {
                    assert!(common::fixtures::max_diff(&a, &b) < 1e-8, "{method}");
                }
                weighted_methods.push(method);
            }
            SampleWeighting::Repeated => {
                let e = config.fit_any(&with(1.0), &mut |_| {}).unwrap_err().to_string();
                let says = format!("calibrator `{method}` takes whole-number sample weights only");
                assert!(e.contains(&says), "{method}: {e}");
            }
        }
    }
    for m in [
        Method::Temperature,
        Method::Isotonic,
        Method::Cir,
        Method::Affine,
        Method::Quadratic,
        Method::Beta,
        Method::Histogram,
        Method::Bbq,
        Method::Kernel,
        Method::Dirichlet,
        Method::ScalingBinning,
        Method::VennAbers,
        Method::Spline,
        Method::CdfSpline,
        Method::Lce,
    ] {
        assert!(weighted_methods.contains(&m), "{m} weighs rows");
    }
}

/// The ECE-optimised temperature (outside the registry's defaults: its metric is a choice)
/// weighs rows: whole-number weights find the repeated rows' temperature, for a static-bin
/// metric (its fast path) and an adaptive one (the engine's weighted ranges); fractions fit.
#[test]
fn ece_temperature_weighs_rows() {
    use calib::Metric;
    use calib::train::{EceTemperatureConfig, Fit};
    let (v, width, labels, kind) = rows(Method::Temperature);
    let mut rng = SplitMix64(11);
    let w: Vec<f64> = (0..labels.len()).map(|_| rng.below(4) as f64).collect();
    let (rv, rl) = repeated(&v, width, &labels, &w);
    let weighted = preds(&v, width, &labels, kind).with_weights(w).unwrap();
    let plain = preds(&rv, width, &rl, kind);
    for metric in [Metric::Ece, Metric::Ace] {
        let config = EceTemperatureConfig::new().with_metric(metric);
        let t = |p: &Predictions| config.fit(p).unwrap().record.search.unwrap().temperature;
        let (a, b) = (t(&weighted), t(&plain));
        assert!((a - b).abs() <= 1e-9 * b, "{metric:?}: {a} vs {b}");
    }
    let fractions: Vec<f64> = (0..labels.len()).map(|_| 0.2 + rng.uniform()).collect();
    let fractional = preds(&v, width, &labels, kind).with_weights(fractions).unwrap();
    let t = EceTemperatureConfig::new().fit(&fractional).unwrap().record.search.unwrap();
    assert!((0.05..=20.0).contains(&t.temperature), "{}", t.temperature);
}

/// LCE: whole-number weights give the repeated rows' map at a given bandwidth and by
/// Silverman's rule; a constant weight keeps the unweighted leave-one-out map, where the
/// repeated rows' copies would choose a memorising bandwidth.
#[test]
fn lce_weighs_rows() {
    use calib::train::{BandwidthRule, Calibrator, Fit, LceCalibrationConfig};
    let (v, width, labels, kind) = rows(Method::Lce);
    let mut rng = SplitMix64(13);
    let w: Vec<f64> = (0..labels.len()).map(|_| rng.below(4) as f64).collect();
    let (rv, rl) = repeated(&v, width, &labels, &w);
    let weighted = preds(&v, width, &labels, kind).with_weights(w).unwrap();
    let plain = preds(&rv, width, &rl, kind);
    let test = preds(&v, width, &labels, kind);
    let apply = |c: &LceCalibrationConfig, p: &Predictions| {
        values(&c.fit(p).unwrap().calibrator.calibrate(&test).unwrap())
    };
    for config in [
        LceCalibrationConfig::new().with_bandwidth(Some(0.3)),
        LceCalibrationConfig::new().with_bandwidth_rule(BandwidthRule::Silverman),
    ] {
        let diff = common::fixtures::max_diff(&apply(&config, &weighted), &apply(&config, &plain));
        assert!(diff <= 1e-9, "{config:?}: {diff}");
    }
    let loo = LceCalibrationConfig::new();
    let twice = preds(&v, width, &labels, kind).with_weights(vec![2.0; labels.len()]).unwrap();
    let diff = common::fixtures::max_diff(&apply(&loo, &twice), &apply(&loo, &test));
    assert!(diff < 1e-2, "a constant weight 2 moves the map by {diff}");
}

/// Dirichlet holds rows out whole in its cross-validation: a constant weight chooses the
/// unweighted penalty; whole-number weights give the repeated rows' fit at a given penalty.
/// (The spline does too, but its unity prior's fixed weight makes a constant weight count.)
#[test]
fn held_out_rows_keep_their_weight() {
    use calib::train::{Calibrator, DirichletCalibrationConfig, Fit, Regularisation};
    let (v, width, labels, kind) = rows(Method::Dirichlet);
    let test = preds(&v, width, &labels, kind);
    let cross_validated = DirichletCalibrationConfig::new();
    let fit = |p: &Predictions| {
        values(&cross_validated.fit(p).unwrap().calibrator.calibrate(&test).unwrap())
    };
    let twice = preds(&v, width, &labels, kind).with_weights(vec![2.0; labels.len()]).unwrap();
    let diff = common::fixtures::max_diff(&fit(&twice), &fit(&test));
    assert!(diff <= 1e-6, "a constant weight 2 moves the cross-validated fit by {diff}");
    let mut rng = SplitMix64(17);
    let w: Vec<f64> = (0..labels.len()).map(|_| rng.below(4) as f64).collect();
    let (rv, rl) = repeated(&v, width, &labels, &w);
    let weighted = preds(&v, width, &labels, kind).with_weights(w).unwrap();
    let plain = preds(&rv, width, &rl, kind);
    let test = preds(&v, width, &labels, kind);
    let odir = Regularisation::Odir { lambda: 1e-3, mu: 1e-3 };
    let dirichlet = DirichletCalibrationConfig::new().with_regularisation(odir);
    let apply =
        |p: &Predictions| values(&dirichlet.fit(p).unwrap().calibrator.calibrate(&test).unwrap());
    let diff = common::fixtures::max_diff(&apply(&weighted), &apply(&plain));
    assert!(diff <= 1e-6, "dirichlet at a fixed penalty: {diff}");
}

/// A zero weight removes its row from a weighted fit, and calibrated predictions carry the
/// weights of the rows they calibrate.
#[test]
fn zero_weights_drop_rows_and_calibration_keeps_weights() {
    let (v, width, labels, kind) = rows(Method::Isotonic);
    let w: Vec<f64> = (0..labels.len()).map(|i| f64::from(u8::from(i % 4 != 0))).collect();
    let config = Method::Isotonic.default_config().unwrap();
    let weighted = preds(&v, width, &labels, kind).with_weights(w.clone()).unwrap();
    let (rv, rl) = repeated(&v, width, &labels, &w);
    let a = config.fit_any(&weighted, &mut |_| {}).unwrap();
    let b = config.fit_any(&preds(&rv, width, &rl, kind), &mut |_| {}).unwrap();
    let calibrated = a.calibrator.calibrate(&weighted).unwrap();
    assert_eq!(calibrated.weights().map(|w| w.values().to_vec()), Some(w));
    let test = preds(&v, width, &labels, kind);
    let (a, b) = (
        values(&a.calibrator.calibrate(&test).unwrap()),
        values(&b.calibrator.calibrate(&test).unwrap()),
    );
    assert!(common::fixtures::max_diff(&a, &b) < 1e-12);
}

/// On a GPU device weighted rows skip the device passes and take burn autodiff, which
/// weighs them: whole numbers give the fit of the repeated rows (to f32 and the two solvers'
/// tolerances), fractions fit too.
#[test]
fn scaling_fits_on_a_gpu_weigh_rows_through_autodiff() {
    for (name, device) in common::devices() {
        if name != "wgpu" {
            continue;
        }
        let (v, width, labels, kind) = rows(Method::Vector);
        let config = Method::Vector.default_config().unwrap();
        let on = |v: &[f64], labels: &[i64]| {
            Predictions::from_host(v, width, labels, InputConfig::new(kind), &device).unwrap()
        };
        let whole: Vec<f64> = (0..labels.len()).map(|i| (i % 3) as f64).collect();
        let weighted = on(&v, &labels).with_weights(whole.clone()).unwrap();
        let (rv, rl) = repeated(&v, width, &labels, &whole);
        let a = config.fit_any(&weighted, &mut |_| {}).unwrap();
        let b = config.fit_any(&on(&rv, &rl), &mut |_| {}).unwrap();
        let test = preds(&v, width, &labels, kind);
        let (a, b) = (
            values(&a.calibrator.calibrate(&test).unwrap()),
            values(&b.calibrator.calibrate(&test).unwrap()),
        );
        let diff = common::fixtures::max_diff(&a, &b);
        assert!(diff < 1e-3, "weighted autodiff vs repeated device passes: {diff}");
        let half = on(&v, &labels).with_weights(vec![0.5; labels.len()]).unwrap();
        config.fit_any(&half, &mut |_| {}).unwrap();
    }
}
