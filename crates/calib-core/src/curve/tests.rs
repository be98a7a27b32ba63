use super::*;
use crate::bootstrap::BootstrapConfig;
use crate::synthetic::SplitMix64;

fn overconfident(n: usize, seed: u64) -> ScorePairs {
    let mut rng = SplitMix64(seed);
    let scores: Vec<f64> = (0..n).map(|_| rng.uniform().powf(0.3)).collect();
    let outcomes = scores.iter().map(|&s| f64::from(u8::from(rng.uniform() < s * s))).collect();
    ScorePairs { scores, outcomes }
}

/// The direct formula on real dumps, both kernels: `tests/reliability_curve.rs`. Here: the
/// box-moment path and the direct path agree (`smoother.rs`), and `lce_ece` is the curve's
/// mean |LCE| at the scores.
#[test]
fn lce_ece_is_the_mean_absolute_lce_at_the_scores() {
    let pairs = overconfident(2000, 9);
    let config = ReliabilityCurveConfig::new();
    let smoother = config.smoother(&pairs).unwrap();
    let want: f64 = pairs.scores.iter().map(|&s| (smoother.at(s) - s).abs()).sum::<f64>() / 2000.0;
    let got = config.lce_ece(&pairs).unwrap();
    assert!((got - want).abs() <= 1e-12, "{got} vs {want}");
    assert!(got > 0.1, "overconfident scores: {got}");
}

#[test]
fn constant_scores_need_a_bandwidth_for_the_curve_but_not_for_lce_ece() {
    let pairs = ScorePairs {
        scores: vec![0.7; 10],
        outcomes: [1.0; 6].into_iter().chain([0.0; 4]).collect(),
    };
    let config = ReliabilityCurveConfig::new();
    let Err(err) = config.curve(&pairs) else { panic!("constant scores gave a curve") };
    let err = err.to_string();
    assert!(err.contains("give one"), "{err}");
    assert!((config.lce_ece(&pairs).unwrap() - 0.1).abs() < 1e-15);
    let bad = ReliabilityCurveConfig::new().with_bandwidth(Some(-1.0)).curve(&pairs);
    let Err(bad) = bad else { panic!("a negative bandwidth gave a curve") };
    assert!(bad.to_string().contains("bandwidth must be positive"));
    let empty = ScorePairs { scores: vec![], outcomes: vec![] };
    assert!(config.curve(&empty).is_err() && config.lce_ece(&empty).is_err());
}

#[test]
fn bands_are_reproducible_on_any_thread_count_and_hold_the_curve() {
    let pairs = overconfident(1500, 2);
    let config = ReliabilityCurveConfig::new().with_grid_points(201);
    let boot =
        |threads| BootstrapConfig::new().with_replicates(64).with_seed(3).with_threads(threads);
    let (curve, one) = config.band(&pairs, &boot(1)).unwrap();
    let (_, three) = config.band(&pairs, &boot(3)).unwrap();
    assert_eq!(one, three);
    assert_eq!((one.replicates, one.level), (64, 0.9));
    // Where the scores are dense the band holds the curve and the median is near it.
    for g in 120..201 {
        assert!(one.lower[g] <= one.median[g] && one.median[g] <= one.upper[g]);
        assert!(
            one.lower[g] - 1e-9 <= curve.reliability[g]
                && curve.reliability[g] <= one.upper[g] + 1e-9,
            "g {g}"
        );
    }
}
