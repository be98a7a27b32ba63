//! The training losses: autodiff gradients against central finite differences (f64), and their
//! values against independent definitions (calib's NLL and ECE, a plain MMCE loop).

use calib::burn::tensor::{DType, Device, Int, Tensor, TensorData};
use calib::input::{InputConfig, Predictions, ScoreKind};
use calib::train::losses::{FocalLossConfig, MmceConfig, SoftBinnedEceConfig};
use calib::{EvaluationConfig, Metric};

type Loss = Box<dyn Fn(Tensor<2>, Tensor<1, Int>) -> Tensor<1>>;

fn losses() -> Vec<(&'static str, Loss)> {
    let focal = FocalLossConfig::new().init();
    let mmce = MmceConfig::new().init();
    let soft = SoftBinnedEceConfig::new().with_n_bins(5).with_temperature(0.05).init();
    let soft2 = SoftBinnedEceConfig::new().with_norm(2.0).with_temperature(0.02).init();
    vec![
        ("focal", Box::new(move |z, y| focal.forward(z, y))),
        ("mmce", Box::new(move |z, y| mmce.forward(z, y))),
        ("soft_ece", Box::new(move |z, y| soft.forward(z, y))),
        ("soft_ece_l2", Box::new(move |z, y| soft2.forward(z, y))),
    ]
}

fn logits(values: &[f64], k: usize, device: &Device) -> Tensor<2> {
    let data = TensorData::new(values.to_vec(), [values.len() / k, k]);
    Tensor::from_data(data, (device, DType::F64))
}

fn scalar(t: Tensor<1>) -> f64 {
    t.into_data().convert::<f64>().try_to_vec::<f64>().unwrap()[0]
}

fn data(n: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<i64>) {
    let (z, y) = calib::synthetic::overconfident_logits(n, k, 0.7, 2.0, seed);
    (z.iter().map(|&v| f64::from(v)).collect(), y)
}

#[test]
fn gradients_equal_central_differences() {
    let (k, device) = (4, Device::flex());
    let (z, y) = data(7, k, 5);
    let labels = |d: &Device| Tensor::<1, Int>::from_data(y.as_slice(), d);
    for (name, loss) in losses() {
        let ad = device.clone().autodiff();
        let input = logits(&z, k, &ad).require_grad();
        let grads = loss(input.clone(), labels(&ad)).backward();
        let grad = input.grad(&grads).unwrap().into_data().convert::<f64>().try_to_vec::<f64>();
        let h = 1e-6;
        for (i, g) in grad.unwrap().into_iter().enumerate() {
            let at = |d: f64| {
                let mut w = z.clone();
                w[i] += d;
                scalar(loss(logits(&w, k, &device), labels(&device)))
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            assert!((g - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "{name} [{i}]: {g} vs {fd}");
        }
    }
}

fn preds(z: &[f64], y: &[i64], k: usize) -> Predictions {
    Predictions::from_host(z, k, y, InputConfig::new(ScoreKind::Logits), &Device::flex()).unwrap()
}

/// gamma = 0 is cross-entropy: calib's NLL.
#[test]
fn focal_loss_at_gamma_0_is_the_nll() {
    let (k, device) = (5, Device::flex());
    let (z, y) = data(300, k, 2);
    let loss = FocalLossConfig::new().with_gamma(0.0).init();
    let got =
        scalar(loss.forward(logits(&z, k, &device), Tensor::from_data(y.as_slice(), &device)));
    let report =
        EvaluationConfig::new().with_metrics(vec![Metric::Nll]).evaluate(&preds(&z, &y, k));
    let want = report.unwrap().get(Metric::Nll).unwrap();
    assert!((got - want).abs() <= 1e-12, "{got} vs {want}");
}

/// As the temperature goes to 0 the soft bins become calib's even bins: SB-ECE (p = 1) is ECE.
#[test]
fn soft_binned_ece_tends_to_the_ece() {
    let (k, device) = (5, Device::flex());
    let (z, y) = data(600, k, 4);
    let loss = SoftBinnedEceConfig::new().with_n_bins(10).with_temperature(1e-9).init();
    let got =
        scalar(loss.forward(logits(&z, k, &device), Tensor::from_data(y.as_slice(), &device)));
    let ece = EvaluationConfig::new().with_metrics(vec![Metric::Ece]).with_n_bins(10);
    let want = ece.evaluate(&preds(&z, &y, k)).unwrap().get(Metric::Ece).unwrap();
    assert!((got - want).abs() <= 1e-9, "{got} vs {want}");
}

/// MMCE as a plain double loop over the pairs.
#[test]
fn mmce_equals_the_pairwise_sum() {
    let (k, device) = (3, Device::flex());
    let (z, y) = data(50, k, 8);
    let got = scalar(
        MmceConfig::new()
            .init()
            .forward(logits(&z, k, &device), Tensor::from_data(y.as_slice(), &device)),
    );
    let rows: Vec<(f64, f64)> = z
        .chunks(k)
        .zip(&y)
        .map(|(row, &label)| {
            let top = row.iter().cloned().fold(f64::MIN, f64::max);
            let sum: f64 = row.iter().map(|v| (v - top).exp()).sum();
            let arg = (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b });
            (1.0 / sum, f64::from(u8::from(arg as i64 == label)))
        })
        .collect();
    let mut total = 0.0;
    for &(ri, ci) in &rows {
        for &(rj, cj) in &rows {
            total += (ci - ri) * (cj - rj) * (-(ri - rj).abs() / 0.4).exp();
        }
    }
    let want = (total / 2500.0 + 1e-10).sqrt();
    assert!((got - want).abs() <= 1e-12, "{got} vs {want}");
}
