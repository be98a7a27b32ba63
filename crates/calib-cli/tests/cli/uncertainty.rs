//! The uncertainty and binning options of `eval` and `plot`: custom edges, per-bin accuracy
//! intervals, bootstrap intervals.

use burn::tensor::Device;
use calib_cli::plot::{DiagramConfig, ReliabilityDiagram};
use calib_core::stats::AccuracyInterval;
use calib_core::{EvaluationConfig, Metric};

use crate::common::*;

/// `--edges` re-bins eval's even-bin metrics and plot's bars; bad edges exit 2 with one line.
#[test]
fn custom_edges_in_eval_and_plot() {
    let dir = Scratch::new("edges");
    let data = densenet();
    let edges = "0,0.01,0.05,0.1,0.3,0.5,0.75,1";
    let data_arg = data.to_str().unwrap();
    let got = dir.calib(&["eval", data_arg, "--edges", edges, "--format", "json"]).json();
    assert_eq!(got["edges"].as_array().unwrap().len(), 8);
    let preds = split(&data, "test").take_predictions(&Device::flex()).unwrap();
    let edges_vec = vec![0.0, 0.01, 0.05, 0.1, 0.3, 0.5, 0.75, 1.0];
    let report = EvaluationConfig::new().with_edges(Some(edges_vec)).evaluate(&preds).unwrap();
    assert_eq!(got["metrics"]["ece"].as_f64(), report.get(Metric::Ece));
    let svg = dir.path("edges.svg");
    let run = dir.calib(&["plot", data_arg, "--edges", edges, "-o", svg.to_str().unwrap()]);
    run.ok();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("7 custom bins"));
    dir.calib(&["eval", data_arg, "--edges", "0,0.5,0.4,1"]).fails_with(&["strictly increasing"]);
    dir.calib(&["plot", data_arg, "--edges", "0.2,1", "-o", svg.to_str().unwrap()])
        .fails_with(&["start at 0"]);
}

/// `--interval` draws each bin's accuracy interval beside the acceptance interval, and both
/// legends state the level used.
#[test]
fn plot_draws_accuracy_intervals_at_the_level_asked() {
    let dir = Scratch::new("plot-intervals");
    let data = densenet();
    let (data_arg, svg) = (data.to_str().unwrap(), dir.path("iv.svg"));
    let out = svg.to_str().unwrap();
    dir.calib(&["plot", data_arg, "--interval", "wilson", "--level", "0.9", "-o", out]).ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("90% Wilson interval of accuracy"), "legend");
    assert!(text.contains("90% acceptance interval"), "legend");
    dir.calib(&["plot", data_arg, "--interval", "-o", out]).ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("95% Clopper-Pearson interval of accuracy"), "default method");
    dir.calib(&["plot", data_arg, "--interval", "agresti", "-o", out])
        .fails_with(&["unknown interval", "wilson"]);
    dir.calib(&["plot", data_arg, "--level", "1.5", "-o", out]).fails_with(&["--level"]);
    // The drawn intervals are calib-core's, from each bin's hits and count.
    let preds = split(&data, "test").take_predictions(&Device::flex()).unwrap();
    let config = DiagramConfig {
        accuracy_interval: Some(AccuracyInterval::ClopperPearson),
        alpha: 0.1,
        ..DiagramConfig::new()
    };
    let diagram = ReliabilityDiagram::compute(&preds, &config).unwrap();
    for b in diagram.bins.iter().filter(|b| b.count > 0.0) {
        let hits = (b.accuracy.unwrap() * b.count).round();
        let expected = AccuracyInterval::ClopperPearson.of(hits, b.count, 0.9);
        let (lo, hi) = b.accuracy_interval.unwrap();
        let (elo, ehi) = expected.unwrap();
        assert!((lo - elo).abs() < 1e-9 && (hi - ehi).abs() < 1e-9);
        assert!(lo <= b.accuracy.unwrap() && b.accuracy.unwrap() <= hi);
    }
}

