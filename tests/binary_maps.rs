//! Isotonic regression, histogram binning, beta and top-label calibration against their peer
//! references on a real dump, their properties, save/load and bad input.
//!
//! Expected values: `tests/fixtures/binary_maps.npz`, produced by
//! `python3 tests/fixtures/binary_maps.py` (scikit-learn 1.9.1, betacal 1.1.0, scipy 1.17.1;
//! the script states what each array is), and `tests/fixtures/venn_abers.npz`, produced by
//! `python3 tests/fixtures/venn_abers.py` (mapie 1.6.0). Calibration set: the first 2000 val rows of
//! `data/resnet110_cifar10-lt.npz`; calibrated: its first 1000 test rows.

mod common;

use common::fixtures::{Fixture, argmax, binary, max_diff, probs, top_label_problem, values};

use calib::burn::tensor::Device;
use calib::input::Predictions;
use calib::train::{
    AnyCalibrator, BandwidthRule, BetaCalibrationConfig, BetaForm, BinStrategy, BinaryMap,
    Calibrator, Fit, FitError, HistogramBinningConfig, IsotonicRegressionConfig, Kernel,
    LceCalibrationConfig, PlattMapConfig, Reduction, SavedCalibrator, Scale, ScalingBinningConfig,
    SplineCalibrationConfig, VennAbersConfig,
};
use proptest::prelude::*;

#[test]
fn isotonic_equals_scikit_learn_on_binary_scores() {
    let mut fx = Fixture::open("binary_maps.npz");
    let (cal, test) = top_label_problem();
    let fitted = IsotonicRegressionConfig::new().fit(&cal).unwrap();
    let (x, y) = fitted.calibrator.maps()[0].thresholds();
    assert!(max_diff(x, &fx.f64s("isotonic_binary_x")) == 0.0, "thresholds differ");
    assert!(max_diff(y, &fx.f64s("isotonic_binary_y")) < 1e-12);
    let out = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&out, &fx.f64s("isotonic_binary"));
    assert!(d < 1e-12, "isotonic vs IsotonicRegression(out_of_bounds='clip'): {d:e}");
}

#[test]
fn isotonic_one_vs_rest_equals_calibrated_classifier_cv() {
    let mut fx = Fixture::open("binary_maps.npz");
    let cal = probs(fx.f64s("cal_probs"), 10, fx.i64s("cal_labels"));
    let test = probs(fx.f64s("test_probs"), 10, fx.i64s("test_labels"));
    let fitted = IsotonicRegressionConfig::new().fit(&cal).unwrap();
    let out = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&out, &fx.f64s("isotonic_ovr"));
    assert!(d < 1e-12, "one-vs-rest isotonic vs CalibratedClassifierCV: {d:e}");
}

/// Two columns take the binary path on column 1, as scikit-learn does.
#[test]
fn two_columns_equal_the_binary_path() {
    let mut fx = Fixture::open("binary_maps.npz");
    let two = fx.f64s("two_columns");
    let y2: Vec<i64> = fx.i64s("cal_labels").iter().map(|&y| i64::from(y == 0)).collect();
    let cal = probs(two[..4000].to_vec(), 2, y2.clone());
    let test = probs(two[4000..].to_vec(), 2, vec![0; 1000]);
    let fitted = IsotonicRegressionConfig::new().fit(&cal).unwrap();
    let out = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&out, &fx.f64s("isotonic_two_columns"));
    assert!(d < 1e-12, "K = 2 vs CalibratedClassifierCV: {d:e}");
    // And equal to the binary fit on column 1.
    let col1 = |v: &[f64]| v.chunks_exact(2).map(|r| r[1]).collect::<Vec<_>>();
    let bin = IsotonicRegressionConfig::new().fit(&binary(col1(&two[..4000]), y2)).unwrap();
    let want =
        values(&bin.calibrator.calibrate(&binary(col1(&two[4000..]), vec![0; 1000])).unwrap());
    assert_eq!(col1(&out), want);
}

/// Venn-ABERS equals MAPIE's `VennAbersCalibrator` (inductive, prefit) to 1e-9: the merged
/// probability and the multiprobability pair.
#[test]
fn venn_abers_equals_mapie() {
    let (cal, test) = top_label_problem();
    let mut va = Fixture::open("venn_abers.npz");
    let fitted = VennAbersConfig::new().fit(&cal).unwrap();
    let out = values(&fitted.calibrator.calibrate(&test).unwrap());
    let d = max_diff(&out, &va.f64s("merged"));
    assert!(d < 1e-9, "venn-abers vs MAPIE: {d:e}");
    let map = &fitted.calibrator.maps()[0];
    let (p0, p1) = (va.f64s("p0"), va.f64s("p1"));
    for (i, s) in values(&test).into_iter().enumerate() {
        let [a, b] = map.interval(s);
        assert!((a - p0[i]).abs() < 1e-9 && (b - p1[i]).abs() < 1e-9, "row {i}: [{a}, {b}]");
        assert!(a <= out[i] && out[i] <= b + 1e-12, "row {i}: merged outside [p0, p1]");
    }
}

