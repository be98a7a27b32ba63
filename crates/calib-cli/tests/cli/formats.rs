//! Every input format, dtype and label encoding gives the numbers of the reference `.npz`.

use calib_cli::io::Scores;

use crate::common::*;

fn f32s(d: &calib_cli::io::Dataset) -> Vec<f32> {
    match &d.scores {
        Scores::F32(v) => v.clone(),
        Scores::F64(_) => panic!("the shared dumps are float32"),
    }
}

fn le<T: Copy, const W: usize>(v: &[T], f: impl Fn(T) -> [u8; W]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

#[test]
fn every_container_gives_the_numbers_of_the_split_npz() {
    let dir = Scratch::new("containers");
    let test = split(&densenet(), "test");
    let (n, k) = (test.n_samples, test.n_columns);
    let logits = f32s(&test);
    let reference = metrics_of(&dir.calib(&[
        "eval",
        densenet().to_str().unwrap(),
        "--format",
        "json",
        "--metrics",
        "all",
    ]));

    // .npz with plain `logits` / `labels` keys.
    write(
        &dir.path("plain.npz"),
        &[
            floats("logits", vec![n, k], Scores::F32(logits.clone())),
            ints("labels", test.labels.clone()),
        ],
    );
    // .npy scores with a .npy of labels as int64, int32, uint8 and one-hot float32.
    write_npy(&dir.path("logits.npy"), &[n as u64, k as u64], &logits);
    write_npy(&dir.path("y64.npy"), &[n as u64], &test.labels);
    let y32: Vec<i32> = test.labels.iter().map(|&y| y as i32).collect();
    write_npy(&dir.path("y32.npy"), &[n as u64], &y32);
    let y8: Vec<u8> = test.labels.iter().map(|&y| y as u8).collect();
    write_npy(&dir.path("y8.npy"), &[n as u64], &y8);
    let onehot: Vec<f32> =
        (0..n * k).map(|i| f32::from(u8::from(test.labels[i / k] == (i % k) as i64))).collect();
    write_npy(&dir.path("onehot.npy"), &[n as u64, k as u64], &onehot);
    // .safetensors with the split layout.
    write_safetensors(
        &dir.path("dump.safetensors"),
        &[
            ("test_logits", safetensors::Dtype::F32, vec![n, k], le(&logits, f32::to_le_bytes)),
            ("test_labels", safetensors::Dtype::I64, vec![n], le(&test.labels, i64::to_le_bytes)),
        ],
    );
    let cases: [&[&str]; 7] = [
        &["plain.npz"],
        &["logits.npy", "--labels", "y64.npy"],
        &["logits.npy", "--labels", "y32.npy"],
        &["logits.npy", "--labels", "y8.npy"],
        &["logits.npy", "--labels", "onehot.npy"],
        &["dump.safetensors"],
        &["dump.safetensors", "--split", "test"],
    ];
    for case in cases {
        let mut args = vec!["eval"];
        args.extend_from_slice(case);
        args.extend_from_slice(&["--format", "json", "--metrics", "all"]);
        let got = metrics_of(&dir.calib(&args));
        assert_same_metrics(&reference, &got, 0.0);
    }
}

#[test]
fn float16_and_float64_scores() {
    let dir = Scratch::new("dtypes");
    let test = split(&densenet(), "test");
    let (n, k) = (test.n_samples as u64, test.n_columns as u64);
    let logits = f32s(&test);
    write_npy(&dir.path("y.npy"), &[n], &test.labels);
    // float64: f32 values widen exactly, so every metric is identical.
    let wide: Vec<f64> = logits.iter().map(|&v| f64::from(v)).collect();
    write_npy(&dir.path("l64.npy"), &[n, k], &wide);
    write_npy(&dir.path("l32.npy"), &[n, k], &logits);
    // float16: the same as float32 holding the f16-rounded values.
    let half: Vec<half::f16> = logits.iter().map(|&v| half::f16::from_f32(v)).collect();
    let rounded: Vec<f32> = half.iter().map(|h| h.to_f32()).collect();
    write_npy(&dir.path("l16.npy"), &[n, k], &half);
    write_npy(&dir.path("l16as32.npy"), &[n, k], &rounded);
    let eval = |file: &str| {
        metrics_of(&dir.calib(&["eval", file, "--labels", "y.npy", "--format", "json"]))
    };
    assert_same_metrics(&eval("l32.npy"), &eval("l64.npy"), 1e-12);
    assert_same_metrics(&eval("l16as32.npy"), &eval("l16.npy"), 0.0);
}

#[test]
fn csv_with_or_without_header_and_any_label_column() {
    let dir = Scratch::new("csv");
    let test = split(&densenet(), "test");
    let (n, k) = (500, test.n_columns);
    let logits = &f32s(&test)[..n * k];
    let labels = &test.labels[..n];
    write(
        &dir.path("ref.npz"),
        &[
            floats("logits", vec![n, k], Scores::F32(logits.to_vec())),
            ints("labels", labels.to_vec()),
        ],
    );
    let row =
        |i: usize| logits[i * k..(i + 1) * k].iter().map(|v| format!("{v}")).collect::<Vec<_>>();
    let mut no_header = String::new();
    let mut label_first =
        (0..k).map(|j| format!("c{j}")).fold("label".to_string(), |a, c| a + "," + &c) + "\n";
    for i in 0..n {
        no_header += &format!("{},{}\n", row(i).join(","), labels[i]);
        label_first += &format!("{},{}\n", labels[i], row(i).join(","));
    }
    std::fs::write(dir.path("plain.csv"), no_header).unwrap();
    std::fs::write(dir.path("header.csv"), label_first).unwrap();
    let eval = |file: &str| metrics_of(&dir.calib(&["eval", file, "--format", "json"]));
    let reference = eval("ref.npz");
    // CSV holds the shortest decimal of each f32, read back as f64: equal to ~1e-7.
    assert_same_metrics(&reference, &eval("plain.csv"), 1e-6);
    assert_same_metrics(&reference, &eval("header.csv"), 1e-6);
}

#[test]
fn binary_scores_worked_example_in_every_format() {
    // McCaffrey's 10 binary items (docs/conventions.md): 3 even bins -> ECE = 0.241.
    let dir = Scratch::new("binary");
    let p = [0.61, 0.39, 0.31, 0.76, 0.22, 0.59, 0.92, 0.83, 0.57, 0.41];
    let y = [1i64, 1, 0, 1, 1, 1, 0, 1, 1, 0];
    let mut csv = String::from("score,label\n");
    for (p, y) in p.iter().zip(y) {
        csv += &format!("{p},{y}\n");
    }
    std::fs::write(dir.path("mc.csv"), csv).unwrap();
    write_npy(&dir.path("p.npy"), &[10], &p);
    write_npy(&dir.path("y.npy"), &[10], &y);
    let log_odds: Vec<f64> = p.iter().map(|p: &f64| (p / (1.0 - p)).ln()).collect();
    write_npy(&dir.path("z.npy"), &[10], &log_odds);
    let ece = |args: &[&str]| {
        let mut a = vec!["eval"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--bins", "3", "--metrics", "ece", "--format", "json"]);
        let run = dir.calib(&a);
        let v = metrics_of(&run)["ece"].as_f64().unwrap();
        (v, run.stderr)
    };
    let (v, warn) = ece(&["mc.csv", "--input", "probs"]);
    assert!((v - 0.241).abs() < 1e-12, "{v}");
    assert!(warn.is_empty(), "{warn}");
    let (v, _) = ece(&["p.npy", "--labels", "y.npy", "--input", "probs"]);
    assert!((v - 0.241).abs() < 1e-12, "{v}");
    // Log-odds (the default reading of one column) map back through the logistic function.
    let (v, warn) = ece(&["z.npy", "--labels", "y.npy"]);
    assert!((v - 0.241).abs() < 1e-12 && warn.is_empty(), "{v} {warn}");
    // Probabilities read as log-odds: computed as asked, but reported as a likely mistake.
    let (_, warn) = ece(&["mc.csv"]);
    assert!(warn.contains("look like probabilities"), "{warn}");
}

#[test]
fn probabilities_as_input_and_detected_when_passed_as_logits() {
    let dir = Scratch::new("probs");
    let test = split(&densenet(), "test");
    let (n, k) = (test.n_samples, test.n_columns);
    let z = f32s(&test);
    let mut probs = Vec::with_capacity(n * k);
    for row in z.chunks_exact(k) {
        let max = row.iter().map(|&v| f64::from(v)).fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|&v| (f64::from(v) - max).exp()).collect();
        let s: f64 = e.iter().sum();
        probs.extend(e.iter().map(|v| v / s));
    }
    write(
        &dir.path("probs.npz"),
        &[
            floats("test_probs", vec![n, k], Scores::F64(probs)),
            ints("test_labels", test.labels.clone()),
        ],
    );
    let run = dir.calib(&["eval", "probs.npz", "--input", "probs", "--format", "json"]);
    let reference =
        metrics_of(&dir.calib(&["eval", densenet().to_str().unwrap(), "--format", "json"]));
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert_same_metrics(&reference, &metrics_of(&run), 1e-9);
    // Calibrators fit on log-probabilities: softmax(ln p) = p, so temperature scaling finds the
    // T of the logits (log p differs from the logits by a per-row constant).
    let from_probs = dir.calib(&[
        "fit",
        "temperature",
        "probs.npz",
        "--input",
        "probs",
        "--split",
        "test",
        "-o",
        "tp.json",
        "--format",
        "json",
    ]);
    let from_logits = dir.calib(&[
        "fit",
        "temperature",
        densenet().to_str().unwrap(),
        "--split",
        "test",
        "-o",
        "tl.json",
        "--format",
        "json",
    ]);
    let (a, b) = (
        from_probs.json()["final_nll"].as_f64().unwrap(),
        from_logits.json()["final_nll"].as_f64().unwrap(),
    );
    assert!((a - b).abs() < 1e-9 * b, "{a} vs {b}");
    let t = |f: &str| {
        calib_train::SavedCalibrator::load(dir.path(f)).unwrap().parameters["log_temperature"]
            .values[0]
    };
    assert!((t("tp.json") - t("tl.json")).abs() < 1e-6);
    // The same file read as logits (key given): a warning, still exit 0.
    let run = dir.calib(&["eval", "probs.npz", "--logits-key", "test_probs", "--format", "json"]);
    assert_eq!(run.code, 0);
    assert!(run.stderr.contains("look like probabilities"), "{}", run.stderr);
    // A zero probability has no logarithm: calibrators floor it at 1e-30 and say where.
    write_npy(&dir.path("p0.npy"), &[2, 2], &[0.5f64, 0.5, 1.0, 0.0]);
    write_npy(&dir.path("y.npy"), &[2], &[0i64, 0]);
    let run = dir.calib(&[
        "fit",
        "temperature",
        "p0.npy",
        "--labels",
        "y.npy",
        "--input",
        "probs",
        "-o",
        "t.json",
    ]);
    run.ok();
    assert!(run.stderr.contains("(the first at row 1, column 1) taken as 1e-30"), "{}", run.stderr);
}
