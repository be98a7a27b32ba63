use burn::tensor::Device;

use super::*;
use crate::input::{InputConfig, ScoreKind};
use crate::metrics::Metric;

fn preds<T: crate::input::HostScore>(z: &[T], y: &[i64], k: usize, kind: ScoreKind) -> Predictions {
    let width = if kind == ScoreKind::Binary { 1 } else { k };
    Predictions::from_host(z, width, y, InputConfig::new(kind), &Device::flex()).unwrap()
}

/// Every metric that streams.
fn streamable() -> Vec<Metric> {
    Metric::ALL.into_iter().filter(|m| !m.needs_all_rows()).collect()
}

/// Feeds `z, y` in chunks of `rows` rows, pass after pass; returns the report and the passes.
fn stream_all<T: crate::input::HostScore>(
    stream: StreamingEvaluation,
    z: &[T],
    y: &[i64],
    k: usize,
    kind: ScoreKind,
    rows: usize,
) -> (Report, u32) {
    let width = if kind == ScoreKind::Binary { 1 } else { k };
    passes(stream, |stream| {
        for (zc, yc) in z.chunks(rows * width).zip(y.chunks(rows)) {
            stream.update(&preds(zc, yc, k, kind)).unwrap();
        }
    })
}

/// Runs `feed` (one pass over the rows) until the stream needs no more passes; returns the
/// report and the passes.
fn passes(
    mut stream: StreamingEvaluation,
    mut feed: impl FnMut(&mut StreamingEvaluation),
) -> (Report, u32) {
    loop {
        feed(&mut stream);
        if !stream.end_pass().unwrap() {
            break;
        }
    }
    (stream.finish().unwrap(), stream.pass())
}

/// Reports equal to `tol`, the bins exactly.
fn assert_same(got: &Report, whole: &Report, tol: f64, what: &str) {
    assert_close(got, whole, (tol, 0.0), what);
}

#[test]
fn static_metrics_take_one_pass_and_equal_the_whole() {
    let k = 7;
    let (z, y) = crate::synthetic::overconfident_logits(2_345, k, 0.8, 2.0, 11);
    let metrics: Vec<Metric> = streamable()
        .into_iter()
        .filter(|m| !EvaluationConfig::new().with_metrics(vec![*m]).needs_passes())
        .collect();
    let config = EvaluationConfig::new().with_metrics(metrics).with_nll_eps(Some(1e-15));
    let whole = config.evaluate(&preds(&z, &y, k, ScoreKind::Logits)).unwrap();
    for rows in [1, 100, 2_345] {
        let stream = config.streaming().unwrap();
        let (got, passes) = stream_all(stream, &z, &y, k, ScoreKind::Logits, rows);
        assert_eq!(passes, 1);
        assert_same(&got, &whole, 1e-12, &format!("by {rows}"));
        let (da, db) = (got.brier_decomposition.unwrap(), whole.brier_decomposition.unwrap());
        assert!((da.resolution - db.resolution).abs() < 1e-12);
    }
}

#[test]
fn adaptive_ranges_by_passes_equal_the_in_memory_ranges() {
    let k = 6;
    let (z, y) = crate::synthetic::overconfident_logits(3_001, k, 0.8, 2.5, 5);
    let config = EvaluationConfig::new().with_metrics(streamable()).with_n_ranges(13);
    let whole = config.evaluate(&preds(&z, &y, k, ScoreKind::Logits)).unwrap();
    for (rows, budget) in [(3_001, COLLECT_BUDGET), (97, COLLECT_BUDGET), (500, 40), (7, 0)] {
        let mut stream = config.streaming().unwrap();
        stream.collect_budget = budget;
        let (got, passes) = stream_all(stream, &z, &y, k, ScoreKind::Logits, rows);
        assert!(passes >= 2 && (budget > 0 || passes > 3), "{passes} passes");
        assert_same(&got, &whole, 1e-12, &format!("by {rows}, budget {budget}"));
    }
}

