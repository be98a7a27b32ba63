//! Every metric on real CIFAR logit dumps equals the independent f64 reference
//! (`common/reference.rs`, plain loops over rows) to 1e-6, with both engines.

mod common;

use calib::{Engine, EvaluationConfig, Metric, Precision};
use common::reference as r;

fn check(name: &str) {
    let dump = common::load_dump(name, "test");
    let k = dump.n_classes;
    let probs = r::softmax(&dump.logits, k);
    let y = &dump.labels;
    let (plug, deb) = r::l2(&probs, y, 15);
    let expected = [
        (Metric::Ece, r::ece(&probs, y, 15)),
        (Metric::Mce, r::mce(&probs, y, 15)),
        (Metric::Rmsce, plug),
        (Metric::Sce, r::sce(&probs, y, 15)),
        (Metric::Ace, r::ace(&probs, y, 15, None)),
        (Metric::Tace, r::ace(&probs, y, 15, Some(0.01))),
        (Metric::ToplabelEce, r::toplabel_ece(&probs, y, 15)),
        (Metric::DebiasedL2, deb),
        (Metric::PluginL2, plug),
        (Metric::Nll, r::nll(&probs, y, &dump.logits)),
        (Metric::Brier, r::brier(&probs, y)),
        (Metric::Accuracy, r::accuracy(&probs, y)),
    ];
    let device = calib::backend::open_device("flex").unwrap();
    let preds = dump.on(&device);
    for engine in [Engine::Fused, Engine::Tensor] {
        let report = EvaluationConfig::new()
            .with_engine(engine)
            .with_precision(Precision::F64)
            .evaluate(&preds)
            .unwrap();
        for (metric, want) in expected {
            let got = report.get(metric).unwrap();
            assert!(
                (got - want).abs() <= 1e-6,
                "{name} {metric} {engine:?}: got {got}, reference {want}"
            );
        }
    }
}

#[test]
fn densenet40_cifar10() {
    check("densenet40_cifar10.npz");
}

#[test]
fn resnet110_cifar10_long_tailed() {
    check("resnet110_cifar10-lt.npz");
}

#[test]
fn lenet5_cifar100() {
    check("lenet5_cifar100.npz");
}

/// `data/README.md` lists test ECE-15 per file as the dumps' collector computed it, with the
/// same convention: densenet40 5.50 %, resnet50-focal 1.55 %, lenet5_cifar100 2.05 %,
/// resnet110-LT 19.14 %.
#[test]
fn published_ece_of_the_shipped_dumps() {
    let device = calib::backend::open_device("flex").unwrap();
    for (name, pct) in [
        ("densenet40_cifar10.npz", 5.50),
        ("resnet50-focal_cifar10.npz", 1.55),
        ("lenet5_cifar100.npz", 2.05),
        ("resnet110_cifar10-lt.npz", 19.14),
    ] {
        let preds = common::load_dump(name, "test").on(&device);
        let report =
            EvaluationConfig::new().with_metrics(vec![Metric::Ece]).evaluate(&preds).unwrap();
        let got = 100.0 * report.get(Metric::Ece).unwrap();
        assert!((got - pct).abs() < 0.005 + 1e-9, "{name}: ECE {got:.4} %, published {pct} %");
    }
}
