//! Every malformed input exits 2 with one line naming the file and the problem, and leaves no
//! partial output behind.

use calib_cli::io::Scores;

use crate::common::*;

/// A small valid dump (first 200 test rows of densenet40) and its pieces.
fn small(dir: &Scratch) -> (Vec<f32>, Vec<i64>, usize) {
    let test = split(&densenet(), "test");
    let k = test.n_columns;
    let Scores::F32(z) = &test.scores else { panic!("float32 dump") };
    let (z, y) = (z[..200 * k].to_vec(), test.labels[..200].to_vec());
    write(
        &dir.path("ok.npz"),
        &[floats("logits", vec![200, k], Scores::F32(z.clone())), ints("labels", y.clone())],
    );
    (z, y, k)
}

#[test]
fn missing_files_keys_and_unknown_formats() {
    let dir = Scratch::new("err-files");
    small(&dir);
    dir.calib(&["eval", "nothere.npz"]).fails_with(&["nothere.npz", "no such file"]);
    std::fs::write(dir.path("data.txt"), "1,2\n").unwrap();
    dir.calib(&["eval", "data.txt"]).fails_with(&["data.txt", "unknown file type"]);
    dir.calib(&["eval", "ok.npz", "--logits-key", "scores"])
        .fails_with(&["ok.npz", "`scores`", "`logits`"]);
    dir.calib(&["eval", "ok.npz", "--split", "train"]).fails_with(&["ok.npz", "train_logits"]);
    dir.calib(&["eval", "ok.npz", "--labels-key", "y"]).fails_with(&["ok.npz", "no array `y`"]);
    write_npy(&dir.path("z.npy"), &[2, 2], &[0.0f32, 1.0, 1.0, 0.0]);
    dir.calib(&["eval", "z.npy"]).fails_with(&["z.npy", "--labels"]);
    dir.calib(&["eval", "ok.npz", "--calibrator", "none.json"])
        .fails_with(&["none.json", "no such file"]);
    std::fs::write(dir.path("bad.json"), "{not json").unwrap();
    dir.calib(&["eval", "ok.npz", "--calibrator", "bad.json"]).fails_with(&["bad.json"]);
}

#[test]
fn corrupt_and_truncated_files() {
    let dir = Scratch::new("err-corrupt");
    small(&dir);
    let bytes = std::fs::read(dir.path("ok.npz")).unwrap();
    std::fs::write(dir.path("cut.npz"), &bytes[..bytes.len() / 2]).unwrap();
    dir.calib(&["eval", "cut.npz"]).fails_with(&["cut.npz"]);
    std::fs::write(dir.path("junk.npz"), b"this is not a zip archive").unwrap();
    dir.calib(&["eval", "junk.npz"]).fails_with(&["junk.npz", "not a valid .npz"]);
    write_npy(&dir.path("z.npy"), &[100, 10], &vec![0.5f32; 1000]);
    write_npy(&dir.path("y.npy"), &[100], &vec![1i64; 100]);
    let bytes = std::fs::read(dir.path("z.npy")).unwrap();
    std::fs::write(dir.path("zcut.npy"), &bytes[..bytes.len() - 40]).unwrap();
    dir.calib(&["eval", "zcut.npy", "--labels", "y.npy"]).fails_with(&["zcut.npy", "truncated"]);
    std::fs::write(dir.path("junk.safetensors"), b"\x05\x00\x00\x00\x00\x00\x00\x00{{{{{").unwrap();
    dir.calib(&["eval", "junk.safetensors"]).fails_with(&["junk.safetensors", "not a valid"]);
    std::fs::write(dir.path("ragged.csv"), "1,2,0\n3,4\n").unwrap();
    dir.calib(&["eval", "ragged.csv"]).fails_with(&["ragged.csv"]);
    std::fs::write(dir.path("text.csv"), "a,b,label\n0.1,0.9,1\n0.2,oops,0\n").unwrap();
    dir.calib(&["eval", "text.csv"]).fails_with(&["text.csv", "line 3, column 2", "oops"]);
}

