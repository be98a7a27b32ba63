//! Backends agree: flex, ndarray and wgpu give the same values within 1e-5 (the wgpu kernels'
//! adaptive ranges on f32 scores within 1e-4), including an input large enough to be processed
//! in row chunks; the fused CPU engine matches the tensor engine.

mod common;

use calib::{Engine, EvaluationConfig, Metric, Precision, Report};

fn all_metrics() -> EvaluationConfig {
    EvaluationConfig::new().with_metrics(Metric::ALL.to_vec())
}

fn assert_close(a: &Report, b: &Report, tol: f64, what: &str) {
    assert_close_ranges(a, b, tol, tol, what);
}

/// [`assert_close`], the adaptive metrics to `adaptive_tol`.
fn assert_close_ranges(a: &Report, b: &Report, tol: f64, adaptive_tol: f64, what: &str) {
    for (x, y) in a.named_values().iter().zip(b.named_values()) {
        assert_eq!(x.0, y.0);
        let tol = common::tolerance_of(&x.0, tol, adaptive_tol);
        assert!((x.1 - y.1).abs() <= tol, "{what} {}: {} vs {}", x.0, x.1, y.1);
    }
}

/// The fused engine and the f64 tensor engine give the same values to 1e-9 and the same bin
/// counts and outcome sums (equal-mass ranges: the same scores in each range).
fn engines_agree(config: EvaluationConfig, preds: &calib::input::Predictions, what: &str) {
    let fused = config.clone().with_engine(Engine::Fused).evaluate(preds).unwrap();
    let tensor =
        config.with_engine(Engine::Tensor).with_precision(Precision::F64).evaluate(preds).unwrap();
    assert_close(&fused, &tensor, 1e-9, what);
    for (a, b) in fused.values.iter().zip(&tensor.values) {
        let (sa, sb) = (a.bins.as_ref(), b.bins.as_ref());
        assert_eq!(sa.map(|s| &s.count), sb.map(|s| &s.count), "{what} {}", a.metric);
        assert_eq!(sa.map(|s| &s.sum_outcome), sb.map(|s| &s.sum_outcome), "{what} {}", a.metric);
    }
}

#[test]
fn every_backend_gives_the_same_values_on_real_logits() {
    let dump = common::load_dump("densenet40_cifar10.npz", "test");
    let flex = calib::backend::open_device("flex").unwrap();
    let reference = all_metrics().with_engine(Engine::Fused).evaluate(&dump.on(&flex)).unwrap();
    for (name, device) in common::devices() {
        for engine in [Engine::Tensor, Engine::Auto] {
            let got = all_metrics().with_engine(engine).evaluate(&dump.on(&device)).unwrap();
            // On wgpu, Auto runs the kernels, which cut adaptive ranges on f32 scores: from
            // logits, confidences distinct in f64 can tie in f32 (tests/device_kernels.rs).
            let adaptive = if name == "wgpu" && engine == Engine::Auto { 1e-4 } else { 1e-5 };
            assert_close_ranges(&got, &reference, 1e-5, adaptive, &format!("{name} {engine:?}"));
        }
    }
}

/// 30,000 x 100 logits: with 15 bins the tensor engine splits the rows into chunks (and the
/// host-stored input is uploaded one chunk at a time); values equal the unchunked fused pass.
#[test]
fn chunked_input_matches_whole() {
    let dump = common::synthetic(30_000, 100, 7);
    let flex = calib::backend::open_device("flex").unwrap();
    let whole = all_metrics().with_engine(Engine::Fused).evaluate(&dump.host_on(&flex)).unwrap();
    for (name, device) in common::devices() {
        let got =
            all_metrics().with_engine(Engine::Tensor).evaluate(&dump.host_on(&device)).unwrap();
        assert_close(&got, &whole, 1e-5, name);
    }
}

/// On CPU backends the fused engine and the f64 tensor engine agree to rounding. 1,500 x 300
/// rebuilds class columns in wide groups with a partial last group and a partial row block.
#[test]
fn fused_engine_matches_tensor_engine() {
    for (n, k, seed) in [(2_000, 10, 1), (500, 100, 2), (3, 4, 3), (1_500, 300, 4)] {
        let dump = common::synthetic(n, k, seed);
        let device = calib::backend::open_device("flex").unwrap();
        let preds = dump.on(&device);
        engines_agree(all_metrics(), &preds, &format!("{n}x{k}"));
    }
}

/// The same on probability input, where the class columns are built entry by entry (ACE's
/// full columns and TACE's filtered ones in one read): rows rounded to multiples of 1/64
/// (many exact ties and zeros at the equal-mass cuts, scores at and around TACE's threshold
/// 1/64), 1,500 x 300 in groups with a partial last one.
#[test]
fn fused_engine_matches_tensor_engine_on_probabilities() {
    use calib::input::{InputConfig, ScoreKind};
    let (n, k) = (1_500, 300);
    let dump = common::synthetic(n, k, 5);
    let mut probs = Vec::with_capacity(n * k);
    for (row, &y) in common::reference::softmax(&dump.logits, k).iter().zip(&dump.labels) {
        let mut q: Vec<f64> = row.iter().map(|p| (p * 64.0).floor() / 64.0).collect();
        q[y as usize] = q[y as usize].max(1.0 / 64.0); // finite NLL
        let (_, top) = common::reference::top(row);
        q[top] += 1.0 - q.iter().sum::<f64>();
        probs.extend(q);
    }
    let device = calib::backend::open_device("flex").unwrap();
    let config = InputConfig::new(ScoreKind::Probabilities);
    let preds =
        calib::input::Predictions::from_host(&probs, k, &dump.labels, config, &device).unwrap();
    for eps in [0.01, 1.0 / 64.0] {
        engines_agree(
            all_metrics().with_tace_threshold(eps),
            &preds,
            &format!("probabilities, TACE eps {eps}"),
        );
    }
}