/// `--bootstrap` adds an interval and a standard error per metric to the JSON, `lo`/`hi`
/// columns to the table; bad settings exit 2 with one line.
#[test]
fn eval_bootstrap_intervals() {
    let dir = Scratch::new("bootstrap");
    let data = densenet();
    let d = data.to_str().unwrap();
    let args = ["eval", d, "--bootstrap", "200", "--seed", "3", "--format", "json"];
    let got = dir.calib(&args).json();
    for (name, value) in got["metrics"].as_object().unwrap() {
        let ends = got["intervals"][name].as_array().unwrap();
        let (lo, hi, v) =
            (ends[0].as_f64().unwrap(), ends[1].as_f64().unwrap(), value.as_f64().unwrap());
        assert!(lo <= hi && got["standard_errors"][name].is_number(), "{name}");
        assert!(
            lo <= v + 1e-12 && v <= hi + 1e-12 || name == "mce",
            "{name}: {v} outside [{lo}, {hi}]"
        );
    }
    assert_eq!(got["bootstrap"]["interval"], "percentile");
    assert_eq!(dir.calib(&args).json(), got, "same seed, same output");
    let table = dir.calib(&["eval", d, "--bootstrap", "50", "--metrics", "ece", "--level", "0.8"]);
    assert!(table.ok().contains("lo") && table.ok().contains("80% percentile"), "{}", table.stdout);
    dir.calib(&["eval", d, "--bootstrap", "1"]).fails_with(&["at least 2"]);
    dir.calib(&["eval", d, "--bootstrap", "10", "--level", "1.5"]).fails_with(&["--level"]);
    assert_eq!(dir.calib(&["eval", d, "--seed", "3"]).code, 2, "--seed needs --bootstrap");
}

/// `--curve` draws the kernel reliability curve (and with `--bootstrap` its band) over the
/// bars, legends stating kernel, bandwidth, level and replicates; `lce_ece` in eval is the
/// library's value; bad settings exit 2 with one line.
#[test]
fn plot_curve_and_lce_ece() {
    let dir = Scratch::new("curve");
    let data = densenet();
    let (d, svg) = (data.to_str().unwrap(), dir.path("curve.svg"));
    let out = svg.to_str().unwrap();
    let args = ["plot", d, "--curve", "--bandwidth", "0.05", "--bootstrap", "40", "--level", "0.9"];
    dir.calib(&[&args[..], &["-o", out]].concat()).ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("reliability curve (Gaussian, h = 0.050; LCE-ECE"), "curve legend");
    assert!(text.contains("90% bootstrap band (40 replicates)"), "band legend");
    let run =
        dir.calib(&["plot", d, "--curve", "--class", "3", "--kernel", "triweight", "-o", out]);
    assert!(run.stderr.contains("Silverman's rule gives the curve a bandwidth"), "{}", run.stderr);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("reliability curve (triweight"));
    let got = dir.calib(&["eval", d, "--metrics", "lce_ece", "--format", "json"]).json();
    let preds = split(&data, "test").take_predictions(&Device::flex()).unwrap();
    let report = EvaluationConfig::new().with_metrics(vec![Metric::LceEce]).evaluate(&preds);
    assert_eq!(got["metrics"]["lce_ece"].as_f64(), report.unwrap().get(Metric::LceEce));
    dir.calib(&["plot", d, "--curve", "--bandwidth", "0", "-o", out]).fails_with(&["bandwidth"]);
    dir.calib(&["plot", d, "--curve", "--kernel", "box", "-o", out])
        .fails_with(&["unknown kernel"]);
    dir.calib(&["plot", d, "--curve", "--bootstrap", "1", "-o", out]).fails_with(&["at least 2"]);
    assert_eq!(dir.calib(&["plot", d, "--bandwidth", "0.1", "-o", out]).code, 2, "needs --curve");
}

/// `--split-fits K` cross-fits the calibration/refinement metrics; the parts add up to the
/// loss either way; fewer than 2 folds is one line and exit 2.
#[test]
fn calibration_and_refinement_in_sample_and_cross_fitted() {
    let dir = Scratch::new("refinement");
    let d = densenet();
    let d = d.to_str().unwrap();
    let metrics = "nll,calibration_nll,refinement_nll,brier,calibration_brier,refinement_brier";
    for extra in [&[][..], &["--split-fits", "5"][..]] {
        let args = [&["eval", d, "--metrics", metrics, "--format", "json"][..], extra].concat();
        let m = metrics_of(&dir.calib(&args));
        let get = |name: &str| m[name].as_f64().unwrap();
        assert!((get("calibration_nll") + get("refinement_nll") - get("nll")).abs() < 1e-12);
        assert!((get("calibration_brier") + get("refinement_brier") - get("brier")).abs() < 1e-12);
        assert!(get("calibration_nll") > 0.1, "DenseNet-40 is overconfident: {m:?}");
    }
    dir.calib(&["eval", d, "--metrics", "calibration_nll", "--split-fits", "1"])
        .fails_with(&["split fits"]);
}
