//! What `apply` writes and what `compare` shows: top-label predictions and confidences, the
//! output float type, float32 probability dumps with exact zeros, the clipped NLL and changed
//! predictions.

use std::path::Path;

use calib_cli::io::Scores;

use crate::common::*;

/// An array of a `.npz` as f64, with whether it was stored as float32.
fn npz_floats(path: &Path, name: &str) -> (Vec<f64>, bool) {
    let mut npz = npyz::npz::NpzArchive::open(path).unwrap();
    let array = npz.by_name(name).unwrap().unwrap_or_else(|| panic!("no `{name}`"));
    match array.dtype() {
        npyz::DType::Plain(t) if t.size_field() == 4 => {
            (array.into_vec::<f32>().unwrap().into_iter().map(f64::from).collect(), true)
        }
        _ => (array.into_vec::<f64>().unwrap(), false),
    }
}

fn npz_ints(path: &Path, name: &str) -> Vec<i64> {
    let mut npz = npyz::npz::NpzArchive::open(path).unwrap();
    npz.by_name(name).unwrap().unwrap_or_else(|| panic!("no `{name}`")).into_vec().unwrap()
}

/// Top-label ECE-15 of (prediction, confidence) pairs: an independent f64 loop over
/// right-closed even bins (edges k/15; isotonic steps such as 0.2 lie on them), 0 in the first.
fn ece_of(pred: &[i64], confidence: &[f64], labels: &[i64]) -> f64 {
    let mut bins = [(0.0, 0.0, 0.0); 15];
    for ((&p, &c), &y) in pred.iter().zip(confidence).zip(labels) {
        let b = (1..15).filter(|&k| c > k as f64 / 15.0).count();
        bins[b].0 += 1.0;
        bins[b].1 += c;
        bins[b].2 += f64::from(u8::from(p == y));
    }
    let n = labels.len() as f64;
    bins.iter().filter(|b| b.0 > 0.0).map(|b| (b.2 - b.1).abs() / n).sum()
}

/// LeNet-5 CIFAR-100, where isotonic top-label confidences fall below 1/K: `apply` writes the
/// model's prediction and the calibrated confidence, and `eval --calibrator` measures the
/// top-label metrics from them.
#[test]
fn top_label_apply_writes_the_prediction_and_confidence() {
    let dir = Scratch::new("top-label-apply");
    let d = shipped("lenet5_cifar100.npz");
    let d = d.to_str().unwrap();
    dir.calib(&["fit", "top-label", d, "--base", "isotonic", "-o", "t.json"]).ok();
    // f64 output: float32 rounding would move confidences on bin edges to the next bin.
    dir.calib(&["apply", "t.json", d, "-o", "out.npz", "--dtype", "f64"]).ok();
    let out = dir.path("out.npz");
    let (pred, labels) = (npz_ints(&out, "pred"), npz_ints(&out, "labels"));
    let (confidence, _) = npz_floats(&out, "confidence");
    let test = split(&shipped("lenet5_cifar100.npz"), "test");
    let k = test.n_columns;
    for (i, &p) in pred.iter().enumerate() {
        let row: Vec<f64> = (0..k).map(|j| test.scores.get(i * k + j)).collect();
        let argmax = (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b });
        assert_eq!(p, argmax as i64, "row {i}");
    }
    assert!(confidence.iter().all(|c| (0.0..=1.0).contains(c)));
    assert!(confidence.iter().any(|&c| c < 1.0 / k as f64), "no confidence below 1/K");
    let e = dir.calib(&["eval", d, "--calibrator", "t.json", "--format", "json"]).json();
    let m = &e["metrics"];
    let want = ece_of(&pred, &confidence, &labels);
    assert!((m["ece"].as_f64().unwrap() - want).abs() < 1e-6, "{} vs {want}", m["ece"]);
    let accuracy = pred.iter().zip(&labels).filter(|(p, y)| p == y).count() as f64 / 5000.0;
    assert!((m["accuracy"].as_f64().unwrap() - accuracy).abs() < 1e-12);
    // The top-label diagram reads them too.
    let plot = dir.calib(&["plot", d, "--calibrator", "t.json", "-o", "p.svg"]);
    plot.ok();
    assert!(plot.stderr.contains(&format!("ECE = {want:.4}")), "{}", plot.stderr);
    // Evaluation states cannot hold them: refused in one line.
    dir.calib(&["eval", d, "--calibrator", "t.json", "--save-state", "s.json"])
        .fails_with(&["top-label", "evaluate the file whole"]);
}

