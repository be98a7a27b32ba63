//! `--weights W.npy` and `--weights-key KEY`: whole-number weights equal repeated rows for
//! `eval` (every metric) and `fit`; fractional weights reach weighted fits and are refused by
//! the others; weighted rows stream in chunks and shard states; bad weights exit 2 with one
//! line.

use calib_cli::io::Scores;
use calib_core::synthetic::overconfident_logits;

use crate::common::*;

/// A 3-class dump with `{split}_weights` (whole numbers 0..3), and the same rows repeated.
fn dumps(dir: &Scratch) -> (String, String, Vec<f64>) {
    let (mut weighted, mut repeated) = (Vec::new(), Vec::new());
    let mut test_weights = Vec::new();
    for (split, seed) in [("val", 1), ("test", 2)] {
        let (z, y) = overconfident_logits(240, 3, 0.7, 2.0, seed);
        let w: Vec<f64> = (0..240).map(|i| ((i * 7 + seed as usize) % 4) as f64).collect();
        let (mut rz, mut ry) = (Vec::new(), Vec::new());
        for (i, &wi) in w.iter().enumerate() {
            for _ in 0..wi as usize {
                rz.extend_from_slice(&z[i * 3..i * 3 + 3]);
                ry.push(y[i]);
            }
        }
        weighted.push(floats(&format!("{split}_logits"), vec![240, 3], Scores::F32(z)));
        weighted.push(ints(&format!("{split}_labels"), y));
        weighted.push(floats(&format!("{split}_weights"), vec![240], Scores::F64(w.clone())));
        repeated.push(floats(&format!("{split}_logits"), vec![ry.len(), 3], Scores::F32(rz)));
        repeated.push(ints(&format!("{split}_labels"), ry));
        if split == "test" {
            test_weights = w;
        }
    }
    let (a, b) = (dir.path("weighted.npz"), dir.path("repeated.npz"));
    write(&a, &weighted);
    write(&b, &repeated);
    (a.to_str().unwrap().into(), b.to_str().unwrap().into(), test_weights)
}

#[test]
fn eval_with_whole_number_weights_equals_repeated_rows() {
    let dir = Scratch::new("weights-eval");
    let (weighted, repeated, w) = dumps(&dir);
    let all = ["--metrics", "all", "--format", "json"];
    let by_key = metrics_of(
        &dir.calib(&[&["eval", &weighted, "--weights-key", "weights"][..], &all].concat()),
    );
    let plain = metrics_of(&dir.calib(&[&["eval", &repeated][..], &all].concat()));
    let mut a = by_key.clone();
    let mut b = plain.clone();
    // N itself is not a metric; everything else must agree.
    a.retain(|k, _| k != "n_samples");
    b.retain(|k, _| k != "n_samples");
    assert_same_metrics(&a, &b, 1e-6);
    let npy = dir.path("w.npy");
    write_npy(&npy, &[w.len() as u64], &w);
    let by_file = metrics_of(
        &dir.calib(&[&["eval", &weighted, "--weights", npy.to_str().unwrap()][..], &all].concat()),
    );
    assert_same_metrics(&by_file, &by_key, 0.0);
}

#[test]
fn fit_with_whole_number_weights_equals_repeated_rows() {
    let dir = Scratch::new("weights-fit");
    let (weighted, repeated, _) = dumps(&dir);
    for method in ["temperature", "isotonic", "affine"] {
        let fit = |data: &str, extra: &[&str], out: &str| {
            dir.calib(&[&["fit", method, data, "-o", out][..], extra].concat()).ok().to_string();
        };
        fit(&weighted, &["--weights-key", "weights"], "a.json");
        fit(&repeated, &[], "b.json");
        let eval = |params: &str| {
            let mut m = metrics_of(&dir.calib(&[
                "eval",
                &repeated,
                "--calibrator",
                params,
                "--format",
                "json",
            ]));
            m.retain(|_, v| v.is_f64());
            assert!(m.len() >= 8, "{m:?}");
            m
        };
        assert_same_metrics(&eval("a.json"), &eval("b.json"), 1e-6);
    }
}

#[test]
fn compare_takes_weights_and_fractional_weights_reach_every_fit() {
    let dir = Scratch::new("weights-compare");
    let (weighted, _, w) = dumps(&dir);
    let args = [
        "compare",
        &weighted,
        "--weights-key",
        "weights",
        "--methods",
        "temperature,isotonic,affine",
        "--format",
        "json",
    ];
    let got = dir.calib(&args).json();
    assert!(got.to_string().contains("isotonic"), "{got}");
    let half: Vec<f64> = w.iter().map(|x| x * 0.5 + 0.25).collect();
    let npy = dir.path("half.npy");
    write_npy(&npy, &[half.len() as u64], &half);
    let p = npy.to_str().unwrap();
    dir.calib(&["fit", "isotonic", &weighted, "--split", "test", "--weights", p, "-o", "i.json"])
        .ok();
    let fit = |method: &str| {
        let out = format!("{method}.json");
        dir.calib(&["fit", method, &weighted, "--split", "test", "--weights", p, "-o", &out])
    };
    fit("temperature").ok();
    fit("vector").ok();
    fit("matrix").ok();
    fit("dirichlet").ok();
    fit("lce").ok();
    let kernel = dir.calib(&["eval", &weighted, "--weights", p, "--metrics", "smece,lce_ece"]);
    assert!(kernel.ok().contains("smece"), "{}", kernel.ok());
}