#[test]
fn ties_split_in_sample_order_across_chunks_and_passes() {
    // Probabilities on a grid of quarters: most scores tie, many exactly at cuts.
    let (n, k) = (1_000, 4);
    let mut x = 99u64;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    let mut z = Vec::new();
    let mut y = Vec::new();
    for _ in 0..n {
        let mut row = [0.0f64; 4];
        for _ in 0..4 {
            row[next() % k] += 0.25;
        }
        z.extend(row);
        y.push((next() % k) as i64);
    }
    let config = EvaluationConfig::new().with_metrics(streamable()).with_n_ranges(7);
    let whole = config.evaluate(&preds(&z, &y, k, ScoreKind::Probabilities)).unwrap();
    for (rows, budget) in [(1_000, COLLECT_BUDGET), (33, 10), (250, 0)] {
        let mut stream = config.streaming().unwrap();
        stream.collect_budget = budget;
        let (got, _) = stream_all(stream, &z, &y, k, ScoreKind::Probabilities, rows);
        assert_same(&got, &whole, 1e-12, &format!("ties by {rows}"));
    }
    // Binary scores with ties.
    let s: Vec<f64> = (0..n).map(|_| (next() % 5) as f64 / 4.0).collect();
    let yb: Vec<i64> = (0..n).map(|_| (next() % 2) as i64).collect();
    let whole = config.evaluate(&preds(&s, &yb, 2, ScoreKind::Binary)).unwrap();
    let (got, _) = stream_all(config.streaming().unwrap(), &s, &yb, 2, ScoreKind::Binary, 77);
    assert_same(&got, &whole, 1e-12, "binary");
}

/// Feeds one shard (rows `range`) into a stream resumed from `state`.
fn shard_state(
    state: &EvaluationState,
    z: &[f32],
    y: &[i64],
    k: usize,
    range: std::ops::Range<usize>,
) -> EvaluationState {
    let mut s =
        StreamingEvaluation::from_state(state.clone()).unwrap().with_first_row(range.start as u64);
    for start in (range.start..range.end).step_by(100) {
        let end = (start + 100).min(range.end);
        s.update(&preds(&z[start * k..end * k], &y[start..end], k, ScoreKind::Logits)).unwrap();
    }
    s.state().clone()
}

#[test]
fn shard_states_merge_pass_by_pass_into_the_whole() {
    let k = 5;
    let (z, y) = crate::synthetic::overconfident_logits(2_000, k, 0.7, 2.0, 3);
    let config = EvaluationConfig::new().with_metrics(streamable());
    let whole = config.evaluate(&preds(&z, &y, k, ScoreKind::Logits)).unwrap();
    let shards = [0..700, 700..701, 701..1_500, 1_500..2_000];
    let mut coordinator = config.streaming().unwrap().state().clone();
    loop {
        let handout =
            if coordinator.pass() == 1 { coordinator.clone() } else { coordinator.for_workers() };
        for (i, range) in shards.iter().enumerate() {
            let part = shard_state(&handout, &z, &y, k, range.clone());
            // Through both serialised forms on the way back.
            let part = if i % 2 == 0 {
                EvaluationState::from_json(&part.to_json()).unwrap()
            } else {
                EvaluationState::from_bytes(&part.to_bytes()).unwrap()
            };
            coordinator = if i == 0 && coordinator.pass() == 1 {
                part
            } else {
                coordinator.merge(&part).unwrap()
            };
        }
        let mut s = StreamingEvaluation::from_state(coordinator).unwrap();
        let more = s.end_pass().unwrap();
        coordinator = s.state().clone();
        if !more {
            break;
        }
    }
    assert!(coordinator.pass() >= 2);
    assert_eq!(coordinator.shards(), [700, 1, 799, 500]);
    assert!(!coordinator.needs_pass());
    assert_same(&coordinator.report().unwrap(), &whole, 1e-12, "shards");
}

#[test]
fn later_passes_refuse_overlapping_or_missing_shards() {
    let k = 4;
    let (z, y) = crate::synthetic::overconfident_logits(600, k, 0.7, 2.0, 5);
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Ace]);
    let start = config.streaming().unwrap().state().clone();
    let first =
        shard_state(&start, &z, &y, k, 0..200).merge(&shard_state(&start, &z, &y, k, 200..600));
    let mut s = StreamingEvaluation::from_state(first.unwrap()).unwrap();
    assert!(s.state().needs_pass() && s.end_pass().unwrap());
    let coordinator = s.state().clone();
    assert_eq!(coordinator.shards(), [200, 400]);
    let handout = coordinator.for_workers();
    // Both shards at row 0: their rows overlap.
    let (a, b) =
        (shard_state(&handout, &z, &y, k, 0..200), shard_state(&handout, &z, &y, k, 200..600));
    let shifted = {
        let mut s = StreamingEvaluation::from_state(handout.clone()).unwrap();
        s.update(&preds(&z[200 * k..], &y[200..], k, ScoreKind::Logits)).unwrap();
        s.state().clone()
    };
    let err = a.merge(&shifted).unwrap_err().to_string();
    assert!(err.contains("rows 0..200") && err.contains("twice"), "{err}");
    // A shard missing from the pass.
    let mut partial = StreamingEvaluation::from_state(coordinator.merge(&b).unwrap()).unwrap();
    let err = partial.end_pass().unwrap_err().to_string();
    assert!(err.contains("200..600 of 0..600"), "{err}");
    // Whole: the pass ends.
    let whole = coordinator.merge(&b).unwrap().merge(&a).unwrap();
    assert!(StreamingEvaluation::from_state(whole).unwrap().end_pass().is_ok());
    // A state of another format version is named as such, in both forms.
    let current = format!("\"format\":{}", super::state::FORMAT);
    let old = coordinator.to_json().replacen(&current, "\"format\":3", 1);
    let err = EvaluationState::from_json(&old).unwrap_err().to_string();
    assert!(err.contains("format 3"), "{err}");
    let mut bytes = coordinator.to_bytes();
    bytes[8] = 3;
    let err = EvaluationState::from_bytes(&bytes).unwrap_err().to_string();
    assert!(err.contains("format 3"), "{err}");
}

