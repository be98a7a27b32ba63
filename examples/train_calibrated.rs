//! Trains a small classifier three ways (cross-entropy, focal loss, cross-entropy + MMCE) on
//! data it generates, logs the validation ECE and ACE each epoch with calib's burn-train
//! metrics, then fits temperature scaling post hoc and compares all five on a test split.
//!
//! ```text
//! cargo run --release --example train_calibrated             # flex (CPU)
//! cargo run --release --features wgpu --example train_calibrated -- wgpu
//! ```
//! The data: 4 Gaussian classes in 10 dimensions with overlapping means, 600 training rows; a
//! 256-unit MLP trained for 40 epochs overfits them, the usual source of overconfidence.

use calib::burn::module::{Module, Param};
use calib::burn::optim::{AdamConfig, GradientsParams};
use calib::burn::tensor::activation::relu;
use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::input::Predictions;
use calib::synthetic::SplitMix64;
use calib::train::losses::{FocalLossConfig, MmceConfig};
use calib::train::{Calibrator, Fit, TemperatureScalingConfig};
use calib::{EvaluationConfig, Metric};
use calib_burn_train::burn_train::metric::{Metric as _, Numeric as _};
use calib_burn_train::{CalibrationInput, CalibrationMetric, metadata};

const K: usize = 4;
const D: usize = 10;
const HIDDEN: usize = 256;
const EPOCHS: usize = 40;
const BATCH: usize = 64;

/// Rows `[n, D]` and labels of the generated task.
struct Split {
    x: Vec<f32>,
    y: Vec<i64>,
}

fn generate(n: usize, rng: &mut SplitMix64, means: &[f64]) -> Split {
    let (mut x, mut y) = (Vec::with_capacity(n * D), Vec::with_capacity(n));
    for _ in 0..n {
        let class = rng.below(K);
        x.extend((0..D).map(|j| (means[class * D + j] + rng.normal()) as f32));
        y.push(class as i64);
    }
    Split { x, y }
}

#[derive(Module, Debug)]
struct Mlp {
    w1: Param<Tensor<2>>,
    b1: Param<Tensor<1>>,
    w2: Param<Tensor<2>>,
    b2: Param<Tensor<1>>,
}

impl Mlp {
    fn new(device: &Device, rng: &mut SplitMix64) -> Self {
        let mut weights = |rows: usize, cols: usize| {
            let scale = (2.0 / rows as f64).sqrt();
            let v: Vec<f32> = (0..rows * cols).map(|_| (rng.normal() * scale) as f32).collect();
            Param::from_tensor(Tensor::from_data(TensorData::new(v, [rows, cols]), device))
        };
        let (w1, w2) = (weights(D, HIDDEN), weights(HIDDEN, K));
        let zeros = |n: usize| Param::from_tensor(Tensor::zeros([n], device));
        Self { w1, b1: zeros(HIDDEN), w2, b2: zeros(K) }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h = relu(x.matmul(self.w1.val()) + self.b1.val().unsqueeze());
        h.matmul(self.w2.val()) + self.b2.val().unsqueeze()
    }
}

fn tensors(split: &Split, rows: &[usize], device: &Device) -> (Tensor<2>, Tensor<1, Int>) {
    let x: Vec<f32> = rows.iter().flat_map(|&i| split.x[i * D..(i + 1) * D].to_vec()).collect();
    let y: Vec<i64> = rows.iter().map(|&i| split.y[i]).collect();
    let x = Tensor::from_data(TensorData::new(x, [rows.len(), D]), device);
    (x, Tensor::from_data(y.as_slice(), device))
}

/// The three training objectives.
#[derive(Clone, Copy)]
enum Objective {
    CrossEntropy,
    Focal,
    CrossEntropyMmce,
}

