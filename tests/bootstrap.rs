//! Bootstrap intervals against a plain numpy bootstrap (independent random streams: the
//! interval ends agree within Monte-Carlo error).
//!
//! Expected values: `tests/fixtures/bootstrap.npz`, produced by
//! `python3 tests/fixtures/bootstrap.py` (numpy) from the test split of
//! `data/densenet40_cifar10.npz`.

mod common;

use calib::bootstrap::BootstrapConfig;
use calib::burn::tensor::Device;
use calib::{EvaluationConfig, Metric};
use common::fixtures::Fixture;
use common::load_dump;

/// 4,000 replicates each: a 5 % quantile's Monte-Carlo standard deviation is ~0.035 of the
/// standard error, so ends 0.3 standard errors apart would be a 6-sigma event.
#[test]
fn intervals_agree_with_numpy_within_monte_carlo_error() {
    let preds = load_dump("densenet40_cifar10.npz", "test").host_on(&Device::flex());
    let config = EvaluationConfig::new().with_metrics(vec![Metric::Ece, Metric::Nll]);
    let boot = BootstrapConfig::new().with_replicates(4000).with_seed(1);
    let (_, intervals) = config.bootstrap(&preds, &boot).unwrap();
    let mut fx = Fixture::open("bootstrap.npz");
    for i in intervals {
        let numpy = fx.f64s(&i.name);
        let se = numpy[3];
        assert!((i.estimate - numpy[0]).abs() < 1e-12, "{}: estimate", i.name);
        assert!((i.lower - numpy[1]).abs() < 0.3 * se, "{}: {} vs {}", i.name, i.lower, numpy[1]);
        assert!((i.upper - numpy[2]).abs() < 0.3 * se, "{}: {} vs {}", i.name, i.upper, numpy[2]);
        assert!((i.standard_error / se - 1.0).abs() < 0.1, "{}: se {}", i.name, i.standard_error);
    }
}
