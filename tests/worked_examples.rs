//! Worked examples of docs/conventions.md, on every backend.

mod common;

use calib::binning::Binning;
use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::input::Predictions;
use calib::metrics::CalibrationErrorConfig;
use calib::{Engine, EvaluationConfig, Metric, Precision};

fn binary(scores: &[f64], labels: &[i64], device: &Device) -> Predictions {
    let n = scores.len();
    let s = Tensor::<1>::from_data(
        TensorData::new(scores.iter().map(|&v| v as f32).collect::<Vec<_>>(), [n]),
        device,
    );
    let y = Tensor::<1, Int>::from_data(TensorData::new(labels.to_vec(), [n]), device);
    Predictions::binary(s, y).unwrap()
}

fn engines() -> [(Engine, Precision); 3] {
    [
        (Engine::Tensor, Precision::Auto),
        (Engine::Tensor, Precision::F32),
        (Engine::Auto, Precision::Auto),
    ]
}

/// McCaffrey: scores .61 .39 .31 .76 .22 .59 .92 .83 .57 .41, labels 1 1 0 1 1 1 0 1 1 0,
/// 3 even bins: CE = 0.241 (by hand: .2|.265-.5| + .5|.514-.8| + .3|.8367-.6667|).
#[test]
fn mccaffrey_ten_items_three_bins() {
    let s = [0.61, 0.39, 0.31, 0.76, 0.22, 0.59, 0.92, 0.83, 0.57, 0.41];
    let y = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0];
    let exact = 0.2 * (0.265f64 - 0.5).abs()
        + 0.5 * (0.514f64 - 0.8).abs()
        + 0.3 * (2.51f64 / 3.0 - 2.0 / 3.0).abs();
    for (name, device) in common::devices() {
        for (engine, precision) in engines() {
            let preds = binary(&s, &y, &device);
            let cfg = CalibrationErrorConfig::new().with_binning(Binning::Even { n_bins: 3 });
            let ce = cfg.compute_with(&preds, precision, engine).unwrap().value;
            assert!((ce - exact).abs() < 1e-6, "{name} {engine:?}: {ce} vs {exact}");
            assert!((ce - 0.241).abs() < 5e-4);
        }
    }
}

/// Nixon et al., Fig. 4: 450 predictions of 0.52 all wrong and 550 of 0.58 all right.
/// ECE with 10 even bins: both in bin (0.5, 0.6]: conf 0.553, acc 0.55 -> 0.003.
/// ACE with 10 ranges: ranges 0-4 hold the 0.52s (acc 0, gap 0.52; range 4 holds 50 of them),
/// ranges 5-9 hold the 0.58s (acc 1, gap 0.42): ACE = (4.5*0.52 + ... ) / 10 over both classes.
#[test]
fn nixon_pathology_ece_small_ace_large() {
    let mut s = vec![0.52; 450];
    s.extend(vec![0.58; 550]);
    let mut y = vec![0; 450];
    y.extend(vec![1; 550]);
    // As two-class probabilities [1 - s, s] with the predicted class 1 right for the 0.58s.
    for (name, device) in common::devices() {
        let n = s.len();
        let probs: Vec<f32> = s.iter().flat_map(|&p| [1.0 - p as f32, p as f32]).collect();
        let v = Tensor::<2>::from_data(TensorData::new(probs, [n, 2]), &device);
        let l = Tensor::<1, Int>::from_data(TensorData::new(y.clone(), [n]), &device);
        let preds = Predictions::probabilities(v, l).unwrap();
        let report = EvaluationConfig::new()
            .with_metrics(vec![Metric::Ece, Metric::Ace])
            .with_n_bins(10)
            .with_n_ranges(10)
            .with_engine(Engine::Tensor)
            .evaluate(&preds)
            .unwrap();
        let ece = report.get(Metric::Ece).unwrap();
        // Top-label: 0.52 predictions of class 1 are wrong (label 0), 0.58 right.
        let want = ((450.0 * 0.52 + 550.0 * 0.58) / 1000.0 - 0.55f64).abs();
        assert!((ece - want).abs() < 1e-5, "{name}: ECE {ece} vs {want}");
        assert!((ece - 0.003).abs() < 1e-3);
        let ace = report.get(Metric::Ace).unwrap();
        assert!(ace > 0.3, "{name}: ACE {ace} should expose the miscalibration");
    }
}

/// p = 0 lands in bin 0, p = 1 in the last bin, p = 0.25 with 4 bins in bin 0 (lower bin).
#[test]
fn values_on_edges_land_where_conventions_say() {
    // Binary scores: 0, 0.25, 0.5, 0.75, 1 with B = 4 -> bins 0, 0, 1, 2, 3.
    let s = [0.0, 0.25, 0.5, 0.75, 1.0];
    let y = [0, 1, 1, 0, 1];
    for (name, device) in common::devices() {
        for (engine, precision) in engines() {
            let preds = binary(&s, &y, &device);
            let cfg = CalibrationErrorConfig::new().with_binning(Binning::Even { n_bins: 4 });
            let st = cfg.statistics(&preds, precision, engine).unwrap();
            assert_eq!(st.count, vec![2.0, 1.0, 1.0, 1.0], "{name} {engine:?} {precision:?}");
            assert_eq!(st.sum_outcome, vec![1.0, 1.0, 0.0, 1.0], "{name} {engine:?}");
        }
    }
}