/// LCE calibration equals a plain f64 Nadaraya-Watson loop (no cut-off, reflections at 0 and
/// 1) at every test score, for both kernels; Silverman's bandwidth equals numpy's.
#[test]
fn lce_equals_the_kernel_reliability_curve() {
    let (cal, test) = top_label_problem();
    let s = values(&cal);
    let y: Vec<f64> = cal.host_rows().unwrap().1.iter().map(|&v| v as f64).collect();
    // python3 -c "import numpy as np; d=np.load('tests/fixtures/binary_maps.npz');
    //   s=d['cal_probs'].max(1); q75,q25=np.percentile(s,[75,25]);
    //   print(0.9*min(s.std(ddof=1),(q75-q25)/1.34)*len(s)**-0.2)"
    let numpy_h = 0.0016825596087978606;
    assert!((calib::train::silverman_bandwidth(&s) - numpy_h).abs() < 1e-15);
    for (kernel, h) in [(Kernel::Gaussian, None), (Kernel::Triweight, Some(0.05))] {
        // The poster's estimate: the scores reflected at 0 and 1, Silverman's bandwidth, no prior.
        let fitted = LceCalibrationConfig::new()
            .with_kernel(kernel)
            .with_bandwidth(h)
            .with_scale(Scale::Probability)
            .with_bandwidth_rule(BandwidthRule::Silverman)
            .with_prior_weight(0.0)
            .fit(&cal)
            .unwrap();
        let h = h.unwrap_or(numpy_h);
        let k = |u: f64| match kernel {
            Kernel::Gaussian => (-0.5 * u * u).exp(),
            _ => {
                if u.abs() < 1.0 {
                    (1.0 - u * u).powi(3)
                } else {
                    0.0
                }
            }
        };
        let out = values(&fitted.calibrator.calibrate(&test).unwrap());
        for (t, got) in values(&test).into_iter().zip(out) {
            // Gaussian weights relative to the largest (exp(-u^2/2 + m)), so far-off scores do
            // not underflow; the triweight needs no scaling.
            let images = |si: f64| [(t - si) / h, (t + si) / h, (t - 2.0 + si) / h];
            let m = match kernel {
                Kernel::Gaussian => {
                    s.iter().flat_map(|&si| images(si)).map(|u| u * u).fold(f64::INFINITY, f64::min)
                }
                _ => 0.0,
            };
            let (mut num, mut den) = (0.0, 0.0);
            for (&si, &yi) in s.iter().zip(&y) {
                let w: f64 = images(si)
                    .iter()
                    .map(|&u| match kernel {
                        Kernel::Gaussian => (-0.5 * (u * u - m)).exp(),
                        _ => k(u),
                    })
                    .sum();
                num += w * yi;
                den += w;
            }
            let want = if den > 0.0 { num / den } else { t };
            assert!((got - want).abs() < 1e-12, "{kernel:?} at {t}: {got} vs {want}");
        }
    }
    let err = LceCalibrationConfig::new().fit(&binary(vec![0.5; 4], vec![0, 1, 0, 1])).unwrap_err();
    assert!(err.to_string().contains("constant"), "{err}");
}

/// calib reaches the maximum-likelihood optimum of betacal's model (to 1e-6 in probability);
/// betacal itself stops early (its scikit-learn L-BFGS tolerance): up to ~3e-4 off here.
#[test]
fn beta_reaches_the_optimum_of_betacals_model() {
    let mut fx = Fixture::open("binary_maps.npz");
    let (cal, test) = top_label_problem();
    for (form, name) in [(BetaForm::Abm, "abm"), (BetaForm::Am, "am"), (BetaForm::Ab, "ab")] {
        let fitted = BetaCalibrationConfig::new().with_form(form).fit(&cal).unwrap();
        assert!(fitted.record.converged, "{name}: {:?}", fitted.record);
        let out = values(&fitted.calibrator.calibrate(&test).unwrap());
        let d = max_diff(&out, &fx.f64s(&format!("beta_{name}_optimum")));
        assert!(d < 1e-6, "beta {name} vs the optimum: {d:e}");
        let d = max_diff(&out, &fx.f64s(&format!("beta_{name}_betacal")));
        assert!(d < 1e-3, "beta {name} vs betacal: {d:e}");
    }
}