#[test]
fn bad_weights_exit_2_with_one_line() {
    let dir = Scratch::new("weights-bad");
    let (weighted, _, w) = dumps(&dir);
    let npy = |name: &str, v: &[f64]| {
        let p = dir.path(name);
        write_npy(&p, &[v.len() as u64], v);
        p.to_str().unwrap().to_string()
    };
    let mut negative = w.clone();
    negative[5] = -1.0;
    let negative = npy("neg.npy", &negative);
    dir.calib(&["eval", &weighted, "--weights", &negative]).fails_with(&["row 5", "non-negative"]);
    let short = npy("short.npy", &w[..10]);
    dir.calib(&["eval", &weighted, "--weights", &short])
        .fails_with(&["240 score rows but 10 weights"]);
    let zeros = npy("zeros.npy", &vec![0.0; 240]);
    dir.calib(&["eval", &weighted, "--weights", &zeros])
        .fails_with(&["at least one must be positive"]);
    dir.calib(&["eval", &weighted, "--weights-key", "nope"]).fails_with(&["no array `nope`"]);
    let half = npy("half.npy", &w.iter().map(|x| x + 0.5).collect::<Vec<_>>());
    dir.calib(&["plot", &weighted, "--weights", &half, "--curve", "-o", "x.svg"]).ok();
}

/// `plot --weights`: the diagram's bins (and the curve) are those of the repeated rows.
#[test]
fn plot_with_whole_number_weights_draws_the_repeated_rows() {
    use burn::tensor::Device;
    use calib_cli::io::{DataSpec, Dataset};
    use calib_cli::plot::{DiagramConfig, ReliabilityDiagram};
    let dir = Scratch::new("weights-plot");
    let (weighted, repeated, w) = dumps(&dir);
    let spec = DataSpec::new(&weighted).with_split("test");
    let mut data = Dataset::load(&spec, "test").unwrap();
    let preds = data.take_predictions(&Device::flex()).unwrap().with_weights(w.clone()).unwrap();
    let plain =
        split(std::path::Path::new(&repeated), "test").take_predictions(&Device::flex()).unwrap();
    let config = DiagramConfig::new();
    let (a, b) = (
        ReliabilityDiagram::compute(&preds, &config).unwrap(),
        ReliabilityDiagram::compute(&plain, &config).unwrap(),
    );
    assert_eq!(a.n_samples, b.n_samples);
    assert!((a.calibration_error - b.calibration_error).abs() < 1e-12);
    for (x, y) in a.bins.iter().zip(&b.bins) {
        assert_eq!((x.count, x.interval), (y.count, y.interval));
    }
    let npy = dir.path("w.npy");
    write_npy(&npy, &[w.len() as u64], &w);
    let args = ["plot", &weighted, "--weights", npy.to_str().unwrap(), "--curve", "-o", "w.svg"];
    dir.calib(&args).ok();
    assert!(std::fs::read_to_string(dir.path("w.svg")).unwrap().contains("<svg"));
}

#[test]
fn weighted_rows_stream_in_chunks_and_shard_states() {
    let dir = Scratch::new("weights-chunked");
    let test = split(&densenet(), "test");
    let Scores::F32(z) = test.scores else { panic!("float32 dump") };
    let (n, k) = (test.n_samples, test.n_columns);
    let w: Vec<f64> =
        (0..n).map(|i| ((i * 7) % 5) as f64 * 0.5 + if i % 3 == 0 { 0.25 } else { 0.0 }).collect();
    let names = write_shards(&dir, &z, k, &test.labels, &[0, 3_000, n]);
    write_npy(&dir.path("w.npy"), &[n as u64], &w);
    write_npy(&dir.path("w0.npy"), &[3_000], &w[..3_000]);
    write_npy(&dir.path("w1.npy"), &[(n - 3_000) as u64], &w[3_000..]);
    let eval = |extra: &[&str]| {
        let base = ["eval", "z.npy", "--labels", "y.npy", "--weights", "w.npy", "--format", "json"];
        metrics_of(&dir.calib(&[&base[..], extra].concat()))
    };
    // The default set, adaptive ranges included: in memory, then in chunks and passes.
    let whole = eval(&[]);
    assert!(whole.contains_key("ace") && whole.contains_key("tace"));
    for rows in ["777", "10000"] {
        assert_same_metrics(&whole, &eval(&["--chunk-rows", rows]), 1e-12);
    }
    // Shard states (one read in chunks), merged.
    let statics = "ece,mce,sce,toplabel_ece,nll,brier,accuracy";
    for (i, (z, y)) in names.iter().enumerate() {
        let (weights, state) = (format!("w{i}.npy"), format!("s{i}.state"));
        let mut args = vec!["eval", z, "--labels", y, "--weights", &weights, "--metrics", statics];
        args.extend(["--save-state", &state]);
        if i == 1 {
            args.extend(["--chunk-rows", "999"]);
        }
        dir.calib(&args).ok();
    }
    let merged = metrics_of(&dir.calib(&["merge", "s0.state", "s1.state", "--format", "json"]));
    assert_same_metrics(&eval(&["--metrics", statics]), &merged, 1e-12);
    // A state of unweighted rows does not merge with them; weights must cover every row.
    let (z0, y0) = (&names[0].0, &names[0].1);
    dir.calib(&["eval", z0, "--labels", y0, "--metrics", statics, "--save-state", "u.state"]).ok();
    dir.calib(&["merge", "s1.state", "u.state"]).fails_with(&["weighted rows", "unweighted"]);
    let base = ["eval", "z.npy", "--labels", "y.npy", "--metrics", "ece,ace"];
    dir.calib(&[&base[..], &["--weights", "w0.npy", "--chunk-rows", "500"]].concat())
        .fails_with(&["score rows but 3000 weights"]);
}
