//! `calib eval --chunk-rows`: a .npy read in row chunks (and passes) gives the numbers of
//! reading it whole.

use calib_cli::io::Scores;

use crate::common::*;

const STATIC: &str = "ece,mce,sce,toplabel_ece,nll,brier,brier_decomposition,accuracy";

fn setup(dir: &Scratch) -> (Vec<f32>, Vec<i64>, u64, u64) {
    let test = split(&densenet(), "test");
    let Scores::F32(z) = test.scores else { panic!("float32 dump") };
    let (n, k) = (test.n_samples as u64, test.n_columns as u64);
    write_npy(&dir.path("z.npy"), &[n, k], &z);
    write_npy(&dir.path("y.npy"), &[n], &test.labels);
    (z, test.labels, n, k)
}

#[test]
fn chunked_equals_whole_with_and_without_a_calibrator() {
    let dir = Scratch::new("chunked");
    setup(&dir);
    let eval = |extra: &[&str]| {
        let mut a =
            vec!["eval", "z.npy", "--labels", "y.npy", "--metrics", STATIC, "--format", "json"];
        a.extend_from_slice(extra);
        metrics_of(&dir.calib(&a))
    };
    let whole = eval(&[]);
    for rows in ["1", "777", "10000", "20000"] {
        assert_same_metrics(&whole, &eval(&["--chunk-rows", rows]), 1e-12);
    }
    // The default set: adaptive ranges by further passes over the file.
    let all = |extra: &[&str]| {
        let mut a = vec!["eval", "z.npy", "--labels", "y.npy", "--format", "json"];
        a.extend_from_slice(extra);
        metrics_of(&dir.calib(&a))
    };
    let whole = all(&[]);
    assert!(whole.contains_key("ace") && whole.contains_key("tace"));
    for rows in ["1", "777", "20000"] {
        assert_same_metrics(&whole, &all(&["--chunk-rows", rows]), 1e-12);
    }
    dir.calib(&["fit", "vector", densenet().to_str().unwrap(), "-o", "v.json"]).ok();
    let whole = eval(&["--calibrator", "v.json"]);
    assert_same_metrics(&whole, &eval(&["--calibrator", "v.json", "--chunk-rows", "999"]), 1e-12);
}

#[test]
fn chunked_errors_name_rows_of_the_whole_file() {
    let dir = Scratch::new("chunked-err");
    let (mut z, mut y, n, k) = setup(&dir);
    z[(4_321 * k + 2) as usize] = f32::NAN;
    write_npy(&dir.path("nan.npy"), &[n, k], &z);
    let run = |args: &[&str]| dir.calib(args);
    run(&["eval", "nan.npy", "--labels", "y.npy", "--metrics", "ece", "--chunk-rows", "1000"])
        .fails_with(&["nan.npy", "row 4321"]);
    y[9_999] = 42;
    write_npy(&dir.path("bad_y.npy"), &[n], &y);
    run(&["eval", "z.npy", "--labels", "bad_y.npy", "--metrics", "ece", "--chunk-rows", "1000"])
        .fails_with(&["z.npy", "row 9999", "42"]);
    // Metrics on sorted pairs need every row: a clear refusal, not a wrong number.
    run(&["eval", "z.npy", "--labels", "y.npy", "--metrics", "ece,smece", "--chunk-rows", "1000"])
        .fails_with(&["smece", "all rows"]);
    run(&["eval", densenet().to_str().unwrap(), "--chunk-rows", "1000", "--metrics", "ece"])
        .fails_with(&["--chunk-rows", ".npy"]);
    let bytes = std::fs::read(dir.path("z.npy")).unwrap();
    std::fs::write(dir.path("cut.npy"), &bytes[..bytes.len() - 400]).unwrap();
    run(&["eval", "cut.npy", "--labels", "y.npy", "--metrics", "ece", "--chunk-rows", "1000"])
        .fails_with(&["cut.npy"]);
}