/// N < R: empty ranges add 0 and still count in 1/(K R); no NaN anywhere.
#[test]
fn fewer_samples_than_ranges_gives_no_nan() {
    for (name, device) in common::devices() {
        let v = Tensor::<2>::from_floats([[2.0, 0.0, 1.0], [0.0, 1.0, 0.5]], &device);
        let l = Tensor::<1, Int>::from_ints([0, 2], &device);
        let preds = Predictions::logits(v, l).unwrap();
        for engine in [Engine::Tensor, Engine::Fused] {
            let report = EvaluationConfig::new().with_engine(engine).evaluate(&preds).unwrap();
            for v in &report.values {
                assert!(v.value.is_finite(), "{name} {engine:?} {}: {}", v.metric, v.value);
            }
            // ACE by hand: each class column has 2 scores -> ranges 7 and 14 of 15.
            let p = common::reference::softmax(&[2.0, 0.0, 1.0, 0.0, 1.0, 0.5], 3);
            let want = common::reference::ace(&p, &[0, 2], 15, None);
            assert!((report.get(Metric::Ace).unwrap() - want).abs() < 1e-6);
        }
    }
}

/// Argmax ties go to the lowest class on every backend.
#[test]
fn argmax_ties_resolve_to_lowest_class() {
    for (name, device) in common::devices() {
        let v = Tensor::<2>::from_floats([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0]], &device);
        let l = Tensor::<1, Int>::from_ints([0, 1], &device);
        let preds = Predictions::logits(v, l).unwrap();
        for engine in [Engine::Tensor, Engine::Fused] {
            let report = EvaluationConfig::new()
                .with_metrics(vec![Metric::Accuracy])
                .with_engine(engine)
                .evaluate(&preds)
                .unwrap();
            assert_eq!(report.get(Metric::Accuracy), Some(1.0), "{name} {engine:?}");
        }
    }
}

/// NLL is exact by default; with eps it clips p_y (scikit-learn's log_loss used 1e-15).
#[test]
fn nll_exact_and_clipped() {
    let device = calib::backend::open_device("flex").unwrap();
    // p_y = softmax([0, -40])[1] = e^-40 / (1 + e^-40): exact NLL ~ 40.
    let v = Tensor::<2>::from_floats([[0.0, -40.0]], &device);
    let l = Tensor::<1, Int>::from_ints([1], &device);
    let preds = Predictions::logits(v, l).unwrap();
    for engine in [Engine::Tensor, Engine::Fused] {
        let exact = EvaluationConfig::new()
            .with_metrics(vec![Metric::Nll])
            .with_engine(engine)
            .evaluate(&preds)
            .unwrap();
        let want = 40.0 + (1.0 + (-40.0f64).exp()).ln();
        assert!((exact.get(Metric::Nll).unwrap() - want).abs() < 1e-9);
        let clipped = EvaluationConfig::new()
            .with_metrics(vec![Metric::Nll])
            .with_nll_eps(Some(1e-15))
            .with_engine(engine)
            .evaluate(&preds)
            .unwrap();
        assert!((clipped.get(Metric::Nll).unwrap() - -(1e-15f64).ln()).abs() < 1e-9);
    }
}

/// Brier decomposition of a hand-made binary set: REL, RES, UNC by Murphy's formulas.
#[test]
fn brier_decomposition_by_hand() {
    let device = calib::backend::open_device("flex").unwrap();
    // Scores 0.2 0.2 0.8 0.8 (constant within bins -> residual 0), labels 0 1 1 1, B = 2.
    let preds = binary(&[0.2, 0.2, 0.8, 0.8], &[0, 1, 1, 1], &device);
    let report = EvaluationConfig::new()
        .with_metrics(vec![Metric::Brier, Metric::BrierDecomposition])
        .with_n_bins(2)
        .evaluate(&preds)
        .unwrap();
    let d = report.brier_decomposition.unwrap();
    // Bin 0: n 2, conf .2 acc .5; bin 1: n 2, conf .8 acc 1; ybar .75.
    let rel = (2.0 * 0.09 + 2.0 * 0.04) / 4.0;
    let res = (2.0 * 0.0625 + 2.0 * 0.0625) / 4.0;
    let unc = 0.75 * 0.25;
    assert!((d.reliability - rel).abs() < 1e-6 && (d.resolution - res).abs() < 1e-6);
    assert!((d.uncertainty - unc).abs() < 1e-12);
    let brier = report.get(Metric::Brier).unwrap();
    assert!((brier - (0.04 + 0.64 + 0.04 + 0.04) / 4.0).abs() < 1e-6);
    assert!(d.residual.abs() < 1e-6, "constant forecasts per bin: exact decomposition");
}

/// f64 host scores are kept at f64: 0.25 + 1e-12 is above the edge 0.25 (bin 1 of 4), which
/// an f32 copy (0.25 exactly) would put in bin 0. Checked with both CPU engines.
#[test]
fn f64_host_scores_are_not_rounded_to_f32() {
    use calib::input::{InputConfig, ScoreKind};
    let device = calib::backend::open_device("flex").unwrap();
    let s = [0.25 + 1e-12, 0.9];
    let preds =
        Predictions::from_host(&s, 1, &[1, 1], InputConfig::new(ScoreKind::Binary), &device)
            .unwrap();
    let cfg = CalibrationErrorConfig::new().with_binning(Binning::Even { n_bins: 4 });
    for engine in [Engine::Fused, Engine::Tensor] {
        let st = cfg.statistics(&preds, Precision::F64, engine).unwrap();
        assert_eq!(st.count, vec![0.0, 1.0, 0.0, 1.0], "{engine:?}");
        assert_eq!(st.sum_score[1], 0.25 + 1e-12, "{engine:?}");
    }
}
