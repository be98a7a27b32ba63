//! Over an epoch of batches each metric equals `calib eval` on the concatenated outputs.

use burn::tensor::{Device, Int, Tensor};
use burn_train::ClassificationOutput;
use burn_train::metric::{Adaptor, Metric, Numeric};
use calib_burn_train::{CalibrationInput, CalibrationMetric, metadata};
use calib_core::input::{InputConfig, Predictions, ScoreKind};
use calib_core::{EvaluationConfig, Metric as Measure};

const K: usize = 10;

fn batches(device: &Device) -> (Vec<CalibrationInput>, Predictions) {
    let (z, y) = calib_core::synthetic::overconfident_logits(2300, K, 0.85, 2.5, 3);
    let input = |rows: std::ops::Range<usize>| {
        let logits: Vec<f32> = z[rows.start * K..rows.end * K].to_vec();
        let outputs = Tensor::<1>::from_floats(logits.as_slice(), device).reshape([rows.len(), K]);
        let targets = Tensor::<1, Int>::from_ints(&y[rows], device);
        CalibrationInput::new(outputs, targets)
    };
    let batches = (0..2300).step_by(512).map(|s| input(s..(s + 512).min(2300))).collect();
    let whole = input(0..2300);
    let preds = Predictions::from_tensors(
        whole.outputs,
        whole.targets,
        InputConfig::new(ScoreKind::Logits),
    );
    (batches, preds.unwrap())
}

fn check(device: &Device) {
    let (batches, whole) = batches(device);
    let metrics = [
        CalibrationMetric::ece(),
        CalibrationMetric::sce(),
        CalibrationMetric::ace(),
        CalibrationMetric::tace(),
        CalibrationMetric::nll(),
        CalibrationMetric::brier(),
    ];
    for (mut metric, measure) in metrics.into_iter().zip([
        Measure::Ece,
        Measure::Sce,
        Measure::Ace,
        Measure::Tace,
        Measure::Nll,
        Measure::Brier,
    ]) {
        for epoch in 0..2 {
            for batch in &batches {
                metric.update(batch, &metadata()).unwrap();
            }
            metric.compute().unwrap();
            let got = metric.final_value().current();
            let report = EvaluationConfig::new().with_metrics(vec![measure]).evaluate(&whole);
            let want = report.unwrap().get(measure).unwrap();
            assert!((got - want).abs() <= 1e-6, "{measure} epoch {epoch}: {got} vs {want}");
            metric.clear();
        }
    }
}

#[test]
fn epoch_equals_the_whole_evaluation_on_flex() {
    check(&Device::flex());
}

#[cfg(feature = "wgpu")]
#[test]
fn epoch_equals_the_whole_evaluation_on_wgpu() {
    use calib_core::backend::{WgpuApi, open_wgpu};
    match open_wgpu(WgpuApi::Vulkan) {
        Ok(device) => check(&device),
        Err(e) if std::env::var("CALIB_REQUIRE_WGPU").is_err() => {
            eprintln!(
                "skipped: no Vulkan adapter ({e}); the wgpu tests run on Vulkan only; CALIB_REQUIRE_WGPU=1 makes this a failure"
            )
        }
        Err(e) => panic!("CALIB_REQUIRE_WGPU is set but wgpu has no Vulkan adapter: {e}"),
    }
}

/// burn-train's classification output adapts to the metrics' input; static-bin metrics report
/// the epoch so far after each batch, adaptive ones only after `compute`; bad labels are an
/// error, not a panic.
#[test]
fn classification_output_feeds_the_metrics() {
    let device = Device::flex();
    let (batches, _) = batches(&device);
    let output = ClassificationOutput {
        loss: Tensor::<1>::zeros([1], &device),
        output: batches[0].outputs.clone(),
        targets: batches[0].targets.clone(),
    };
    let input: CalibrationInput = output.adapt();
    let (mut ece, mut ace) = (CalibrationMetric::ece(), CalibrationMetric::ace());
    let entry = ece.update(&input, &metadata()).unwrap();
    assert!(entry.formatted.starts_with("epoch 0."), "{}", entry.formatted);
    assert!(ece.value().is_some());
    ace.update(&input, &metadata()).unwrap();
    assert!(ace.value().is_none(), "adaptive ranges need the whole epoch");
    let bad =
        CalibrationInput::new(input.outputs.clone(), input.targets.clone().add_scalar(K as i64));
    let err = ece.update(&bad, &metadata()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("calib:") && err.contains("label"), "{err}");
}

/// Probabilities instead of logits, and custom settings (20 bins), give `calib eval`'s value
/// on the same input and settings.
#[test]
fn probabilities_and_custom_bins() {
    use burn::tensor::activation::softmax;
    let device = Device::flex();
    let (batches, _) = batches(&device);
    let config = EvaluationConfig::new().with_n_bins(20);
    let mut ece = CalibrationMetric::with_config(Measure::Ece, config.clone()).probabilities();
    let probabilities: Vec<Tensor<2>> =
        batches.iter().map(|b| softmax(b.outputs.clone(), 1)).collect();
    for (b, p) in batches.iter().zip(&probabilities) {
        ece.update(&CalibrationInput::new(p.clone(), b.targets.clone()), &metadata()).unwrap();
    }
    ece.compute().unwrap();
    let labels = Tensor::cat(batches.iter().map(|b| b.targets.clone()).collect(), 0);
    let whole = Predictions::probabilities(Tensor::cat(probabilities, 0), labels).unwrap();
    let want = config.with_metrics(vec![Measure::Ece]).evaluate(&whole).unwrap();
    let got = ece.final_value().current();
    assert!((got - want.get(Measure::Ece).unwrap()).abs() <= 1e-12, "{got}");
}
