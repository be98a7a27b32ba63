use burn::tensor::Device;

use super::{row_chunks, run_cube, run_cube_in};
use crate::EvaluationConfig;
use crate::engine::{Plan, StatRequest};
use crate::input::{InputConfig, Predictions, ScoreKind};
use crate::metrics::{CalibrationErrorConfig, ScoreSet};

/// The wgpu device, or `None` (skipping) when there is none and CI does not require one.
fn wgpu() -> Option<Device> {
    match crate::backend::open_device("wgpu") {
        Ok(d) => Some(d),
        Err(e) if std::env::var("CALIB_REQUIRE_WGPU").as_deref() == Ok("1") => {
            panic!("CALIB_REQUIRE_WGPU=1 but wgpu is unusable: {e}")
        }
        Err(e) => {
            eprintln!("skipping wgpu: {e}");
            None
        }
    }
}

#[test]
fn row_chunks_cover_the_rows_in_order() {
    assert_eq!(row_chunks(10, 3, 9), vec![(0, 3), (3, 3), (6, 3), (9, 1)]);
    assert_eq!(row_chunks(2, 100, 10), vec![(0, 1), (1, 1)]);
    assert_eq!(row_chunks(0, 5, 100), vec![]);
}

/// Host-stored rows uploaded a chunk at a time (here of 7 rows or one) give the same bin
/// counts, hits and fixed-point score sums as one chunk; the scalars agree to f32 rounding.
#[test]
fn chunks_add_up_to_the_whole() {
    let Some(device) = wgpu() else { return };
    let (k, n) = (13, 500);
    let (z, y) = crate::synthetic::overconfident_logits(n, k, 0.8, 1.5, 9);
    let preds =
        Predictions::from_host(&z, k, &y, InputConfig::new(ScoreKind::Logits), &device).unwrap();
    let mut plan = Plan { scalars: true, nll_eps: Some(1e-4), ..Plan::default() };
    for scores in [ScoreSet::TopLabel, ScoreSet::AllClasses] {
        plan.request(StatRequest::for_config(&CalibrationErrorConfig::new().with_scores(scores)));
    }
    let whole = run_cube(&preds, &plan).unwrap();
    for chunk_values in [7 * k, 1] {
        let parts = run_cube_in(&preds, &plan, chunk_values).unwrap();
        for (a, b) in parts.stats.iter().zip(&whole.stats) {
            assert_eq!(a.count, b.count);
            assert_eq!(a.sum_outcome, b.sum_outcome);
            assert_eq!(a.sum_score, b.sum_score);
        }
        for (a, b) in [
            (parts.nll_sum, whole.nll_sum),
            (parts.nll_clipped_sum, whole.nll_clipped_sum),
            (parts.brier_sum, whole.brier_sum),
            (parts.correct, whole.correct),
        ] {
            assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
    let report = EvaluationConfig::new().evaluate(&preds).unwrap();
    assert!(report.values.iter().all(|v| v.value.is_finite()));
}
