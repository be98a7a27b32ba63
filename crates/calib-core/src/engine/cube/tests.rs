use burn::tensor::Device;

use super::rows::row_chunks;
use super::{run_cube, run_parts_in};
use crate::EvaluationConfig;
use crate::binning::Binning;
use crate::engine::{Plan, StatRequest};
use crate::input::{InputConfig, Predictions, ScoreKind};
use crate::metrics::{CalibrationErrorConfig, ScoreSet};

/// The wgpu device on Vulkan, or `None` (skipping) when there is none and CI does not
/// require one.
fn wgpu() -> Option<Device> {
    match crate::backend::open_wgpu(crate::backend::WgpuApi::Vulkan) {
        Ok(d) => Some(d),
        Err(e) if std::env::var("CALIB_REQUIRE_WGPU").as_deref() == Ok("1") => {
            panic!("CALIB_REQUIRE_WGPU=1 but wgpu has no Vulkan adapter: {e}")
        }
        Err(e) => {
            eprintln!(
                "skipping wgpu: no Vulkan adapter ({e}); the wgpu tests run on Vulkan only; CALIB_REQUIRE_WGPU=1 makes this a failure"
            );
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
/// and range counts, hits and fixed-point score sums as one chunk (the range passes see
/// every chunk in turn, rows numbered across them); the scalars agree to f32 rounding.
#[test]
fn chunks_add_up_to_the_whole() {
    let Some(device) = wgpu() else { return };
    let (k, n) = (13, 500);
    let (z, y) = crate::synthetic::overconfident_logits(n, k, 0.8, 1.5, 9);
    let preds =
        Predictions::from_host(&z, k, &y, InputConfig::new(ScoreKind::Logits), &device).unwrap();
    let mut plan = Plan { scalars: true, nll_eps: Some(1e-4), ..Plan::default() };
    for scores in [ScoreSet::TopLabel, ScoreSet::AllClasses] {
        for binning in [Binning::Even { n_bins: 15 }, Binning::Adaptive { n_ranges: 15 }] {
            let config = CalibrationErrorConfig::new().with_scores(scores).with_binning(binning);
            plan.request(StatRequest::for_config(&config));
        }
    }
    let whole = run_cube(&preds, &plan).unwrap();
    for chunk_values in [7 * k, 1] {
        let parts = run_parts_in(std::slice::from_ref(&preds), &plan, chunk_values).unwrap();
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

/// Runs of equal scores longer than a chunk: the tie passes number rows across chunks, so
/// chunked ranges equal one chunk's exactly.
#[test]
fn ties_split_across_chunks_as_in_one_chunk() {
    let Some(device) = wgpu() else { return };
    let grid: [[f32; 3]; 4] =
        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.0, 0.75, 0.25]];
    let mut rng = crate::synthetic::SplitMix64(5);
    let (mut p, mut y) = (Vec::new(), Vec::new());
    for _ in 0..6_000 {
        p.extend(grid[(rng.next_u64() % 4) as usize].iter().map(|&v| v as f64));
        y.push((rng.next_u64() % 3) as i64);
    }
    let config = InputConfig::new(ScoreKind::Probabilities);
    let preds = Predictions::from_host(&p, 3, &y, config, &device).unwrap();
    let mut plan = Plan::default();
    for (scores, grouped) in [(ScoreSet::AllClasses, true), (ScoreSet::TopLabel, true)] {
        let config = CalibrationErrorConfig::new()
            .with_scores(scores)
            .with_class_conditional(grouped)
            .with_binning(Binning::Adaptive { n_ranges: 15 });
        plan.request(StatRequest::for_config(&config));
    }
    let whole = run_cube(&preds, &plan).unwrap();
    for chunk_values in [3 * 1_000, 3 * 4_097] {
        let parts = run_parts_in(std::slice::from_ref(&preds), &plan, chunk_values).unwrap();
        for (a, b) in parts.stats.iter().zip(&whole.stats) {
            assert_eq!(
                (&a.count, &a.sum_outcome, &a.sum_score),
                (&b.count, &b.sum_outcome, &b.sum_score)
            );
        }
    }
}

/// The segmented radix sort against a stable sort on the host: keys with long runs of ties
/// (the payload, each item's position, shows their order kept), high bits set, segments of
/// one item, of less than a tile and of several tiles; checked and unchecked launches alike.
#[test]
fn the_segmented_sort_is_a_stable_sort_of_each_segment() {
    use burn::tensor::{DType, Int, Tensor, TensorData};

    use super::sort_ops::sort_segments;
    use super::words::words_of;

    let Some(device) = wgpu() else { return };
    let mut rng = crate::synthetic::SplitMix64(11);
    for (n_segs, seg_len) in [(1, 1), (3, 100), (4, 1_500), (2, 5_000)] {
        let n = n_segs * seg_len;
        let keys: Vec<u32> = (0..n)
            .map(|i| match i % 3 {
                0 => (rng.next_u64() % 7) as u32 * 0x0101_0101,
                1 => rng.next_u64() as u32,
                _ => 0x8000_0000 | (rng.next_u64() % 300) as u32,
            })
            .collect();
        let payload: Vec<u32> = (0..n as u32).collect();
        let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(payload.iter().copied()).collect();
        want.chunks_mut(seg_len).for_each(|s| s.sort_by_key(|&(k, _)| k));
        let upload = |v: &[u32]| {
            Tensor::<1, Int>::from_data(TensorData::new(v.to_vec(), [n]), (&device, DType::U32))
        };
        for checked in [false, true] {
            super::set_checked_kernels(checked);
            let (k, p) = sort_segments(upload(&keys), upload(&payload), n_segs, seg_len);
            super::set_checked_kernels(false);
            let (k, p) = (words_of(k.into_data()).unwrap(), words_of(p.into_data()).unwrap());
            let got: Vec<(u32, u32)> = k.into_iter().zip(p).collect();
            assert_eq!(got, want, "{n_segs} segments of {seg_len}, checked {checked}");
        }
    }
}