/// All 32 variants of Nixon et al.'s appendix (binning {even, adaptive} x scores {top-label,
/// all} x class-conditional {yes, no} x threshold {yes, no} x norm {L1, L2}) are reachable, and
/// the fused and tensor engines agree on each; the unconditioned all-class adaptive variant is
/// checked against the reference (all N K scores ranked together).
#[test]
fn all_32_gce_variants_agree_across_engines() {
    use calib::binning::Binning;
    use calib::metrics::{CalibrationErrorConfig, Norm, ScoreSet};
    let dump = common::synthetic(3_000, 7, 11);
    let device = calib::backend::open_device("flex").unwrap();
    let preds = dump.on(&device);
    let mut seen = 0;
    for binning in [Binning::Even { n_bins: 15 }, Binning::Adaptive { n_ranges: 15 }] {
        for scores in [ScoreSet::TopLabel, ScoreSet::AllClasses] {
            for cc in [false, true] {
                for threshold in [None, Some(0.01)] {
                    for norm in [Norm::L1, Norm::L2] {
                        let cfg = CalibrationErrorConfig::new()
                            .with_binning(binning.clone())
                            .with_scores(scores)
                            .with_class_conditional(cc)
                            .with_threshold(threshold)
                            .with_norm(norm);
                        let a = cfg.compute_with(&preds, Precision::F64, Engine::Fused).unwrap();
                        let b = cfg.compute_with(&preds, Precision::F64, Engine::Tensor).unwrap();
                        assert!(
                            (a.value - b.value).abs() < 1e-9,
                            "{cfg:?}: {} vs {}",
                            a.value,
                            b.value
                        );
                        assert!(a.value.is_finite() && a.value >= 0.0);
                        seen += 1;
                    }
                }
            }
        }
    }
    assert_eq!(seen, 32);
    // Pooled all-class adaptive L1 by hand: rank all N K (p, y == k) pairs together.
    let k = dump.n_classes;
    let probs = common::reference::softmax(&dump.logits, k);
    let pairs: Vec<(f64, f64)> = (0..dump.n_samples())
        .flat_map(|i| (0..k).map(move |j| (i, j)))
        .map(|(i, j)| (probs[i][j], (dump.labels[i] == j as i64) as u8 as f64))
        .collect();
    let bins = common::reference::adaptive_bins(&pairs, 15);
    let want = common::reference::weighted_l1(&bins, pairs.len() as f64);
    let cfg = CalibrationErrorConfig::new()
        .with_binning(Binning::Adaptive { n_ranges: 15 })
        .with_scores(ScoreSet::AllClasses);
    let got = cfg.compute(&preds).unwrap().value;
    assert!((got - want).abs() < 1e-9, "{got} vs {want}");
}

/// One `Workspace` kept across evaluations gives the reports of fresh memory, bit for bit:
/// shapes that grow, shrink and change the group width (k > 128: a narrower last group), on
/// logits and on probabilities, so buffers are reused, resized and left over.
#[test]
fn a_reused_workspace_gives_the_reports_of_fresh_memory() {
    use calib::Workspace;
    use calib::input::{InputConfig, Predictions, ScoreKind};
    let device = calib::backend::open_device("flex").unwrap();
    let metric_sets =
        [vec![Metric::Ace, Metric::Tace, Metric::Sce], vec![Metric::Tace], vec![Metric::Ace]];
    let mut workspace = Workspace::new();
    for (seed, (n, k)) in
        [(300, 150), (120, 20), (300, 150), (500, 7), (90, 260)].into_iter().enumerate()
    {
        let dump = common::synthetic(n, k, seed as u64);
        let probs: Vec<f64> = common::reference::softmax(&dump.logits, k).concat();
        let config = InputConfig::new(ScoreKind::Probabilities);
        let inputs = [
            dump.host_on(&device),
            Predictions::from_host(&probs, k, &dump.labels, config, &device).unwrap(),
        ];
        for preds in inputs {
            for metrics in &metric_sets {
                let config = EvaluationConfig::new()
                    .with_metrics(metrics.clone())
                    .with_engine(Engine::Fused);
                let kept = config.evaluate_in(&preds, &mut workspace).unwrap();
                let fresh = config.evaluate(&preds).unwrap();
                assert_eq!(kept, fresh, "n={n} k={k} {metrics:?}");
            }
        }
        assert!(workspace.bytes() >= 8 * n, "the full columns stay: {}", workspace.bytes());
    }
}
