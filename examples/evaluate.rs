//! Evaluates every calibration metric of a CIFAR-style logits dump.
//!
//! ```text
//! cargo run --example evaluate                       # the shipped DenseNet-40 dump, test split
//! cargo run --example evaluate -- FILE.npz [SPLIT]   # a dump with {split}_logits, {split}_labels
//! ```
//! The default is the real DenseNet-40 CIFAR-10 dump shipped in `data/` (see `data/README.md`).

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::{EvaluationConfig, Metric};

/// The default input: a real dump shipped in the repository.
const DEFAULT_DUMP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/densenet40_cifar10.npz");

fn load(path: &str, split: &str) -> Result<(Vec<f32>, Vec<i64>, usize), String> {
    let fail = |e: &dyn std::fmt::Display| format!("{path}: {e}");
    let mut npz = npyz::npz::NpzArchive::open(path).map_err(|e| fail(&e))?;
    let key = format!("{split}_logits");
    let logits = npz
        .by_name(&key)
        .map_err(|e| fail(&e))?
        .ok_or_else(|| fail(&format!("no array `{key}`")))?;
    let k = *logits.shape().get(1).ok_or_else(|| fail(&"logits are not 2-D"))? as usize;
    let logits: Vec<f32> = logits.into_vec().map_err(|e| fail(&e))?;
    let key = format!("{split}_labels");
    let labels = npz
        .by_name(&key)
        .map_err(|e| fail(&e))?
        .ok_or_else(|| fail(&format!("no array `{key}`")))?;
    let labels: Vec<i64> = labels.into_vec().map_err(|e| fail(&e))?;
    Ok((logits, labels, k))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().map_or(DEFAULT_DUMP, String::as_str);
    let split = args.get(1).map_or("test", String::as_str);
    let source = format!("{path} [{split}]");
    let (logits, labels, k) = load(path, split).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    let device = Device::flex();
    let preds =
        Predictions::from_host(&logits, k, &labels, InputConfig::new(ScoreKind::Logits), &device)
            .unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(2);
            });
    let report =
        EvaluationConfig::new().with_metrics(Metric::ALL.to_vec()).evaluate(&preds).unwrap();
    println!("{source}: N = {}, K = {}", report.n_samples, report.n_classes);
    for (name, value) in report.named_values() {
        println!("  {name:<20} {value:>10.6}");
    }
}