#[test]
fn refusals_name_the_problem() {
    let err = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Smece]).streaming();
    let err = err.unwrap_err().to_string();
    assert!(err.contains("smece") && err.contains("all rows"), "{err}");
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Ace]);
    let mut stream = config.streaming().unwrap();
    assert_eq!(stream.finish().unwrap_err(), CalibError::Empty);
    stream.update(&preds(&[1.0f32, 0.0, 0.0], &[0], 3, ScoreKind::Logits)).unwrap();
    let err = stream.update(&preds(&[1.0f32, 0.0], &[0], 2, ScoreKind::Logits)).unwrap_err();
    assert!(err.to_string().contains("K = 2"), "{err}");
    assert!(stream.finish().unwrap_err().to_string().contains("more passes"));
    // A second pass over other rows.
    assert!(stream.end_pass().unwrap());
    stream
        .update(&preds(&[1.0f32, 0.0, 0.0, 2.0, 1.0, 0.0], &[0, 1], 3, ScoreKind::Logits))
        .unwrap();
    let err = stream.end_pass().unwrap_err().to_string();
    assert!(err.contains("same rows"), "{err}");
    // States of other configurations or passes.
    let a = EvaluationConfig::new().with_metrics(vec![Metric::Ece]).streaming().unwrap();
    let b = EvaluationConfig::new()
        .with_metrics(vec![Metric::Ece])
        .with_n_bins(10)
        .streaming()
        .unwrap();
    assert!(a.state().merge(b.state()).unwrap_err().to_string().contains("configurations"));
    assert!(
        EvaluationState::from_json("{}")
            .unwrap_err()
            .to_string()
            .contains("not an evaluation state")
    );
    assert!(EvaluationState::from_bytes(b"nope").unwrap_err().to_string().contains("magic"));
}

#[test]
fn a_speculative_second_pass_finishes_exactly() {
    // Soft probabilities, about 2,000 pairs per cut bucket after the first pass.
    let k = 4;
    let (z, y) = crate::synthetic::overconfident_logits(200_000, k, 0.7, 0.5, 9);
    let config = EvaluationConfig::new().with_metrics(streamable()).with_n_ranges(15);
    let whole = config.evaluate(&preds(&z, &y, k, ScoreKind::Logits)).unwrap();
    // The cut buckets hold 360,000 pairs: windows of 28 % of them are wide enough to
    // speculate (two passes); windows of 0.3 % are not (a refinement pass, then collection).
    for (budget, want) in [(100_000, 2), (1_000, 3)] {
        let mut stream = config.streaming().unwrap();
        stream.collect_budget = budget;
        let (got, passes) = stream_all(stream, &z, &y, k, ScoreKind::Logits, 30_000);
        assert_eq!(passes, want, "budget {budget}");
        assert_same(&got, &whole, 1e-12, &format!("budget {budget}"));
    }
}

/// Feeds `z, y` with sample weights `w` in chunks of `rows` rows, pass after pass.
fn stream_weighted(
    stream: StreamingEvaluation,
    (z, y, w): (&[f64], &[i64], &[f64]),
    k: usize,
    kind: ScoreKind,
    rows: usize,
) -> (Report, u32) {
    let width = if kind == ScoreKind::Binary { 1 } else { k };
    passes(stream, |stream| {
        let chunks = z.chunks(rows * width).zip(y.chunks(rows)).zip(w.chunks(rows));
        for ((zc, yc), wc) in chunks {
            let chunk = preds(zc, yc, k, kind).with_chunk_weights(wc.to_vec()).unwrap();
            stream.update(&chunk).unwrap();
        }
    })
}

