//! The `recalibrate_cifar` example on a real dump: temperature scaling lowers test ECE and NLL,
//! and both reliability diagrams are written.

use std::path::PathBuf;
use std::process::Command;

/// The example binary cargo built beside this test (`target/<profile>/examples/`).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("recalibrate_cifar{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "cargo test builds the examples first; missing {}", path.display());
    path
}

/// The value of `metric` in column `column` of the printed table.
fn cell(table: &str, metric: &str, column: &str) -> f64 {
    let header: Vec<&str> =
        table.lines().find(|l| l.starts_with("metric")).unwrap().split_whitespace().collect();
    let j = header.iter().position(|h| *h == column).unwrap();
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(metric))
        .unwrap_or_else(|| panic!("no row {metric} in\n{table}"))
        .split_whitespace()
        .collect();
    row[j].parse().unwrap()
}

#[test]
fn temperature_scaling_lowers_test_ece_and_nll_on_densenet40() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/densenet40_cifar10.npz");
    let out = std::env::temp_dir().join(format!("calib-example-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let run = Command::new(example()).arg(&data).arg(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    for metric in ["ece", "nll"] {
        let (before, after) =
            (cell(&stdout, metric, "uncalibrated"), cell(&stdout, metric, "temperature"));
        assert!(after < before, "{metric}: {before} -> {after}");
    }
    // Published ECE-15 of this dump's test split (data/README.md): 5.50 %.
    assert!((cell(&stdout, "ece", "uncalibrated") - 0.0550).abs() < 5e-5);
    assert_eq!(cell(&stdout, "accuracy", "temperature"), cell(&stdout, "accuracy", "uncalibrated"));
    for file in ["reliability_before.svg", "reliability_after.svg"] {
        let svg = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("ECE = "), "{file}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// With no argument, from any working directory, the example runs on the shipped dump.
#[test]
fn the_default_runs_on_the_shipped_densenet40_dump() {
    let out = std::env::temp_dir().join(format!("calib-example-default-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let run = Command::new(example()).current_dir(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}");
    assert!(stdout.starts_with("densenet40_cifar10.npz: fit on val (N = 5000)"), "{stdout}");
    assert!((cell(&stdout, "ece", "uncalibrated") - 0.0550).abs() < 5e-5);
    assert!(cell(&stdout, "ece", "temperature") < 0.5 * cell(&stdout, "ece", "uncalibrated"));
    assert!(out.join("reliability_after.svg").exists());
    std::fs::remove_dir_all(&out).unwrap();
}
