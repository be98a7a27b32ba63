//! What the device work costs, counted (`calib::engine::DeviceCost`) rather than timed, so the
//! budgets hold on Mesa's software Vulkan in CI as on a GPU: passes over the scores, host
//! synchronisations and bytes read back per metric set, over one part and over several.
#![cfg(feature = "wgpu")]

mod common;

use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::engine::DeviceCost;
use calib::input::Predictions;
use calib::{Engine, EvaluationConfig, Metric};

/// The metrics without adaptive ranges.
fn static_set() -> Vec<Metric> {
    use Metric::*;
    vec![Ece, Mce, Sce, ToplabelEce, Nll, Brier, Accuracy]
}

/// `n x k` synthetic logits on `device`, as `parts` device tensors of about equal rows.
fn logit_parts(n: usize, k: usize, parts: usize, device: &Device) -> Vec<Predictions> {
    let dump = common::synthetic(n, k, 7);
    let step = n.div_ceil(parts);
    (0..n)
        .step_by(step)
        .map(|start| {
            let end = (start + step).min(n);
            let values = dump.logits[start * k..end * k].to_vec();
            let labels = dump.labels[start..end].to_vec();
            let v = Tensor::<2>::from_data(TensorData::new(values, [end - start, k]), device);
            let l = Tensor::<1, Int>::from_data(TensorData::new(labels, [end - start]), device);
            Predictions::logits(v, l).unwrap()
        })
        .collect()
}

/// The cost of evaluating `metrics` on `parts` with the kernels.
fn cost_of(metrics: Vec<Metric>, parts: &[Predictions]) -> DeviceCost {
    let config = EvaluationConfig::new().with_metrics(metrics).with_engine(Engine::Kernels);
    let (report, cost) = DeviceCost::measure(|| config.evaluate_parts(parts));
    report.unwrap();
    cost
}

/// The static set: one synchronisation; the scores read twice (the row pass, and the
/// class-wise bins of SCE; the top-label bins read the row pass's fields); three launches;
/// a read-back of bin counts that does not grow with N. Over several device parts, the same
/// synchronisation and passes.
#[test]
fn the_static_set_synchronises_once_and_reads_the_scores_twice() {
    let Some(gpu) = common::wgpu() else { return };
    let k = 10;
    let mut read_back = Vec::new();
    for n in [2_000, 8_000] {
        let bytes = (n * k * 4) as u64;
        let cost = cost_of(static_set(), &logit_parts(n, k, 1, &gpu));
        assert_eq!(cost.syncs, 1, "{cost:?}");
        assert_eq!(cost.passes(bytes), 2.0, "{cost:?}");
        assert_eq!(cost.launches, 3, "{cost:?}");
        read_back.push(cost.read_back_bytes);
        let parts = cost_of(static_set(), &logit_parts(n, k, 3, &gpu));
        assert_eq!(parts.syncs, 1, "{parts:?}");
        assert_eq!(parts.passes(bytes), 2.0, "{parts:?}");
    }
    assert_eq!(read_back[0], read_back[1], "the read-back grows with N");
}

/// The default set: its three adaptive requests (top-label RMSCE and L2 errors, ACE, TACE)
/// are cut together, one synchronisation per round of selection passes (at most four digit
/// rounds on untied scores) and one for the last visit, each reading back where the cuts
/// fall rather than the histograms; the scores are read by the row pass, SCE, each class-wise
/// request's passes and their range sums. The same over three parts.
#[test]
fn the_default_set_synchronises_once_per_round() {
    let Some(gpu) = common::wgpu() else { return };
    let (n, k) = (6_000, 10);
    let bytes = (n * k * 4) as u64;
    let whole = cost_of(Metric::defaults(), &logit_parts(n, k, 1, &gpu));
    let rounds = whole.syncs - 1;
    assert!((1..=4).contains(&rounds), "{whole:?}");
    // Row pass and SCE once; ACE and TACE at most once per round, and once for their sums.
    assert!(whole.passes(bytes) <= 2.0 + 2.0 * (rounds + 1) as f64, "{whole:?}");
    // Three words a cut per round, never the digit histograms (K x 2^11 counts at first).
    assert!(whole.read_back_bytes < (k << 11) as u64 * 4, "{whole:?}");
    let parts = cost_of(Metric::defaults(), &logit_parts(n, k, 3, &gpu));
    assert_eq!((parts.syncs, parts.score_bytes), (whole.syncs, whole.score_bytes), "{parts:?}");
}
