//! Binning-free tests (KS, Kuiper, Spiegelhalter) against MAPIE 1.6 on real dumps.
//!
//! Expected values: `tests/fixtures/binning_free.npz`, produced by
//! `python3 tests/fixtures/binning_free.py` (mapie 1.6.0) from the test splits of
//! `data/lenet5_cifar100.npz` and `data/densenet40_cifar10.npz`.

mod common;

use calib::burn::tensor::Device;
use calib::metrics::BinningFreeTests;
use calib::pairs::{PairSet, ScorePairs};
use calib::{EvaluationConfig, Metric};
use common::fixtures::Fixture;
use common::load_dump;

/// calib's six values on `dump`'s test split, pairs `set`.
fn tests_of(dump: &str, set: PairSet) -> BinningFreeTests {
    let preds = load_dump(dump, "test").host_on(&Device::flex());
    BinningFreeTests::of(&ScorePairs::of(&preds, set).unwrap())
}

fn six(t: &BinningFreeTests) -> [f64; 6] {
    [t.ks, t.kuiper, t.spiegelhalter, t.ks_pvalue, t.kuiper_pvalue, t.spiegelhalter_pvalue]
}

/// Statistics equal MAPIE's to 1e-9 with its tie-breaking jitter off, and to 1e-6 (relative)
/// as shipped; KS and Kuiper p-values equal MAPIE's to its series' truncation (1e-8).
/// Spiegelhalter's p-value is two-sided here, one-sided in MAPIE.
#[test]
fn statistics_and_pvalues_equal_mapie() {
    let mut fx = Fixture::open("binning_free.npz");
    let cases = [
        ("lenet", "lenet5_cifar100.npz", PairSet::TopLabel),
        ("binary", "lenet5_cifar100.npz", PairSet::Class(0)),
        ("densenet", "densenet40_cifar10.npz", PairSet::TopLabel),
    ];
    for (name, dump, set) in cases {
        let (exact, jitter) =
            (fx.f64s(&format!("{name}_exact")), fx.f64s(&format!("{name}_jitter")));
        let ours = six(&tests_of(dump, set));
        for i in 0..3 {
            assert!((ours[i] - exact[i]).abs() <= 1e-9, "{name} statistic {i}: {ours:?} {exact:?}");
            let rel = (ours[i] - jitter[i]).abs() / jitter[i].abs();
            assert!(rel <= 1e-6, "{name} statistic {i} vs jittered MAPIE: {rel}");
        }
        for i in 3..5 {
            assert!((ours[i] - exact[i]).abs() <= 1e-7, "{name} p-value {i}: {ours:?} {exact:?}");
            assert!((0.0..=1.0).contains(&ours[i]), "{name} p-value {i}: {}", ours[i]);
        }
        let one_sided = exact[5];
        let two_sided = 2.0 * one_sided.min(1.0 - one_sided);
        assert!((ours[5] - two_sided).abs() <= 1e-12, "{name}: {} vs {two_sided}", ours[5]);
    }
}

/// DenseNet-40's top-label confidences are far from calibrated (KS = 46): MAPIE's KS p-value
/// is negative there (1 minus a truncated series that overshoots 1), calib's is the tail
/// probability itself, a positive number below 1e-300 or 0.
#[test]
fn mapie_ks_pvalue_goes_negative_where_calib_stays_a_probability() {
    let mut fx = Fixture::open("binning_free.npz");
    let mapie = fx.f64s("densenet_exact")[3];
    assert!(mapie < 0.0, "{mapie}");
    let ours = tests_of("densenet40_cifar10.npz", PairSet::TopLabel).ks_pvalue;
    assert!((0.0..1e-300).contains(&ours), "{ours}");
}

/// The metrics by name in an evaluation are the same values.
#[test]
fn evaluation_reports_the_tests_by_name() {
    let preds = load_dump("lenet5_cifar100.npz", "test").host_on(&Device::flex());
    let names =
        ["ks", "ks_pvalue", "kuiper", "kuiper_pvalue", "spiegelhalter", "spiegelhalter_pvalue"];
    let metrics: Vec<Metric> = names.iter().map(|n| Metric::from_name(n).unwrap()).collect();
    let report = EvaluationConfig::new().with_metrics(metrics).evaluate(&preds).unwrap();
    let direct = six(&BinningFreeTests::of(&ScorePairs::of(&preds, PairSet::TopLabel).unwrap()));
    let by_name: Vec<f64> =
        names.iter().map(|n| report.get(Metric::from_name(n).unwrap()).unwrap()).collect();
    let order = [0, 3, 1, 4, 2, 5];
    for (i, &j) in order.iter().enumerate() {
        assert_eq!(by_name[i], direct[j], "{}", names[i]);
    }
}
