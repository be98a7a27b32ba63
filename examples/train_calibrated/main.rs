//! Trains a small classifier three ways (cross-entropy, focal loss, cross-entropy + MMCE) on
//! data it generates with burn-train's `Learner`, which logs the validation ECE and ACE through
//! calib's burn-train metrics (a quiet renderer prints them every 10 epochs; burn-train's
//! summary follows each run), then fits temperature scaling post hoc and compares all five
//! on a test split.
//!
//! ```text
//! cargo run --release --example train_calibrated             # flex (CPU)
//! cargo run --release --features wgpu --example train_calibrated -- wgpu
//! ```
//! The data: 4 Gaussian classes in 10 dimensions with overlapping means, 600 training rows; a
//! 256-unit MLP trained for 40 epochs overfits them, the usual source of overconfidence.

use std::sync::Arc;

use calib::burn::data::dataloader::batcher::Batcher;
use calib::burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use calib::burn::data::dataset::InMemDataset;
use calib::burn::module::{Module, Param};
use calib::burn::optim::lr_scheduler::constant::ConstantLr;
use calib::burn::optim::{AdamConfig, ModuleOptimizer};
use calib::burn::tensor::activation::relu;
use calib::burn::tensor::{Device, Int, Tensor, TensorData};
use calib::input::Predictions;
use calib::synthetic::SplitMix64;
use calib::train::losses::{FocalLossConfig, MmceConfig};
use calib::train::{Calibrator, Fit, TemperatureScalingConfig};
use calib::{EvaluationConfig, Metric};
use calib_burn_train::CalibrationMetric;
use calib_burn_train::burn_train::metric::LossMetric;
use calib_burn_train::burn_train::{
    ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep,
};

mod quiet;
use quiet::Quiet;

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
    /// The training objective ([`Objective`] as a number, so that the model stays a `Module`).
    objective: usize,
}

impl Mlp {
    fn new(device: &Device, rng: &mut SplitMix64, objective: Objective) -> Self {
        let mut weights = |rows: usize, cols: usize| {
            let scale = (2.0 / rows as f64).sqrt();
            let v: Vec<f32> = (0..rows * cols).map(|_| (rng.normal() * scale) as f32).collect();
            Param::from_tensor(Tensor::from_data(TensorData::new(v, [rows, cols]), device))
        };
        let (w1, w2) = (weights(D, HIDDEN), weights(HIDDEN, K));
        let zeros = |n: usize| Param::from_tensor(Tensor::zeros([n], device));
        Self { w1, b1: zeros(HIDDEN), w2, b2: zeros(K), objective: objective as usize }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h = relu(x.matmul(self.w1.val()) + self.b1.val().unsqueeze());
        h.matmul(self.w2.val()) + self.b2.val().unsqueeze()
    }

    fn output(&self, batch: Batch) -> ClassificationOutput {
        let logits = self.forward(batch.x);
        let loss = Objective::ALL[self.objective].loss(logits.clone(), batch.y.clone());
        ClassificationOutput::new(loss, logits, batch.y)
    }
}

/// A batch of rows and labels.
#[derive(Clone, Debug)]
struct Batch {
    x: Tensor<2>,
    y: Tensor<1, Int>,
}

/// One row: features and label.
#[derive(Clone, Debug)]
struct Row(Vec<f32>, i64);

struct Rows;

impl Batcher<Row, Batch> for Rows {
    fn batch(&self, items: Vec<Row>, device: &Device) -> Batch {
        let y: Vec<i64> = items.iter().map(|r| r.1).collect();
        let x: Vec<f32> = items.into_iter().flat_map(|r| r.0).collect();
        let x = Tensor::from_data(TensorData::new(x, [y.len(), D]), device);
        Batch { x, y: Tensor::from_data(y.as_slice(), device) }
    }
}

impl TrainStep for Mlp {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> TrainOutput<ClassificationOutput> {
        let output = self.output(batch);
        TrainOutput::new(self, output.loss.backward(), output)
    }
}

impl InferenceStep for Mlp {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> ClassificationOutput {
        self.output(batch)
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
    const ALL: [Self; 3] = [Self::CrossEntropy, Self::Focal, Self::CrossEntropyMmce];

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

fn loader(split: &Split, shuffle: Option<u64>) -> Arc<dyn DataLoader<Batch>> {
    let rows: Vec<Row> = split
        .y
        .iter()
        .enumerate()
        .map(|(i, &y)| Row(split.x[i * D..(i + 1) * D].to_vec(), y))
        .collect();
    let builder = DataLoaderBuilder::new(Rows).batch_size(BATCH);
    let builder = match shuffle {
        Some(seed) => builder.shuffle(seed),
        None => builder,
    };
    builder.build(InMemDataset::new(rows))
}

/// Trains with `objective` through burn-train's `Learner`, the validation ECE and ACE
/// measured by calib's metrics.
fn train(objective: Objective, data: &[Split; 3], device: &Device) -> Mlp {
    let ad = device.clone().autodiff();
    let model = Mlp::new(&ad, &mut SplitMix64(7), objective);
    let optimizer: ModuleOptimizer = AdamConfig::new().init();
    let learner = Learner::new(model, optimizer, ConstantLr::new(2e-3));
    let directory =
        std::env::temp_dir().join(format!("calib-train-calibrated-{}", objective as usize));
    println!("{}:", objective.name());
    let result =
        SupervisedTraining::new(&directory, loader(&data[0], Some(7)), loader(&data[1], None))
            .metric_valid_numeric(CalibrationMetric::ece())
            .metric_valid_numeric(CalibrationMetric::ace())
            .metric_train_numeric(LossMetric::new())
            .with_application_logger(None)
            .renderer(Box::new(Quiet::default()))
            .num_epochs(EPOCHS)
            .launch(learner);
    if let Some(error) = result.error {
        panic!("training failed: {error}");
    }
    result.model
}

fn predictions(model: &Mlp, split: &Split, device: &Device) -> Predictions {
    let rows: Vec<usize> = (0..split.y.len()).collect();
    let (x, y) = tensors(split, &rows, device);
    Predictions::logits(model.forward(x), y).expect("finite logits")
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
    for objective in Objective::ALL {
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