#[test]
fn bad_values_name_the_first_offending_row() {
    let dir = Scratch::new("err-values");
    let (z, y, k) = small(&dir);
    let put = |name: &str, z: &[f32], y: &[i64]| {
        write(
            &dir.path(name),
            &[
                floats("logits", vec![y.len(), k], Scores::F32(z.to_vec())),
                ints("labels", y.to_vec()),
            ],
        );
    };
    let mut nan = z.clone();
    nan[37 * k + 3] = f32::NAN;
    put("nan.npz", &nan, &y);
    dir.calib(&["eval", "nan.npz"]).fails_with(&["nan.npz", "37"]);
    let mut inf = z.clone();
    inf[5 * k] = f32::INFINITY;
    put("inf.npz", &inf, &y);
    dir.calib(&["eval", "inf.npz"]).fails_with(&["inf.npz", "5"]);
    let mut out = y.clone();
    out[12] = 10;
    put("range.npz", &z, &out);
    dir.calib(&["eval", "range.npz"]).fails_with(&["range.npz", "12", "10"]);
    let mut neg = y.clone();
    neg[3] = -1;
    put("neg.npz", &z, &neg);
    dir.calib(&["eval", "neg.npz"]).fails_with(&["neg.npz", "-1"]);
    // Lengths that disagree.
    write(
        &dir.path("short.npz"),
        &[
            floats("logits", vec![200, k], Scores::F32(z.clone())),
            ints("labels", y[..150].to_vec()),
        ],
    );
    dir.calib(&["eval", "short.npz"]).fails_with(&["short.npz", "200", "150"]);
    // Integer scores, fractional labels, 3-D arrays.
    write_npy(&dir.path("int.npy"), &[2, 2], &[1i64, 0, 0, 1]);
    write_npy(&dir.path("y2.npy"), &[2], &[0i64, 1]);
    dir.calib(&["eval", "int.npy", "--labels", "y2.npy"]).fails_with(&["int.npy", "int64"]);
    write_npy(&dir.path("z2.npy"), &[2, 2], &[1.0f32, 0.0, 0.0, 1.0]);
    write_npy(&dir.path("yf.npy"), &[2], &[0.0f64, 0.5]);
    dir.calib(&["eval", "z2.npy", "--labels", "yf.npy"]).fails_with(&["yf.npy", "0.5"]);
    write_npy(&dir.path("z3.npy"), &[2, 1, 2], &[1.0f32, 0.0, 0.0, 1.0]);
    dir.calib(&["eval", "z3.npy", "--labels", "y2.npy"]).fails_with(&["z3.npy", "2-D"]);
    // Probabilities that are not.
    write_npy(&dir.path("p.npy"), &[2, 2], &[0.7f32, 0.7, 0.5, 0.5]);
    dir.calib(&["eval", "p.npy", "--labels", "y2.npy", "--input", "probs"])
        .fails_with(&["p.npy", "row 0"]);
    // Empty input.
    write_npy(&dir.path("empty.npy"), &[0, 3], &[] as &[f32]);
    write_npy(&dir.path("ye.npy"), &[0], &[] as &[i64]);
    dir.calib(&["eval", "empty.npy", "--labels", "ye.npy"]).fails_with(&["empty.npy", "no scores"]);
}

#[test]
fn bad_settings_are_usage_errors() {
    let dir = Scratch::new("err-usage");
    small(&dir);
    dir.calib(&["eval", "ok.npz", "--metrics", "ece,foo"]).fails_with(&["unknown metric `foo`"]);
    dir.calib(&["eval", "ok.npz", "--backend", "tpu"]).fails_with(&["unknown backend `tpu`"]);
    dir.calib(&["eval", "ok.npz", "--bins", "0"]).fails_with(&["bins"]);
    dir.calib(&["fit", "wavelet", "ok.npz", "-o", "c.json"])
        .fails_with(&["unknown method `wavelet`", "isotonic"]);
    dir.calib(&["fit", "histogram", "ok.npz", "--bins", "0", "-o", "c.json"])
        .fails_with(&["n_bins"]);
    dir.calib(&[
        "fit",
        "top-label",
        "ok.npz",
        "--base",
        "histogram",
        "--bins",
        "0",
        "-o",
        "c.json",
    ])
    .fails_with(&["n_bins"]);
    dir.calib(&["plot", "ok.npz", "--class", "10", "-o", "x.svg"])
        .fails_with(&["--class 10", "K = 10"]);
    dir.calib(&["plot", "ok.npz", "-o", "x.jpg"]).fails_with(&["x.jpg", ".svg or .png"]);
    dir.calib(&["bench", "--sizes", "10x"]).fails_with(&["10x", "NxK"]);
    // clap's own usage errors also exit 2.
    let run = dir.calib(&["eval"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(dir.calib(&["--help"]).code, 0);
    assert!(dir.files().iter().all(|f| f == "ok.npz"), "{:?}", dir.files());
}

#[test]
fn failed_runs_leave_existing_outputs_untouched() {
    let dir = Scratch::new("err-atomic");
    let (z, y, k) = small(&dir);
    assert_eq!(dir.calib(&["fit", "temperature", "ok.npz", "-o", "t.json"]).code, 0);
    std::fs::write(dir.path("out.npz"), b"precious").unwrap();
    std::fs::write(dir.path("keep.json"), b"precious").unwrap();
    let mut nan = z;
    nan[k] = f32::NAN;
    write(
        &dir.path("nan.npz"),
        &[floats("logits", vec![200, k], Scores::F32(nan)), ints("labels", y)],
    );
    dir.calib(&["apply", "t.json", "nan.npz", "-o", "out.npz"]).fails_with(&["nan.npz"]);
    dir.calib(&["fit", "vector", "nan.npz", "-o", "keep.json"]).fails_with(&["nan.npz"]);
    dir.calib(&["apply", "t.json", "ok.npz", "-o", "out.txt"])
        .fails_with(&["out.txt", ".npy or .npz"]);
    dir.calib(&["apply", "t.json", "ok.npz", "-o", "nodir/out.npz"]).fails_with(&["nodir/out.npz"]);
    assert_eq!(std::fs::read(dir.path("out.npz")).unwrap(), b"precious");
    assert_eq!(std::fs::read(dir.path("keep.json")).unwrap(), b"precious");
    assert_eq!(dir.files(), ["keep.json", "nan.npz", "ok.npz", "out.npz", "t.json"]);
}
