//! Results do not depend on the thread count (`calib --threads N`,
//! `calib_kernels::set_threads`): the fused engine's default metric set, the streamed default
//! set (its range passes), bootstrap intervals, smooth ECE and fits of every kind of host pass
//! give the same bits with 1, 2 and 7 threads. One test in its own binary: the cap is process-wide.

mod common;

use calib::bootstrap::BootstrapConfig;
use calib::burn::tensor::Device;
use calib::train::Method;
use calib::{Engine, EvaluationConfig, Metric};
use common::fixtures::values;

/// The fused engine's default metric set, then everything else whose work is shared out
/// over threads, as vectors of values.
fn everything(device: &Device) -> (Vec<f64>, Vec<f64>) {
    let preds = common::synthetic(40_000, 10, 21).host_on(device);
    let eval = EvaluationConfig::new().with_engine(Engine::Fused);
    let engine = eval.evaluate(&preds).unwrap().values.iter().map(|v| v.value).collect();
    let boot = BootstrapConfig::new().with_replicates(20).with_seed(3);
    let small = common::synthetic(4_000, 10, 22).host_on(device);
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Ace, Metric::Nll]);
    let (_, intervals) = config.bootstrap(&small, &boot).unwrap();
    let mut rest: Vec<f64> = intervals.iter().flat_map(|i| [i.lower, i.upper]).collect();
    rest.extend(streamed(device));
    for method in [Method::Temperature, Method::Ets, Method::Isotonic, Method::Sms, Method::Lce] {
        let fitted = method.default_config().unwrap().fit_any(&small, &mut |_| {}).unwrap();
        rest.extend(values(&fitted.calibrator.calibrate(&small).unwrap()));
    }
    // ETS on 400,000 logits (its passes' sums taken over fixed pieces of rows on the cores).
    let ets = Method::Ets.default_config().unwrap().fit_any(&preds, &mut |_| {}).unwrap();
    rest.extend(values(&ets.calibrator.calibrate(&small).unwrap()));
    // Smooth ECE (its mesh summed in pieces on the cores) and an isotonic fit of 2^16 binary
    // pairs or more (buckets of scores counted on the cores).
    let smece = EvaluationConfig::new().with_metrics(vec![Metric::Smece]).evaluate(&preds);
    rest.extend(smece.unwrap().values.iter().map(|v| v.value));
    let n = 70_000u64;
    let hash = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    let scores: Vec<f64> = (0..n).map(|i| 0.01 + 0.98 * hash(i)).collect();
    let labels = (0..n).map(|i| i64::from(hash(i + n) < scores[i as usize])).collect();
    let binary = common::fixtures::binary(scores, labels);
    let fitted = Method::Isotonic.default_config().unwrap().fit_any(&binary, &mut |_| {}).unwrap();
    rest.extend(values(&fitted.calibrator.calibrate(&binary).unwrap()));
    (engine, rest)
}

/// The default set streamed in chunks of 9,000 rows (the adaptive ranges' passes).
fn streamed(device: &Device) -> Vec<f64> {
    let dump = common::synthetic(40_000, 10, 23);
    let mut stream = EvaluationConfig::new().streaming().unwrap();
    loop {
        for (z, y) in dump.logits.chunks(9_000 * 10).zip(dump.labels.chunks(9_000)) {
            let chunk = common::Dump { logits: z.to_vec(), n_classes: 10, labels: y.to_vec() };
            stream.update(&chunk.host_on(device)).unwrap();
        }
        if !stream.end_pass().unwrap() {
            break;
        }
    }
    stream.finish().unwrap().values.iter().map(|v| v.value).collect()
}

#[test]
fn thread_counts_agree() {
    let device = Device::flex();
    let runs: Vec<(Vec<f64>, Vec<f64>)> = [1, 2, 7]
        .into_iter()
        .map(|n| {
            calib_kernels::set_threads(n);
            everything(&device)
        })
        .collect();
    calib_kernels::set_threads(0);
    let (engine, rest) = &runs[0];
    for (n, (e, r)) in [2, 7].into_iter().zip(&runs[1..]) {
        let same =
            r.len() == rest.len() && r.iter().zip(rest).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{n} threads: bootstrap or fits differ from 1 thread");
        for (a, b) in e.iter().zip(engine) {
            assert!((a - b).abs() <= 1e-13 * b.abs(), "{n} threads: metric {a} vs {b}");
        }
    }
}