/// Reports equal to `tol`, bin counts and hits to `bins` relative to the largest count
/// (weighted sums add in another order when streamed).
fn assert_close(got: &Report, whole: &Report, (tol, bins): (f64, f64), what: &str) {
    assert_eq!(got.n_samples, whole.n_samples);
    for (a, b) in got.values.iter().zip(&whole.values) {
        let (x, w) = (a.value, b.value);
        assert!(x == w || (x - w).abs() <= tol, "{what}: {:?} {x} vs {w}", a.metric);
        for (pa, pb) in a.per_class.iter().zip(&b.per_class) {
            assert!((pa - pb).abs() <= tol, "{what}: {:?} per class", a.metric);
        }
        if let (Some(sa), Some(sb)) = (&a.bins, &b.bins) {
            let scale = sb.count.iter().fold(1.0f64, |m, c| m.max(*c));
            for (u, v) in [(&sa.count, &sb.count), (&sa.sum_outcome, &sb.sum_outcome)] {
                let off = u.iter().zip(v).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
                assert!(off <= bins * scale, "{what}: {:?} bins off by {off}", a.metric);
            }
        }
    }
}

/// Scores on a grid (ties, many at cuts) or spread, and weights: whole numbers (zeros too)
/// or fractions.
fn weighted_set(n: usize, k: usize, grid: bool, whole: bool) -> (Vec<f64>, Vec<i64>, Vec<f64>) {
    let mut x = 7u64;
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    let (z, y) = crate::synthetic::overconfident_logits(n, k, 0.8, 2.5, 21);
    let z = match grid {
        true => (0..n * k).map(|_| (next() % 9) as f64 / 4.0).collect(),
        false => z.iter().map(|&v| f64::from(v)).collect(),
    };
    let w = (0..n)
        .map(|_| match whole {
            true => (next() % 4) as f64,
            false => (next() % 1000) as f64 / 250.0 + if next() % 7 == 0 { 0.0 } else { 0.1 },
        })
        .collect();
    (z, y, w)
}

#[test]
fn weighted_rows_stream_as_they_evaluate_in_memory() {
    let k = 6;
    let config = EvaluationConfig::new().with_metrics(streamable()).with_n_ranges(13);
    for (grid, whole_numbers) in [(false, false), (true, false), (false, true), (true, true)] {
        let (z, y, w) = weighted_set(2_001, k, grid, whole_numbers);
        let memory = preds(&z, &y, k, ScoreKind::Logits).with_weights(w.clone()).unwrap();
        let want = config.evaluate(&memory).unwrap();
        for (rows, budget) in [(2_001, COLLECT_BUDGET), (97, COLLECT_BUDGET), (300, 40), (7, 0)] {
            let mut stream = config.streaming().unwrap();
            stream.collect_budget = budget;
            let data = (z.as_slice(), y.as_slice(), w.as_slice());
            let (got, passes) = stream_weighted(stream, data, k, ScoreKind::Logits, rows);
            assert!(passes >= 2 && (budget > 0 || passes > 3), "{passes} passes");
            let what = format!("grid {grid}, whole {whole_numbers}, by {rows}, budget {budget}");
            assert_close(&got, &want, (1e-12, 1e-12), &what);
        }
    }
}

#[test]
fn whole_number_weights_stream_as_repeated_rows() {
    let k = 4;
    let (z, y, w) = weighted_set(700, k, true, true);
    let (mut zr, mut yr) = (Vec::new(), Vec::new());
    for ((row, &label), &copies) in z.chunks(k).zip(&y).zip(&w) {
        for _ in 0..copies as usize {
            zr.extend_from_slice(row);
            yr.push(label);
        }
    }
    let config = EvaluationConfig::new().with_metrics(streamable()).with_n_ranges(9);
    let repeated = config.evaluate(&preds(&zr, &yr, k, ScoreKind::Logits)).unwrap();
    let mut stream = config.streaming().unwrap();
    stream.collect_budget = 0;
    let data = (z.as_slice(), y.as_slice(), w.as_slice());
    let (got, _) = stream_weighted(stream, data, k, ScoreKind::Logits, 50);
    for (a, b) in got.values.iter().zip(&repeated.values) {
        assert!((a.value - b.value).abs() <= 1e-12, "{:?}", a.metric);
        if let (Some(sa), Some(sb)) = (&a.bins, &b.bins) {
            assert_eq!((&sa.count, &sa.sum_outcome), (&sb.count, &sb.sum_outcome));
        }
    }
}

