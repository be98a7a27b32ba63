//! Each command end to end on real CIFAR logits, outputs parsed back.

use burn::tensor::Device;
use calib_cli::io::{DataSpec, Dataset, Scores, read_npy_file};
use calib_cli::plot::{DiagramConfig, DiagramScores, ReliabilityDiagram, SIZE};
use calib_core::stats::AccuracyInterval;
use calib_core::{EvaluationConfig, Metric};
use calib_train::Fit;

use crate::common::*;

#[test]
fn eval_json_has_the_contract_keys_and_the_library_values() {
    let dir = Scratch::new("eval");
    let data = densenet();
    let v = dir.calib(&["eval", data.to_str().unwrap(), "--format", "json"]).json();
    assert_eq!(v["n"], 10_000);
    assert_eq!(v["k"], 10);
    assert_eq!(v["split"], "test");
    assert_eq!(v["backend"], "flex");
    let metrics = v["metrics"].as_object().unwrap();
    let names: Vec<&str> = metrics.keys().map(String::as_str).collect();
    let mut expected: Vec<&str> = Metric::defaults().iter().map(|m| m.name()).collect();
    expected.sort_unstable();
    assert_eq!(names, expected);
    // The same numbers as the library on the same split.
    let preds = split(&data, "test").take_predictions(&Device::flex()).unwrap();
    let report = EvaluationConfig::new().evaluate(&preds).unwrap();
    for (name, value) in report.named_values() {
        assert_eq!(metrics[&name].as_f64().unwrap(), value, "{name}");
    }
    // The README's published ECE-15 of this dump's test split: 5.50 %.
    assert!((metrics["ece"].as_f64().unwrap() - 0.0550).abs() < 5e-5);
    // --metrics all adds the Brier decomposition; --nll-eps clips; CSV has a header.
    let all =
        dir.calib(&["eval", data.to_str().unwrap(), "--metrics", "all", "--format", "json"]).json();
    assert!(all["metrics"]["brier_reliability"].is_number());
    let csv =
        dir.calib(&["eval", data.to_str().unwrap(), "--metrics", "ece,nll", "--format", "csv"]);
    let lines: Vec<&str> = csv.ok().lines().collect();
    assert_eq!(lines[0], "metric,value");
    assert!(lines[1].starts_with("ece,0.0550"), "{}", lines[1]);
    let table =
        dir.calib(&["eval", data.to_str().unwrap(), "--split", "val", "--metrics", "accuracy"]);
    assert!(table.ok().contains("[val]") && table.ok().contains("0.938200"), "{}", table.stdout);
}

#[test]
fn fit_apply_eval_round_trip() {
    let dir = Scratch::new("fit-apply");
    let data = densenet();
    let d = data.to_str().unwrap();
    let fit = dir.calib(&["fit", "temperature", d, "-o", "t.json", "--format", "json"]).json();
    assert_eq!(fit["converged"], true);
    assert_eq!(fit["n_samples"], 5000, "fitted on val by default");
    // The saved file loads and gives the library's own fit.
    let saved = calib_train::SavedCalibrator::load(dir.path("t.json")).unwrap();
    let val = split(&data, "val").take_predictions(&Device::flex()).unwrap();
    let direct =
        calib_train::TemperatureScalingConfig::new().fit(&val).unwrap().to_saved().unwrap();
    assert_eq!(saved.parameters, direct.parameters);

    dir.calib(&["apply", "t.json", d, "-o", "cal.npz"]).ok();
    dir.calib(&["apply", "t.json", d, "-o", "cal.npy"]).ok();
    let test = split(&data, "test");
    let out = Dataset::load(&DataSpec::new(dir.path("cal.npz")), "test").unwrap();
    assert_eq!(out.labels, test.labels);
    assert!(matches!(out.scores, Scores::F32(_)), "float32 in, float32 out");
    let probs = Dataset::load(
        &DataSpec {
            logits_key: Some("probs".into()),
            input: calib_cli::io::ScoreInput::Probs,
            ..DataSpec::new(dir.path("cal.npz"))
        },
        "test",
    )
    .unwrap();
    let npy = read_npy_file(&dir.path("cal.npy")).unwrap();
    assert_eq!(npy.shape, vec![10_000, 10]);
    let (Scores::F32(p), Scores::F32(z), Scores::F32(z0)) =
        (&probs.scores, &out.scores, &test.scores)
    else {
        panic!("float32 outputs")
    };
    assert_eq!(npy.values, calib_cli::io::Values::F32(p.clone()));
    let argmax =
        |r: &[f32]| r.iter().enumerate().fold(0, |b, (j, &v)| if v > r[b] { j } else { b });
    for i in 0..10_000 {
        let (pr, zr, z0r) =
            (&p[i * 10..i * 10 + 10], &z[i * 10..i * 10 + 10], &z0[i * 10..i * 10 + 10]);
        assert!((pr.iter().map(|&v| f64::from(v)).sum::<f64>() - 1.0).abs() < 1e-5);
        assert_eq!(argmax(zr), argmax(z0r), "temperature scaling keeps the argmax (row {i})");
    }
    // Evaluating the written logits equals evaluating with --calibrator.
    let a = metrics_of(&dir.calib(&["eval", "cal.npz", "--format", "json"]));
    let b = metrics_of(&dir.calib(&["eval", d, "--calibrator", "t.json", "--format", "json"]));
    assert_same_metrics(&a, &b, 1e-6);
    let before = metrics_of(&dir.calib(&["eval", d, "--format", "json"]));
    assert!(
        b["ece"].as_f64() < before["ece"].as_f64() && b["nll"].as_f64() < before["nll"].as_f64()
    );
}