impl Objective {
    fn name(self) -> &'static str {
        match self {
            Self::CrossEntropy => "cross-entropy",
            Self::Focal => "focal (gamma 3)",
            Self::CrossEntropyMmce => "cross-entropy + 8 MMCE",
        }
    }

    fn loss(self, logits: Tensor<2>, y: Tensor<1, Int>) -> Tensor<1> {
        let ce = FocalLossConfig::new().with_gamma(0.0).init();
        match self {
            Self::CrossEntropy => ce.forward(logits, y),
            Self::Focal => FocalLossConfig::new().init().forward(logits, y),
            Self::CrossEntropyMmce => {
                ce.forward(logits.clone(), y.clone())
                    + MmceConfig::new().init().forward(logits, y).mul_scalar(8.0)
            }
        }
    }
}

/// Trains with `objective`, printing the validation ECE and ACE after each epoch.
fn train(objective: Objective, data: &[Split; 3], device: &Device) -> Mlp {
    let ad = device.clone().autodiff();
    let mut rng = SplitMix64(7);
    let mut model = Mlp::new(&ad, &mut rng);
    let mut optimizer = AdamConfig::new().init();
    let (mut ece, mut ace) = (CalibrationMetric::ece(), CalibrationMetric::ace());
    let mut order: Vec<usize> = (0..data[0].y.len()).collect();
    let val_rows: Vec<usize> = (0..data[1].y.len()).collect();
    println!("{}:", objective.name());
    for epoch in 1..=EPOCHS {
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for batch in order.chunks(BATCH) {
            let (x, y) = tensors(&data[0], batch, &ad);
            let loss = objective.loss(model.forward(x), y);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(2e-3, model, grads);
        }
        let valid = model.valid();
        for rows in val_rows.chunks(256) {
            let (x, y) = tensors(&data[1], rows, device);
            let input = CalibrationInput::new(valid.forward(x), y);
            ece.update(&input, &metadata()).expect("ece");
            ace.update(&input, &metadata()).expect("ace");
        }
        ece.compute().expect("ece");
        ace.compute().expect("ace");
        if epoch % 10 == 0 {
            let (e, a) = (ece.final_value().current(), ace.final_value().current());
            println!("  epoch {epoch:>2}: val ECE {e:.4}  val ACE {a:.4}");
        }
        ece.clear();
        ace.clear();
    }
    model
}

fn predictions(model: &Mlp, split: &Split, device: &Device) -> Predictions {
    let rows: Vec<usize> = (0..split.y.len()).collect();
    let (x, y) = tensors(split, &rows, device);
    Predictions::logits(model.valid().forward(x), y).expect("finite logits")
}

fn main() {
    let backend = std::env::args().nth(1).unwrap_or_else(|| "flex".into());
    let device = calib::backend::open_device(&backend).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = SplitMix64(1);
    let means: Vec<f64> = (0..K * D).map(|_| 0.45 * rng.normal()).collect();
    let data = [600, 2000, 4000].map(|n| generate(n, &mut rng, &means));
    let metrics = vec![Metric::Ece, Metric::Ace, Metric::Nll, Metric::Accuracy];
    let eval = EvaluationConfig::new().with_metrics(metrics.clone());
    let mut rows = Vec::new();
    for objective in [Objective::CrossEntropy, Objective::Focal, Objective::CrossEntropyMmce] {
        let model = train(objective, &data, &device);
        let (val, test) =
            (predictions(&model, &data[1], &device), predictions(&model, &data[2], &device));
        rows.push((objective.name().to_string(), eval.evaluate(&test).expect("test metrics")));
        if !matches!(objective, Objective::CrossEntropyMmce) {
            let fitted = TemperatureScalingConfig::new().fit(&val).expect("temperature");
            let t = fitted.calibrator.temperature().expect("temperature");
            let calibrated = fitted.calibrator.calibrate(&test).expect("calibrated");
            let name = format!("{} + temperature (T = {t:.2})", objective.name());
            rows.push((name, eval.evaluate(&calibrated).expect("test metrics")));
        }
    }
    println!("\n{:<40}{:>9}{:>9}{:>9}{:>10}", "test (4,000 rows)", "ECE", "ACE", "NLL", "accuracy");
    for (name, report) in rows {
        let v: Vec<f64> = metrics.iter().map(|&m| report.get(m).unwrap_or(f64::NAN)).collect();
        println!("{name:<40}{:>9.4}{:>9.4}{:>9.4}{:>10.4}", v[0], v[1], v[2], v[3]);
    }
}