#[test]
fn weighted_shards_merge_and_refuse_unweighted_ones() {
    let k = 5;
    let (z, y, w) = weighted_set(1_200, k, false, false);
    let config = EvaluationConfig::new().with_metrics(streamable());
    let memory = preds(&z, &y, k, ScoreKind::Logits).with_weights(w.clone()).unwrap();
    let want = config.evaluate(&memory).unwrap();
    let shard = |state: &EvaluationState, range: std::ops::Range<usize>| {
        let mut s = StreamingEvaluation::from_state(state.clone())
            .unwrap()
            .with_first_row(range.start as u64);
        let chunk =
            preds(&z[range.start * k..range.end * k], &y[range.clone()], k, ScoreKind::Logits);
        s.update(&chunk.with_chunk_weights(w[range].to_vec()).unwrap()).unwrap();
        EvaluationState::from_bytes(&s.state().to_bytes()).unwrap()
    };
    let mut coordinator = config.streaming().unwrap().state().clone();
    loop {
        let first = coordinator.pass() == 1;
        let handout = if first { coordinator.clone() } else { coordinator.for_workers() };
        let parts = [shard(&handout, 0..500), shard(&handout, 500..1_200)];
        let merged = parts[0].merge(&parts[1]).unwrap();
        coordinator = if first { merged } else { coordinator.merge(&merged).unwrap() };
        let mut s = StreamingEvaluation::from_state(coordinator).unwrap();
        let more = s.end_pass().unwrap();
        coordinator = s.state().clone();
        if !more {
            break;
        }
    }
    assert_close(&coordinator.report().unwrap(), &want, (1e-12, 1e-12), "weighted shards");
    // Weighted and unweighted rows do not mix, in a stream or in a merge.
    let unweighted = preds(&z[..10 * k], &y[..10], k, ScoreKind::Logits);
    let mut stream = config.streaming().unwrap();
    stream.update(&unweighted.clone().with_chunk_weights(vec![0.5; 10]).unwrap()).unwrap();
    let err = stream.update(&unweighted).unwrap_err().to_string();
    assert!(err.contains("sample weights, or none"), "{err}");
    let mut plain = config.streaming().unwrap();
    plain.update(&unweighted).unwrap();
    let err = stream.state().merge(plain.state()).unwrap_err().to_string();
    assert!(err.contains("weighted rows and one of unweighted"), "{err}");
    // Chunks of zero weight pass; a set of zero weight does not.
    let mut zero = EvaluationConfig::new().with_metrics(vec![Metric::Ece]).streaming().unwrap();
    zero.update(&unweighted.with_chunk_weights(vec![0.0; 10]).unwrap()).unwrap();
    let err = zero.finish().unwrap_err().to_string();
    assert!(err.contains("sum to 0"), "{err}");
}

#[test]
fn thread_counts_give_the_same_states_and_bits() {
    // Chunks of 9,000 rows: a histogram pass splits each over the threads, whose counts stay
    // apart until the pass ends; a state taken mid-pass must read as their sum.
    let k = 4;
    let (z, y) = crate::synthetic::overconfident_logits(20_000, k, 0.8, 2.0, 17);
    let config = EvaluationConfig::new().with_metrics(streamable());
    let run = |threads: usize| {
        calib_kernels::set_threads(threads);
        let mut mid_pass = vec![];
        let report = passes(config.streaming().unwrap(), |stream| {
            for (zc, yc) in z.chunks(9_000 * k).zip(y.chunks(9_000)) {
                stream.update(&preds(zc, yc, k, ScoreKind::Logits)).unwrap();
                mid_pass.push(stream.state().to_json());
            }
        });
        calib_kernels::set_threads(0);
        (report, mid_pass)
    };
    let ((one, states_one), (three, states_three)) = (run(1), run(3));
    assert!(one.1 >= 2, "{} passes", one.1);
    assert_eq!(states_one, states_three);
    for (a, b) in one.0.named_values().iter().zip(three.0.named_values()) {
        assert_eq!(a.1.to_bits(), b.1.to_bits(), "{}", a.0);
    }
    let whole = config.evaluate(&preds(&z, &y, k, ScoreKind::Logits)).unwrap();
    assert_same(&three.0, &whole, 1e-12, "3 threads");
}