/// Every method: K-class input (one-vs-rest and top-label) and binary input save to JSON and
/// load back to bit-identical outputs.
#[test]
fn saved_calibrators_round_trip_bit_for_bit() {
    let mut fx = Fixture::open("binary_maps.npz");
    let cal = probs(fx.f64s("cal_probs"), 10, fx.i64s("cal_labels"));
    let test = probs(fx.f64s("test_probs"), 10, fx.i64s("test_labels"));
    let (bcal, btest) = top_label_problem();
    let hist = HistogramBinningConfig::new().with_strategy(BinStrategy::Mass).with_bootstrap(5);
    for reduction in [Reduction::OneVsRest, Reduction::TopLabel] {
        let fits: Vec<(AnyCalibrator, &Predictions)> = vec![
            (iso(reduction).fit(&cal).unwrap().calibrator.into(), &test),
            (hist.clone().with_reduction(reduction).fit(&cal).unwrap().calibrator.into(), &test),
            (beta(reduction).fit(&cal).unwrap().calibrator.into(), &test),
            (iso(reduction).fit(&bcal).unwrap().calibrator.into(), &btest),
            (hist.clone().fit(&bcal).unwrap().calibrator.into(), &btest),
            (beta(reduction).fit(&bcal).unwrap().calibrator.into(), &btest),
            (
                VennAbersConfig::new()
                    .with_reduction(reduction)
                    .fit(&cal)
                    .unwrap()
                    .calibrator
                    .into(),
                &test,
            ),
            (VennAbersConfig::new().fit(&bcal).unwrap().calibrator.into(), &btest),
            (
                ScalingBinningConfig::new()
                    .with_reduction(reduction)
                    .fit(&cal)
                    .unwrap()
                    .calibrator
                    .into(),
                &test,
            ),
            (ScalingBinningConfig::new().fit(&bcal).unwrap().calibrator.into(), &btest),
            (
                PlattMapConfig::new()
                    .with_reduction(reduction)
                    .fit(&cal)
                    .unwrap()
                    .calibrator
                    .into(),
                &test,
            ),
            (
                LceCalibrationConfig::new()
                    .with_reduction(reduction)
                    .fit(&cal)
                    .unwrap()
                    .calibrator
                    .into(),
                &test,
            ),
            (LceCalibrationConfig::new().fit(&bcal).unwrap().calibrator.into(), &btest),
            (SplineCalibrationConfig::new().fit(&bcal).unwrap().calibrator.into(), &btest),
        ];
        for (c, data) in fits {
            let json = c.to_saved().unwrap().to_json();
            let back = SavedCalibrator::from_json(&json).unwrap();
            assert_eq!(back.to_json(), json);
            let loaded = AnyCalibrator::from_saved(&back, &Device::flex()).unwrap();
            assert_eq!(loaded.method(), c.method());
            let (a, b) =
                (values(&c.calibrate(data).unwrap()), values(&loaded.calibrate(data).unwrap()));
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "{}", c.method());
        }
    }
}

fn iso(r: Reduction) -> IsotonicRegressionConfig {
    IsotonicRegressionConfig::new().with_reduction(r)
}

fn beta(r: Reduction) -> BetaCalibrationConfig {
    BetaCalibrationConfig::new().with_reduction(r)
}

/// Top-label calibration on logits: the argmax of every row stays, rows sum to 1, and the
/// calibrated confidence is the class map's value (floored at 1/K).
#[test]
fn top_label_keeps_the_argmax() {
    let d = common::load_dump("resnet110_cifar10-lt.npz", "val");
    let t = common::load_dump("resnet110_cifar10-lt.npz", "test");
    let device = Device::flex();
    let (val, test) = (d.host_on(&device), t.host_on(&device));
    for base in [0, 1, 2] {
        let c: AnyCalibrator = match base {
            0 => iso(Reduction::TopLabel).fit(&val).unwrap().calibrator.into(),
            1 => HistogramBinningConfig::new()
                .with_reduction(Reduction::TopLabel)
                .fit(&val)
                .unwrap()
                .calibrator
                .into(),
            _ => beta(Reduction::TopLabel).fit(&val).unwrap().calibrator.into(),
        };
        let out = values(&c.calibrate(&test).unwrap());
        for (i, (row, z)) in out.chunks_exact(10).zip(t.logits.chunks_exact(10)).enumerate() {
            let z: Vec<f64> = z.iter().map(|&v| f64::from(v)).collect();
            assert_eq!(argmax(row), argmax(&z), "row {i}, base {base}: {row:?}");
            let sum = row.iter().sum::<f64>();
            assert!((sum - 1.0).abs() < 1e-12, "row {i}, base {base}: sums to {sum}");
        }
    }
}

