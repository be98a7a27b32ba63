//! Each command end to end on real CIFAR logits, outputs parsed back.

use burn::tensor::Device;
use calib_cli::io::{DataSpec, Dataset, Scores, read_npy_file};
use calib_cli::plot::{DiagramConfig, DiagramScores, ReliabilityDiagram, SIZE};
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
/// answers, `CALIB_WGPU_API=vulkan`; required when `CALIB_REQUIRE_WGPU=1`).
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
        let got = metrics_of(&run);
        assert_same_metrics(&reference, &got, 1e-4);
        // wgpu's kernels cut adaptive ranges on f32 scores: confidences distinct in f64 can
        // tie in f32 and split by row (docs/conventions.md), ~1e-5 on this dump.
        let adaptive = ["rmsce", "ace", "tace", "debiased_l2", "plugin_l2"];
        for (k, v) in
            got.iter().filter(|(k, _)| backend != "wgpu" || !adaptive.contains(&k.as_str()))
        {
            let (x, y) = (v.as_f64().unwrap(), reference[k].as_f64().unwrap());
            assert!((x - y).abs() <= 1e-5, "{backend} {k}: {x} vs {y}");
        }
    }
}

/// calib-train's registry generates `calib fit`'s subcommands: one per method.
#[test]
fn calib_fit_has_a_subcommand_with_default_options_for_every_method() {
    use clap::CommandFactory;
    let cli = calib_cli::cli::Cli::command();
    let fit = cli.find_subcommand("fit").expect("calib fit");
    let names: Vec<&str> = fit.get_subcommands().map(|c| c.get_name()).collect();
    for method in calib_train::Method::ALL {
        assert!(names.contains(&method.name()), "`calib fit {method}` missing: {names:?}");
        assert!(calib_cli::cli::default_options(method).is_ok(), "{method}");
    }
    assert_eq!(names.len(), calib_train::Method::ALL.len(), "{names:?}");
}

/// `--threads N` caps the threads and leaves the fit as it is (the fits' host passes give the
/// same bits at any thread count); 0 threads is a usage error.
#[test]
fn threads_caps_the_work_not_the_result() {
    let dir = Scratch::new("threads");
    let data = densenet();
    let d = data.to_str().unwrap();
    let fit = |threads: &str| {
        let out = format!("t{threads}.json");
        dir.calib(&["--threads", threads, "fit", "isotonic", d, "-o", &out, "--quiet"]).ok();
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path(&out)).unwrap()).unwrap();
        saved["parameters"].clone()
    };
    assert_eq!(fit("1"), fit("3"));
    dir.calib(&["--threads", "0", "eval", d]).fails_with(&["--threads"]);
}

#[test]
fn trace_says_where_each_pass_spent_its_time() {
    let dir = Scratch::new("trace");
    let test = split(&densenet(), "test");
    let calib_cli::io::Scores::F32(z) = test.scores else { panic!("float32 dump") };
    let (n, k) = (test.n_samples as u64, test.n_columns as u64);
    write_npy(&dir.path("z.npy"), &[n, k], &z);
    write_npy(&dir.path("y.npy"), &[n], &test.labels);
    let eval = ["eval", "z.npy", "--labels", "y.npy", "--format", "json", "--quiet"];
    let plain = dir.calib(&eval);
    let traced = dir.calib(&[&["--trace"][..], &eval, &["--chunk-rows", "777"]].concat());
    assert_same_metrics(&metrics_of(&plain), &metrics_of(&traced), 1e-12);
    // The default set's adaptive ranges take a second pass; each pass gets its line.
    for pass in ["trace: pass 1: ", "trace: pass 2: "] {
        let line = traced.stderr.lines().find(|l| l.starts_with(pass));
        let line = line.unwrap_or_else(|| panic!("no `{pass}` in {}", traced.stderr));
        for part in ["wall = ", "parallel + ", "serial; busy per thread ", "16 threads ~"] {
            assert!(line.contains(part), "{line}");
        }
    }
    assert!(!plain.stderr.contains("trace:"), "{}", plain.stderr);
}
