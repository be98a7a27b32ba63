//! Histogram binning equals netcal's `HistogramBinning` where their bin conventions agree
//! (`tests/fixtures/histogram_netcal.py`), and differs as documented where they do not:
//! netcal fits on bins `[a, b)` but applies bins `(a, b]`.

mod common;

use calib::train::{Calibrator, Fit, HistogramBinningConfig};
use common::fixtures::{Fixture, binary, max_diff, top_label_problem, values};

#[test]
fn equal_width_histogram_binning_equals_netcal() {
    let mut fx = Fixture::open("histogram_netcal.npz");
    let (cal, test) = top_label_problem();
    for bins in [15, 7] {
        let fitted = HistogramBinningConfig::new().with_n_bins(bins).fit(&cal).unwrap();
        let got = values(&fitted.calibrator.calibrate(&test).unwrap());
        let diff = max_diff(&got, &fx.f64s(&format!("netcal_{bins}")));
        assert!(diff < 1e-12, "{bins} bins: {diff}");
    }
}

/// Calibration scores on inner edges: calib's bins are right-closed when fitting and applying;
/// netcal fits them into the bin above and reads the score back from the bin below.
#[test]
fn scores_on_edges_part_calib_from_netcal_as_documented() {
    let mut fx = Fixture::open("histogram_netcal.npz");
    let scores = fx.f64s("edge_scores");
    let cal = binary(vec![0.2, 0.2, 0.4, 0.9, 0.95], vec![1, 1, 0, 0, 0]);
    let fitted = HistogramBinningConfig::new().with_n_bins(5).fit(&cal).unwrap();
    let got = values(&fitted.calibrator.calibrate(&binary(scores, vec![0; 5])).unwrap());
    // (0, 0.2] holds both 0.2s (mean 1), (0.2, 0.4] the 0.4 (mean 0), (0.8, 1] the rest.
    assert_eq!(got, [1.0, 1.0, 0.0, 0.0, 0.0]);
    assert_eq!(fx.f64s("netcal_edge"), [0.1, 0.1, 1.0, 1.0, 0.0]);
}