/// Histogram output takes at most B values per class; bad input gives clear errors.
#[test]
fn histogram_takes_at_most_b_values_and_refuses_too_few_scores() {
    let (cal, test) = top_label_problem();
    let fitted = HistogramBinningConfig::new().with_n_bins(7).fit(&cal).unwrap();
    let mut out = values(&fitted.calibrator.calibrate(&test).unwrap());
    out.sort_by(f64::total_cmp);
    out.dedup();
    assert!(out.len() <= 7, "{} values", out.len());
    let few = binary(vec![0.1, 0.9, 0.5], vec![0, 1, 1]);
    let err = HistogramBinningConfig::new().fit(&few).unwrap_err();
    assert!(err.to_string().contains("3 calibration scores for 15 bins"), "{err}");
    let err = HistogramBinningConfig::new().with_n_bins(0).fit(&few).unwrap_err();
    assert!(matches!(err, FitError::InvalidConfig(_)), "{err}");
}

#[test]
fn degenerate_input_gives_errors_or_identity_maps() {
    // Binary input with one outcome only: an error naming it.
    let one = binary(vec![0.1, 0.4, 0.8], vec![1, 1, 1]);
    let err = IsotonicRegressionConfig::new().fit(&one).unwrap_err();
    assert!(err.to_string().contains("only positive outcomes"), "{err}");
    // A class absent from K-class labels: its map is the identity, with a warning.
    let p = probs(
        vec![0.7, 0.2, 0.1, 0.2, 0.6, 0.2, 0.6, 0.3, 0.1, 0.3, 0.5, 0.2],
        3,
        vec![0, 1, 1, 0],
    );
    let fitted = BetaCalibrationConfig::new().fit(&p).unwrap();
    assert!(fitted.record.warnings.iter().any(|w| w.contains("class 2")), "{:?}", fitted.record);
    assert!((fitted.calibrator.maps()[2].predict(0.3) - 0.3).abs() < 1e-15);
    // Top-label histogram with 3 bins: classes 0 and 1 are predicted in two rows each, fewer
    // than the bins, so their maps are the identity, with a warning; the fit goes on.
    let hist = HistogramBinningConfig::new().with_n_bins(3).with_reduction(Reduction::TopLabel);
    let warnings = hist.fit(&p).unwrap().record.warnings;
    let few = "predicted class 1: 2 calibration scores for 3 bins; its map is the identity";
    assert!(warnings.iter().any(|w| w == few), "{warnings:?}");
    // Constant scores: isotonic maps everything to the mean outcome.
    let flat = binary(vec![0.5; 4], vec![0, 1, 1, 1]);
    let f = IsotonicRegressionConfig::new().fit(&flat).unwrap();
    assert_eq!(values(&f.calibrator.calibrate(&flat).unwrap()), vec![0.75; 4]);
    // Applied to the wrong kind of input: a clear error.
    let err = f.calibrator.calibrate(&p).unwrap_err();
    assert!(err.to_string().contains("fitted on binary scores"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Isotonic output is non-decreasing in the score; beta maps with a, b >= 0 too.
    #[test]
    fn monotone_maps_stay_monotone(
        pairs in prop::collection::vec((0.0f64..=1.0, any::<bool>()), 4..200),
        grid in prop::collection::vec(0.0f64..=1.0, 2..50),
    ) {
        let (s, y): (Vec<f64>, Vec<i64>) = pairs.iter().map(|&(s, o)| (s, i64::from(o))).unzip();
        prop_assume!(y.contains(&0) && y.contains(&1));
        let data = binary(s, y);
        let mut grid = grid;
        grid.sort_by(f64::total_cmp);
        let iso = IsotonicRegressionConfig::new().fit(&data).unwrap().calibrator;
        let beta = BetaCalibrationConfig::new().fit(&data).unwrap().calibrator;
        let hist = HistogramBinningConfig::new().with_n_bins(4).fit(&data).unwrap().calibrator;
        for m in [iso.maps()[0].predict(0.0), beta.maps()[0].predict(0.5), hist.maps()[0].predict(1.0)] {
            prop_assert!((0.0..=1.0).contains(&m));
        }
        let [a, b, _] = beta.maps()[0].coefficients();
        for w in grid.windows(2) {
            prop_assert!(iso.maps()[0].predict(w[0]) <= iso.maps()[0].predict(w[1]));
            if a >= 0.0 && b >= 0.0 {
                prop_assert!(beta.maps()[0].predict(w[0]) <= beta.maps()[0].predict(w[1]) + 1e-12);
            }
        }
    }
}
