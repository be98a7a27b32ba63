//! `calib compare` on a GPU device (`--backend wgpu`; lavapipe in CI): the rows are held on the
//! device ([`Predictions::resident`]), so the methods whose fits and maps run there (the
//! scaling family, ensemble temperature scaling, isotonic regression, histogram binning, the
//! logistic maps) and the comparison's own diagnoses never read the `N x K` rows back; the
//! table is the host rows' within f32 rounding.

use burn::tensor::Device;
use calib_cli::comparison::Comparison;
use calib_cli::evaluation::parse_metrics;
use calib_cli::io::{DataSpec, Dataset};
use calib_core::EvaluationConfig;
use calib_core::engine::DeviceCost;
use calib_core::input::Predictions;
use calib_train::{FitEngine, Method, Reduction};

use crate::common::shipped;

/// The Vulkan wgpu device (`None`, said, where this machine has none and CI does not ask).
fn wgpu() -> Option<Device> {
    match calib_core::backend::open_wgpu(calib_core::backend::WgpuApi::Vulkan) {
        Ok(device) => Some(device),
        Err(e) if std::env::var("CALIB_REQUIRE_WGPU").as_deref() == Ok("1") => {
            panic!("CALIB_REQUIRE_WGPU=1 but wgpu has no Vulkan adapter: {e}")
        }
        Err(e) => {
            eprintln!("skipping the GPU comparison: no Vulkan adapter ({e})");
            None
        }
    }
}

/// Split `split` of the CIFAR-100 dump on `device`, as `calib compare` loads it.
fn split(name: &str, device: &Device) -> Predictions {
    let spec =
        DataSpec { split: Some(name.into()), ..DataSpec::new(shipped("lenet5_cifar100.npz")) };
    Dataset::load(&spec, name).unwrap().into_logits().unwrap().take_predictions(device).unwrap()
}

fn compare(device: &Device, methods: &[Method]) -> Comparison {
    let (fit, test) = (split("val", device), split("test", device));
    let eval = EvaluationConfig::new().with_metrics(parse_metrics(None).unwrap());
    Comparison::run(&fit, &test, methods, &eval, Reduction::OneVsRest, &mut |_| {}).unwrap()
}

#[test]
fn compare_on_a_gpu_reads_back_no_rows_and_matches_the_host() {
    let Some(gpu) = wgpu() else { return };
    let methods = [
        Method::Temperature,
        Method::Ets,
        Method::Vector,
        Method::Isotonic,
        Method::Histogram,
        Method::Platt,
        Method::Affine,
        Method::Quadratic,
    ];
    let (on_gpu, cost) = DeviceCost::measure(|| compare(&gpu, &methods));
    // Both splits are 5,000 x 100: one read of either's rows is 2 MB. What comes back is the
    // kernels' bin sums, each fit's sums (the temperature's per block of rows, the vector
    // fit's per row) or pooled blocks, a few words per output's check, two words a row per
    // diagnosis: never a read of the rows.
    let rows = 5_000 * 100 * 4;
    assert!(cost.largest_read_bytes < rows, "{cost:?}");
    let on_host = compare(&calib_core::backend::open_device("flex").unwrap(), &methods);
    for (gpu, host) in on_gpu.columns.iter().zip(&on_host.columns) {
        assert_eq!(gpu.error, None, "{}", gpu.name);
        if let Some(record) = &gpu.record {
            // Fitted where the rows live: the kernels or the device passes.
            let engine = record.engine;
            assert!(matches!(engine, FitEngine::Kernels | FitEngine::Device), "{record:?}");
        }
        let (g, h) = (gpu.report.as_ref().unwrap(), host.report.as_ref().unwrap());
        for ((name, a), (_, b)) in g.named_values().into_iter().zip(h.named_values()) {
            let close = a == b || (a - b).abs() <= 2e-3 * b.abs().max(1.0);
            assert!(close, "{} {name}: {a} vs {b}", gpu.name);
        }
    }
}

/// A top-label calibrator's metrics read `(pred, confidence)`: on the device too the
/// prediction stays the model's where the calibrated confidence is 0 (an f32 device once
/// rounded the stand-in for 0 to 0, moving the argmax to class 0).
#[test]
fn top_label_keeps_the_accuracy_on_a_gpu() {
    let Some(gpu) = wgpu() else { return };
    let columns = compare(&gpu, &[Method::TopLabel]).columns;
    let accuracy = |c: &calib_cli::comparison::Column| {
        c.report.as_ref().unwrap().get(calib_core::Metric::Accuracy).unwrap()
    };
    assert_eq!(accuracy(&columns[1]), accuracy(&columns[0]), "{:?}", columns[1].error);
}

/// Centred isotonic regression fits and applies on the device (its pooled blocks come back
/// with their mean scores, five words each) and BBQ's map applies there (its fit reads the fit
/// split back to the host): the table is the host rows' within f32 rounding. The largest read
/// is CIR's blocks: on this 5,000-row split about one block per five pairs per class, so
/// 2.07 MB against the rows' 2 MB (blocks grow more slowly than rows).
#[test]
fn centred_isotonic_and_bbq_compare_on_a_gpu() {
    let Some(gpu) = wgpu() else { return };
    let methods = [Method::Cir, Method::Bbq];
    let (on_gpu, cost) = DeviceCost::measure(|| compare(&gpu, &methods));
    let rows = 5_000 * 100 * 4;
    assert!(cost.largest_read_bytes < rows * 11 / 10, "{cost:?}");
    let on_host = compare(&calib_core::backend::open_device("flex").unwrap(), &methods);
    for (gpu, host) in on_gpu.columns.iter().zip(&on_host.columns) {
        assert_eq!(gpu.error, None, "{}", gpu.name);
        if let Some(record) = gpu.record.as_ref().filter(|_| gpu.name == Method::Cir.name()) {
            assert_eq!(record.engine, FitEngine::Kernels, "{record:?}");
        }
        let (g, h) = (gpu.report.as_ref().unwrap(), host.report.as_ref().unwrap());
        for ((name, a), (_, b)) in g.named_values().into_iter().zip(h.named_values()) {
            let close = a == b || (a - b).abs() <= 2e-3 * b.abs().max(1.0);
            assert!(close, "{} {name}: {a} vs {b}", gpu.name);
        }
    }
}
