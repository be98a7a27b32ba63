//! Evaluates every calibration metric of a CIFAR-style logits dump.
//!
//! ```text
//! cargo run --example evaluate                       # embedded synthetic dump
//! cargo run --example evaluate -- FILE.npz [SPLIT]   # a real dump ({split}_logits, {split}_labels)
//! ```
//! The embedded default is *synthetic*: 10,000 x 10 logits generated here with CIFAR-like
//! accuracy (~93 %) and the over-confidence of an uncalibrated ResNet, so the command works on
//! a fresh machine with no data.

use calib::burn::tensor::Device;
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::{EvaluationConfig, Metric};

/// 10,000 x 10 over-confident logits (~93 % accuracy, temperature 2.5).
fn synthetic() -> (Vec<f32>, Vec<i64>, usize) {
    let (logits, labels) = calib::synthetic::overconfident_logits(10_000, 10, 0.93, 2.5, 2017);
    (logits, labels, 10)
}

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
    let (source, data) = match args.first() {
        Some(path) => {
            let split = args.get(1).map_or("test", String::as_str);
            (format!("{path} [{split}]"), load(path, split))
        }
        None => ("embedded synthetic CIFAR-style dump (10,000 x 10)".to_string(), Ok(synthetic())),
    };
    let (logits, labels, k) = data.unwrap_or_else(|e| {
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
