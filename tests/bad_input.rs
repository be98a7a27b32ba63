//! Every bad input returns its typed error naming the position; nothing panics.

mod common;

use calib::burn::tensor::{Int, Tensor, TensorData};
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::{CalibError, EvaluationConfig, Metric};

fn dev() -> calib::burn::tensor::Device {
    calib::backend::open_device("flex").unwrap()
}

fn tensors(v: Vec<f32>, k: usize, y: Vec<i64>) -> (Tensor<2>, Tensor<1, Int>) {
    let n = v.len() / k;
    let l = y.len();
    (
        Tensor::from_data(TensorData::new(v, [n, k]), &dev()),
        Tensor::from_data(TensorData::new(y, [l]), &dev()),
    )
}

#[test]
fn nan_logit_names_row_and_column() {
    for (name, device) in common::devices() {
        let v = Tensor::<2>::from_floats([[0.0, 1.0], [2.0, f32::NAN], [0.0, 0.0]], &device);
        let l = Tensor::<1, Int>::from_ints([0, 1, 0], &device);
        let err = Predictions::logits(v, l).unwrap_err();
        assert!(matches!(err, CalibError::NonFinite { row: 1, column: 1, .. }), "{name}: {err}");
    }
}

#[test]
fn infinite_logit_is_rejected() {
    let (v, l) = tensors(vec![0.0, f32::INFINITY, 1.0, 2.0], 2, vec![0, 1]);
    assert!(matches!(
        Predictions::logits(v, l),
        Err(CalibError::NonFinite { row: 0, column: 1, .. })
    ));
}

#[test]
fn label_out_of_range() {
    let (v, l) = tensors(vec![0.0, 1.0, 1.0, 2.0, 0.5, 0.5], 2, vec![0, 2, 1]);
    assert_eq!(
        Predictions::logits(v, l).unwrap_err(),
        CalibError::LabelOutOfRange { row: 1, label: 2, n_classes: 2 }
    );
    let (v, l) = tensors(vec![0.0, 1.0], 2, vec![-1]);
    assert!(matches!(
        Predictions::logits(v, l),
        Err(CalibError::LabelOutOfRange { row: 0, label: -1, .. })
    ));
}

#[test]
fn shape_mismatch() {
    let (v, l) = tensors(vec![0.0, 1.0, 1.0, 2.0], 2, vec![0, 1, 1]);
    assert_eq!(
        Predictions::logits(v, l).unwrap_err(),
        CalibError::LengthMismatch { n_scores: 2, n_labels: 3 }
    );
}

#[test]
fn empty_set() {
    let err =
        Predictions::from_host::<f32>(&[], 3, &[], InputConfig::default(), &dev()).unwrap_err();
    assert_eq!(err, CalibError::Empty);
}

#[test]
fn one_class_is_too_few() {
    let (v, l) = tensors(vec![0.0, 1.0], 1, vec![0, 0]);
    assert_eq!(Predictions::logits(v, l).unwrap_err(), CalibError::TooFewClasses { n_classes: 1 });
}

#[test]
fn probabilities_out_of_range_and_bad_row_sums() {
    let (v, l) = tensors(vec![0.5, 0.5, 1.2, -0.2], 2, vec![0, 1]);
    assert!(matches!(
        Predictions::probabilities(v, l),
        Err(CalibError::ProbabilityOutOfRange { row: 1, column: 0, .. })
    ));
    let (v, l) = tensors(vec![0.5, 0.5, 0.7, 0.7], 2, vec![0, 1]);
    assert!(matches!(Predictions::probabilities(v, l), Err(CalibError::RowSum { row: 1, .. })));
}

#[test]
fn binary_scores_must_be_probabilities_with_binary_labels() {
    let s = Tensor::<1>::from_floats([0.2, 1.5], &dev());
    let y = Tensor::<1, Int>::from_ints([0, 1], &dev());
    assert!(matches!(
        Predictions::binary(s, y),
        Err(CalibError::ProbabilityOutOfRange { row: 1, .. })
    ));
    let err = Predictions::from_host(
        &[0.2f64, 0.4],
        1,
        &[0, 3],
        InputConfig::new(ScoreKind::Binary),
        &dev(),
    )
    .unwrap_err();
    assert_eq!(err, CalibError::LabelOutOfRange { row: 1, label: 3, n_classes: 2 });
}

#[test]
fn host_rows_that_do_not_fill_a_row() {
    let err = Predictions::from_host(&[0.1f32, 0.2, 0.3], 2, &[0], InputConfig::default(), &dev())
        .unwrap_err();
    assert!(matches!(err, CalibError::InvalidConfig(_)));
}

#[test]
fn bad_configurations() {
    let (v, l) = tensors(vec![0.0, 1.0], 2, vec![0]);
    let preds = Predictions::logits(v, l).unwrap();
    assert!(EvaluationConfig::new().with_n_bins(0).evaluate(&preds).is_err());
    assert!(EvaluationConfig::new().with_metrics(vec![]).evaluate(&preds).is_err());
    assert!(EvaluationConfig::new().with_nll_eps(Some(0.0)).evaluate(&preds).is_err());
    assert!(Metric::from_name("nope").is_err());
    assert!(calib::backend::open_device("tpu").is_err());
}