#[test]
fn apply_writes_the_input_float_type_unless_told() {
    let dir = Scratch::new("apply-dtype");
    let d = densenet();
    let d = d.to_str().unwrap();
    dir.calib(&["fit", "temperature", d, "-o", "t.json"]).ok();
    dir.calib(&["apply", "t.json", d, "-o", "a.npz"]).ok();
    dir.calib(&["apply", "t.json", d, "-o", "b.npz", "--dtype", "f64"]).ok();
    let (a, a32) = npz_floats(&dir.path("a.npz"), "probs");
    let (b, b32) = npz_floats(&dir.path("b.npz"), "probs");
    assert!(a32 && !b32, "the dump is float32: default f32, --dtype f64 gives f64");
    assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6));
    assert!(b.iter().zip(&a).any(|(x, y)| x != y), "f64 output keeps more digits");
}

/// Float32 softmax of DenseNet-40's logits underflows to exact zeros; fitting on it floors
/// them at 1e-30 and says so once.
#[test]
fn float32_probability_dumps_with_zeros_are_fitted() {
    let dir = Scratch::new("f32-probs");
    let mut arrays = Vec::new();
    let mut zeros = 0;
    for name in ["val", "test"] {
        let data = split(&densenet(), name);
        let k = data.n_columns;
        let n = data.labels.len();
        let mut probs = Vec::with_capacity(n * k);
        for i in 0..n {
            let row: Vec<f32> = (0..k).map(|j| data.scores.get(i * k + j) as f32).collect();
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = row.iter().map(|z| (z - m).exp()).collect();
            let s: f32 = e.iter().sum();
            probs.extend(e.iter().map(|v| v / s));
        }
        zeros += probs.iter().filter(|&&p| p == 0.0).count();
        arrays.push(floats(&format!("{name}_probs"), vec![n, k], Scores::F32(probs)));
        arrays.push(ints(&format!("{name}_labels"), data.labels.clone()));
    }
    assert!(zeros > 0, "the float32 softmax has no exact zero");
    write(&dir.path("p.npz"), &arrays);
    let run = dir.calib(&["fit", "temperature", "p.npz", "--input", "probs", "-o", "t.json"]);
    run.ok();
    let said = run.stderr.matches("taken as 1e-30 before the logarithm").count();
    assert_eq!(said, 1, "{}", run.stderr);
    let e = dir
        .calib(&["eval", "p.npz", "--input", "probs", "--calibrator", "t.json", "--format", "json"])
        .json();
    assert!(e["metrics"]["ece"].as_f64().unwrap() < 0.02, "{e}");
}

/// `compare` shows the clipped NLL beside the exact one and how many predictions a method
/// changed; `--reduction top-label` changes none.
#[test]
fn compare_shows_clipped_nll_and_changed_predictions() {
    let dir = Scratch::new("compare-notes");
    let d = shipped("lenet5_cifar100.npz");
    let d = d.to_str().unwrap();
    let methods = ["--methods", "temperature,histogram,isotonic"];
    let one = dir.calib(&[&["compare", d, "--format", "json"][..], &methods[..]].concat()).json();
    let top = dir
        .calib(
            &[&["compare", d, "--format", "json", "--reduction", "top-label"][..], &methods[..]]
                .concat(),
        )
        .json();
    assert_eq!(one["nll_floor"].as_f64(), Some(1e-30));
    let column = |r: &serde_json::Value, m: &str| {
        r["columns"].as_array().unwrap().iter().find(|c| c["method"] == m).unwrap().clone()
    };
    for m in ["uncalibrated", "temperature", "histogram", "isotonic"] {
        let (a, b) = (column(&one, m), column(&top, m));
        assert!(a["nll_clipped"].as_f64().unwrap().is_finite(), "{m}: {a}");
        assert_eq!(b["changed_predictions"].as_f64(), Some(0.0), "{m} top-label: {b}");
    }
    assert_eq!(column(&one, "temperature")["changed_predictions"].as_f64(), Some(0.0));
    let changed = column(&one, "histogram")["changed_predictions"].as_f64().unwrap();
    assert!(changed > 0.05, "one-vs-rest histogram binning changes predictions: {changed}");
    let notes: Vec<String> =
        one["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect();
    assert!(notes.iter().any(|n| n.starts_with("histogram: changes the prediction")), "{notes:?}");
}
