//! Recalibrates a CIFAR-style logits dump: fits temperature, vector, matrix, Dirichlet and
//! structured matrix scaling on the validation split, prints ECE / SCE / ACE / NLL / Brier / accuracy on the test
//! split before and after, and writes reliability diagrams before and after temperature scaling.
//!
//! ```text
//! cargo run --example recalibrate_cifar                                  # the shipped DenseNet-40 dump
//! cargo run --example recalibrate_cifar -- FILE.npz [OUT_DIR]            # val_/test_ logits, labels
//! ```
//! With no argument it runs on the real DenseNet-40 CIFAR-10 logits shipped in the
//! repository (`data/densenet40_cifar10.npz`: 5,000 validation and 10,000 test rows; see
//! `data/README.md`). The diagrams go to `OUT_DIR` (default: the current directory) as
//! `reliability_before.svg` and `reliability_after.svg`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use calib::burn::tensor::Device;
use calib::input::Predictions;
use calib::{EvaluationConfig, Metric};
use calib_cli::CliError;
use calib_cli::comparison::{Comparison, default_methods};
use calib_cli::io::{DataSpec, Dataset};
use calib_cli::plot::{DiagramConfig, ReliabilityDiagram, render};
use calib_train::{AnyCalibrator, Method, Reduction};

/// The default input: a real dump shipped in the repository.
const DEFAULT_DUMP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/densenet40_cifar10.npz");

fn load(path: &Path, device: &Device) -> Result<(Predictions, Predictions), CliError> {
    let spec = DataSpec::new(path);
    let mut val = Dataset::load(&spec.clone().with_split("val"), "val")?;
    let mut test = Dataset::load(&spec.with_split("test"), "test")?;
    Ok((val.take_predictions(device)?, test.take_predictions(device)?))
}

fn run(args: &[String]) -> Result<(), CliError> {
    let device = Device::flex();
    let path = Path::new(args.first().map_or(DEFAULT_DUMP, String::as_str));
    let (val, test) = load(path, &device)?;
    let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("data");
    let out_dir = PathBuf::from(args.get(1).map_or(".", String::as_str));
    println!(
        "{name}: fit on val (N = {}), measured on test (N = {}, K = {})",
        val.n_samples(),
        test.n_samples(),
        test.n_classes()
    );
    let metrics =
        vec![Metric::Ece, Metric::Sce, Metric::Ace, Metric::Nll, Metric::Brier, Metric::Accuracy];
    let eval = EvaluationConfig::new().with_metrics(metrics);
    let methods = default_methods(false);
    let comparison =
        Comparison::run(&val, &test, &methods, &eval, Reduction::OneVsRest, &mut |m| {
            eprintln!("fitting {m} ...")
        })?;
    print!("{}", comparison.table().render());
    for c in comparison.columns.iter().filter(|c| c.error.is_some()) {
        println!("{}: not fitted: {}", c.name, c.error.as_deref().unwrap_or_default());
    }

    let config = DiagramConfig::new();
    let before = ReliabilityDiagram::compute(&test, &config)?;
    let saved = comparison
        .column(Method::Temperature.name())
        .and_then(|c| c.saved.as_ref())
        .ok_or_else(|| CliError::Usage("temperature scaling was not fitted".into()))?;
    let calibrator =
        AnyCalibrator::from_saved(saved, &device).map_err(|e| CliError::train("temperature", e))?;
    let calibrated = calibrator.calibrate(&test).map_err(|e| CliError::train("temperature", e))?;
    let after = ReliabilityDiagram::compute(&calibrated, &config)?;
    for (diagram, what, file) in [
        (&before, "uncalibrated", "reliability_before.svg"),
        (&after, "after temperature scaling", "reliability_after.svg"),
    ] {
        let path = out_dir.join(file);
        let title = format!("{name} [test], {what}: ECE = {:.4}", diagram.calibration_error);
        render(diagram, &title, &path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