#[test]
fn fit_every_method_and_report_unconverged_fits() {
    let dir = Scratch::new("fit-all");
    let d = densenet();
    let d = d.to_str().unwrap();
    for method in ["vector", "matrix"] {
        let r = dir
            .calib(&["fit", method, d, "-o", &format!("{method}.json"), "--format", "json"])
            .json();
        assert_eq!(r["converged"], true, "{method}");
    }
    let r = dir
        .calib(&["fit", "dirichlet", d, "-o", "dir.json", "--lambda", "0.01", "--format", "json"])
        .json();
    assert_eq!(r["converged"], true);
    let saved = calib_train::SavedCalibrator::load(dir.path("dir.json")).unwrap();
    assert_eq!(saved.hyperparameters.get("lambda"), Some(&0.01));
    assert_eq!(saved.hyperparameters.get("mu"), Some(&0.01));
    // The search over a grid of the user's: every point scored (patience 2 cannot cut a
    // grid of two), the choice one of them, and the Newton-CG record.
    let r = dir
        .calib(&[
            "fit",
            "dirichlet",
            d,
            "-o",
            "grid.json",
            "--lambdas",
            "30,3000",
            "--format",
            "json",
        ])
        .json();
    let cv = r["cross_validation"].as_array().unwrap();
    let lambdas: Vec<f64> = cv.iter().map(|s| s["lambda"].as_f64().unwrap()).collect();
    assert_eq!(lambdas, [3000.0, 30.0]);
    assert_eq!(r["optimizer"], "newton-cg");
    let saved = calib_train::SavedCalibrator::load(dir.path("grid.json")).unwrap();
    assert!(lambdas.contains(&saved.hyperparameters["lambda"]));
    let run = dir.calib(&["fit", "matrix", d, "-o", "m.json", "--lambdas", "1,2"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = dir.calib(&["fit", "dirichlet", d, "-o", "m.json", "--lambdas=1,-1"]);
    assert!(run.code != 0 && run.stderr.contains(">= 0"), "{}", run.stderr);
    let run = dir.calib(&["fit", "vector", d, "-o", "v3.json", "--max-iter", "3"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.contains("did not converge") && run.stdout.contains("iteration_cap"),
        "{}",
        run.stderr
    );
    // Binary scores: Platt.
    let p: Vec<f64> = (0..200).map(|i| 0.05 + 0.9 * (i as f64 / 199.0)).collect();
    let y: Vec<i64> = (0..200).map(|i| i64::from(i % 3 != 0)).collect();
    write_npy(&dir.path("p.npy"), &[200], &p);
    write_npy(&dir.path("y.npy"), &[200], &y);
    let r = dir
        .calib(&[
            "fit",
            "platt",
            "p.npy",
            "--labels",
            "y.npy",
            "--input",
            "probs",
            "-o",
            "platt.json",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(r["converged"], true);
    dir.calib(&[
        "apply",
        "platt.json",
        "p.npy",
        "--labels",
        "y.npy",
        "--input",
        "probs",
        "-o",
        "pc.npz",
    ])
    .ok();
    let spec = DataSpec {
        logits_key: Some("probs".into()),
        input: calib_cli::io::ScoreInput::Probs,
        ..DataSpec::new(dir.path("pc.npz"))
    };
    let out = Dataset::load(&spec, "test").unwrap();
    assert_eq!((out.n_samples, out.n_columns), (200, 1));
    assert_eq!(out.labels, y);
    // Platt's map is monotone in the score and stays inside (0, 1).
    let q = out.scores.to_f64();
    assert!(q.iter().all(|&v| v > 0.0 && v < 1.0));
    assert!(q.windows(2).all(|w| w[0] <= w[1]) || q.windows(2).all(|w| w[0] >= w[1]));
}

#[test]
fn plot_writes_svg_and_png_of_the_reported_bins() {
    let dir = Scratch::new("plot");
    let data = densenet();
    let d = data.to_str().unwrap();
    let run = dir.calib(&["plot", d, "-o", "r.svg"]);
    run.ok();
    let svg = std::fs::read_to_string(dir.path("r.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some(SIZE.0.to_string().as_str()));
    assert_eq!(root.attribute("height"), Some(SIZE.1.to_string().as_str()));
    assert!(svg.contains("ECE = 0.0550"), "the title carries the ECE");
    dir.calib(&["plot", d, "--adaptive", "--class", "3", "--bins", "10", "-o", "c3.png"]).ok();
    let decoder = png::Decoder::new(std::fs::File::open(dir.path("c3.png")).unwrap());
    let reader = decoder.read_info().expect("a PNG");
    assert_eq!((reader.info().width, reader.info().height), SIZE);

    // What is drawn is what the report holds: bar heights, counts and the title's error.
    let preds = split(&data, "test").take_predictions(&Device::flex()).unwrap();
    let report = EvaluationConfig::new()
        .with_metrics(vec![Metric::Ece, Metric::Sce])
        .evaluate(&preds)
        .unwrap();
    let diagram = ReliabilityDiagram::compute(&preds, &DiagramConfig::new()).unwrap();
    let pooled = report.values[0].bins.as_ref().unwrap().pooled().summaries(0);
    assert_eq!(diagram.bins.len(), 15);
    for (bar, bin) in diagram.bins.iter().zip(&pooled) {
        assert_eq!(
            (bar.count, bar.accuracy, bar.confidence),
            (bin.count, bin.accuracy, bin.confidence)
        );
        assert_eq!((Some(bar.lower), Some(bar.upper)), (bin.lower, bin.upper));
    }
    assert!((diagram.calibration_error - report.get(Metric::Ece).unwrap()).abs() < 1e-12);
    let class3 = ReliabilityDiagram::compute(
        &preds,
        &DiagramConfig { scores: DiagramScores::Class(3), ..DiagramConfig::new() },
    )
    .unwrap();
    assert_eq!(class3.n_samples, 10_000.0);
    let sce = &report.values[1];
    assert!((class3.calibration_error - sce.per_class[3]).abs() < 1e-12);
}

#[test]
fn compare_fits_on_val_and_measures_on_test() {
    let dir = Scratch::new("compare");
    let d = densenet();
    let v = dir
        .calib(&[
            "compare",
            d.to_str().unwrap(),
            "--methods",
            "temperature,vector,platt",
            "--format",
            "json",
        ])
        .json();
    let cols = v["columns"].as_array().unwrap();
    let names: Vec<&str> = cols.iter().map(|c| c["method"].as_str().unwrap()).collect();
    assert_eq!(names, ["uncalibrated", "temperature", "vector", "platt"]);
    assert_eq!((v["fit_split"].as_str(), v["split"].as_str()), (Some("val"), Some("test")));
    let metric = |c: usize, m: &str| cols[c]["metrics"][m].as_f64().unwrap();
    assert!(metric(1, "ece") < metric(0, "ece") && metric(1, "nll") < metric(0, "nll"));
    assert_eq!(metric(1, "accuracy"), metric(0, "accuracy"));
    // Platt on K-class input: one-vs-rest, rows renormalised.
    assert!(metric(3, "ece") < metric(0, "ece"), "{:?}", cols[3]);
    let table = dir.calib(&["compare", d.to_str().unwrap(), "--methods", "temperature"]);
    let text = table.ok();
    assert!(
        text.lines().nth(1).unwrap().starts_with("metric") && text.contains("uncalibrated"),
        "{text}"
    );
}

#[test]
fn bench_times_each_backend() {
    let dir = Scratch::new("bench");
    let v = dir
        .calib(&[
            "bench",
            "--backends",
            "flex",
            "--sizes",
            "2000x10",
            "--repeats",
            "1",
            "--format",
            "json",
        ])
        .json();
    let r = &v["results"][0];
    assert_eq!(
        (r["backend"].as_str(), r["n"].as_u64(), r["k"].as_u64()),
        (Some("flex"), Some(2000), Some(10))
    );
    assert!(
        r["metrics_s"].as_f64().unwrap() > 0.0 && r["temperature_fit_s"].as_f64().unwrap() > 0.0
    );
}

/// The CLI gives the same numbers on every backend compiled in (wgpu where a Vulkan driver
/// answers; required when `CALIB_REQUIRE_WGPU=1`).
#[test]
fn every_backend_gives_the_same_metrics() {
    let dir = Scratch::new("backends");
    let d = densenet();
    let eval =
        |b: &str| dir.calib(&["eval", d.to_str().unwrap(), "--backend", b, "--format", "json"]);
    let reference = metrics_of(&eval("flex"));
    for backend in calib_core::backend::compiled_backends() {
        let run = eval(backend);
        if run.code != 0 && std::env::var("CALIB_REQUIRE_WGPU").is_err() && backend != "ndarray" {
            eprintln!("skipping {backend}: {}", run.stderr.trim());
            continue;
        }
        assert_same_metrics(&reference, &metrics_of(&run), 1e-5);
    }
}

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
