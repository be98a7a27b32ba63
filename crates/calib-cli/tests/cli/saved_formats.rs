//! Calibrators saved before the registry (format `calib-calibrator/1`, every method, in
//! `tests/fixtures/saved_v1/`) still load and apply as they did when they were written.

use std::path::{Path, PathBuf};

use crate::common::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/saved_v1")
}

fn npz_f64(path: &Path, name: &str) -> Vec<f64> {
    let mut npz = npyz::npz::NpzArchive::open(path).unwrap();
    npz.by_name(name).unwrap().unwrap_or_else(|| panic!("no `{name}`")).into_vec().unwrap()
}

#[test]
fn format_1_files_of_every_method_load_and_apply_as_written() {
    let dir = fixtures();
    let scratch = Scratch::new("saved-v1");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .collect();
    names.sort();
    // Every method of the command line, K-class, and every binary map on binary scores.
    assert_eq!(names.len(), 24, "{names:?}");
    for name in &names {
        let params = dir.join(format!("{name}.json"));
        let out = scratch.path(&format!("{name}.npz"));
        let (params, out) = (params.to_str().unwrap(), out.to_str().unwrap());
        let data = if name.starts_with("binary-") { "small_binary.npz" } else { "small4.npz" };
        let data = dir.join(data);
        let mut args = vec!["apply", params, data.to_str().unwrap(), "--split", "val", "-o", out];
        if name.starts_with("binary-") {
            args.extend(["--input", "probs"]);
        }
        scratch.calib(&args).ok();
        let (got, want) =
            (npz_f64(Path::new(out), "probs"), npz_f64(&dir.join("applied.npz"), name));
        assert_eq!(got.len(), want.len(), "{name}");
        let diff = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(diff <= 1e-12, "{name}: applied probabilities moved by {diff:e}");
    }
}
