//! ECE-optimised temperature: the search attains the minimum of an independent dense grid, and
//! reports the NLL-optimal temperature beside it.

mod common;

use calib::Metric;
use calib::burn::tensor::Device;
use calib::train::{EceTemperatureConfig, Fit, FitError, TemperatureScalingConfig};
use common::{load_dump, reference};

/// ECE-15 of `softmax(z / T)` by the plain f64 reference of `tests/common/reference.rs`.
fn reference_ece(d: &common::Dump, t: f64) -> f64 {
    let probs: Vec<Vec<f64>> = d
        .logits
        .chunks_exact(d.n_classes)
        .map(|z| {
            let z: Vec<f64> = z.iter().map(|&v| f64::from(v) / t).collect();
            let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| v / s).collect()
        })
        .collect();
    reference::ece(&probs, &d.labels, 15)
}

#[test]
fn the_search_attains_the_minimum_of_a_dense_grid() {
    let d = load_dump("densenet40_cifar10.npz", "val");
    let preds = d.host_on(&Device::flex());
    let fitted = EceTemperatureConfig::new().fit(&preds).unwrap();
    let search = fitted.record.search.clone().unwrap();
    assert_eq!(search.metric, "ece");
    // The value reported is the metric at T*.
    let at = reference_ece(&d, search.temperature);
    assert!((at - search.value).abs() < 1e-9, "{at} vs {}", search.value);
    // No point of an independent grid (1,000 points over the same range) beats it.
    let (lo, hi) = (0.05f64.ln(), 20f64.ln());
    let grid_min = (0..1000)
        .map(|i| reference_ece(&d, (lo + (hi - lo) * i as f64 / 999.0).exp()))
        .fold(f64::INFINITY, f64::min);
    assert!(search.value <= grid_min + 1e-12, "{} > grid {grid_min}", search.value);
    // The NLL-optimal temperature is reported, and its ECE is no better.
    let nll_t =
        TemperatureScalingConfig::new().fit(&preds).unwrap().calibrator.temperature().unwrap();
    assert!((search.nll_temperature - nll_t).abs() < 1e-9);
    assert!(search.value <= search.nll_value);
    assert_eq!(fitted.calibrator.temperature().unwrap(), search.temperature);
}

#[test]
fn only_binned_metrics_are_searched() {
    let d = load_dump("densenet40_cifar10.npz", "val");
    let err = EceTemperatureConfig::new().with_metric(Metric::Nll).fit(&d.host_on(&Device::flex()));
    assert!(matches!(err, Err(FitError::InvalidConfig(m)) if m.contains("not a binned metric")));
}
