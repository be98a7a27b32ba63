//! `calib study`: the JSON contract, the values behind the rankings, the agreement measure.

use burn::tensor::Device;
use calib_cli::study::Study;
use calib_core::binning::Binning;
use calib_core::metrics::{GceProperty, GceVariant};
use calib_core::{EvaluationConfig, Metric};

use crate::common::*;

/// `--format json` has the variants in the paper's order, the methods, the rankings per bin
/// count and variant, and the mean correlations per property; the uncalibrated ECE at 10 bins
/// is the library's; `--plot` writes the heatmap; bad settings exit 2 with one line.
#[test]
fn study_json_contract() {
    let dir = Scratch::new("study");
    let data = densenet();
    let d = data.to_str().unwrap();
    let svg = dir.path("study.svg");
    let out = svg.to_str().unwrap();
    let args =
        ["study", d, "--methods", "temperature,platt", "--bins", "10,20", "--format", "json"];
    let got = dir.calib(&[&args[..], &["--plot", out]].concat()).json();
    let variants = got["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 32);
    assert_eq!(variants[4], "even-maxprob-marginal-all-l1");
    assert_eq!(got["presets"]["26"], "tace");
    assert_eq!(got["methods"], serde_json::json!(["uncalibrated", "temperature", "platt"]));
    let ranking = got["rankings"]["10"]["even-maxprob-marginal-all-l1"].as_array().unwrap();
    assert_eq!(ranking.len(), 3);
    assert_eq!(ranking[2], "uncalibrated", "DenseNet-40 is overconfident");
    for p in ["binning", "scores", "class_conditional", "threshold", "norm", "bin_count"] {
        let mean = got["rank_correlation"][p]["mean"].as_f64().unwrap();
        assert!((-1.0..=1.0).contains(&mean), "{p}: {mean}");
    }
    let preds = split(&data, "test").take_predictions(&Device::flex()).unwrap();
    let ece10 = EvaluationConfig::new().with_metrics(vec![Metric::Ece]).with_n_bins(10);
    let expected = ece10.evaluate(&preds).unwrap().get(Metric::Ece).unwrap();
    assert_eq!(got["values"]["uncalibrated"]["10"][4].as_f64(), Some(expected));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("rank of each method"));
    dir.calib(&["study", d, "--bins", "0"]).fails_with(&["--bins"]);
    dir.calib(&["study", d, "--methods", "nope"]).fails_with(&["unknown method"]);
}

/// Rankings that reverse between L1 and L2 and agree otherwise: rho -1 for the norm, 1 for
/// every other property and between bin counts.
#[test]
fn agreement_is_spearman_between_variants_differing_in_one_property() {
    let value = |m: usize, v: GceVariant| {
        if v.has(GceProperty::Norm) { -(m as f64) } else { m as f64 }
    };
    let per_bins = |m| vec![GceVariant::all().map(|v| value(m, v)).collect::<Vec<_>>(); 2];
    let study = Study {
        bins: vec![10, 20],
        methods: vec!["a".into(), "b".into(), "c".into()],
        values: (0..3).map(per_bins).collect(),
        failed: Vec::new(),
    };
    for a in study.agreement() {
        let want = if a.property == "norm" { -1.0 } else { 1.0 };
        assert_eq!(a.mean, want, "{}", a.property);
    }
    assert_eq!(study.ranking(0, GceVariant::new(5).unwrap()), vec![2, 1, 0]);
    assert!(matches!(GceVariant::new(16).unwrap().config(10).binning, Binning::Adaptive { .. }));
}
