//! The registry: the one list of metrics. [`Metric`](super::Metric) (its variants, names,
//! flags, report order and default set) is generated from it; the evaluation computes each
//! metric as its [`Computation`](super::Computation) says.
//!
//! A line: `Variant = "name" [| "alias"] [Flags]: Computation;`, in report order.
//! - `"name"`: the docs/conventions.md name (reports, `--metrics`, SQL's `calib_<name>`);
//! - flags: `Default` (in [`Metric::defaults`](super::Metric::defaults)), `TopLabel` (reads a
//!   row only through its argmax and largest probability);
//! - the computation: `Binned(|p| preset)` of the general calibration error,
//!   `BrierDecomposition(|p| preset)`, `Sum(RowSum::..)`, `Pairs(PairEstimator::..)` or
//!   `Refit(ProperLoss::.., LossPart::..)`.
//!
//! Adding a metric: one line here (docs/architecture.md, "Adding a metric").

/// Hands the registry to `$then!`.
macro_rules! metrics {
    ($then:ident) => {
        $then! {
            /// Top-label expected calibration error, even bins: `sum_b (n_b/N) |acc_b - conf_b|`.
            Ece = "ece" [Default TopLabel]: Binned(|p| p.even());
            /// Maximum calibration error: `max` over non-empty even bins of `|acc_b - conf_b|`.
            Mce = "mce" [Default TopLabel]: Binned(|p| p.even().with_norm(Norm::Max));
            /// Root-mean-square calibration error, top-label, adaptive ranges, mass-weighted.
            Rmsce = "rmsce" [Default TopLabel]: Binned(|p| p.adaptive().with_norm(Norm::L2));
            /// Static (class-wise) calibration error:
            /// `(1/K) sum_k sum_b (n_bk/N) |acc_bk - conf_bk|`.
            Sce = "sce" | "classwise_ece" [Default]: Binned(|p| {
                p.even().with_scores(ScoreSet::AllClasses).with_class_conditional(true)
            });
            /// Adaptive calibration error: `(1/(K R)) sum_k sum_r |acc_rk - conf_rk|`.
            Ace = "ace" [Default]: Binned(|p| {
                p.adaptive()
                    .with_scores(ScoreSet::AllClasses)
                    .with_class_conditional(true)
                    .with_bin_weighting(BinWeighting::Uniform)
            });
            /// Thresholded ACE: as ACE over the scores `p > eps` (eps = 0.01) of each class.
            Tace = "tace" [Default]: Binned(|p| {
                p.adaptive()
                    .with_scores(ScoreSet::AllClasses)
                    .with_class_conditional(true)
                    .with_threshold(Some(p.tace_threshold))
                    .with_bin_weighting(BinWeighting::Uniform)
            });
            /// Top-label ECE per predicted class (Gupta & Ramdas): `sum_c (N_c/N) ECE_c`.
            ToplabelEce = "toplabel_ece" [Default TopLabel]: Binned(|p| {
                p.even().with_class_conditional(true)
            });
            /// Debiased L2 calibration error (Kumar et al. 2019), top-label, adaptive R = 15.
            DebiasedL2 = "debiased_l2" [Default TopLabel]: Binned(|p| {
                p.adaptive().with_norm(Norm::L2).with_debias(true)
            });
            /// The plug-in L2 calibration error: the same sum without the bias correction.
            PluginL2 = "plugin_l2" [Default TopLabel]: Binned(|p| p.adaptive().with_norm(Norm::L2));
            /// Mean negative log-likelihood `-log p[i, y]` from log-softmax.
            Nll = "nll" [Default]: Sum(RowSum::Nll);
            /// Mean Brier score `sum_k (p[i,k] - 1[y = k])^2` (binary input: `(p - y)^2`).
            Brier = "brier" [Default]: Sum(RowSum::Brier);
            /// Murphy's decomposition of the Brier score over even class-wise bins.
            BrierDecomposition = "brier_decomposition" []: BrierDecomposition(|p| {
                p.even()
                    .with_scores(ScoreSet::AllClasses)
                    .with_class_conditional(true)
                    .with_norm(Norm::L2)
            });
            /// Fraction of samples whose argmax equals the label.
            Accuracy = "accuracy" [Default TopLabel]: Sum(RowSum::Correct);
            /// Kolmogorov-Smirnov statistic of the cumulative differences (top-label or binary).
            Ks = "ks" [TopLabel]: Pairs(PairEstimator::BinningFreeTests);
            /// Its p-value.
            KsPvalue = "ks_pvalue" [TopLabel]: Pairs(PairEstimator::BinningFreeTests);
            /// Kuiper statistic of the cumulative differences (top-label or binary).
            Kuiper = "kuiper" [TopLabel]: Pairs(PairEstimator::BinningFreeTests);
            /// Its p-value.
            KuiperPvalue = "kuiper_pvalue" [TopLabel]: Pairs(PairEstimator::BinningFreeTests);
            /// The unstandardised range of the cumulative differences with the origin
            /// (CalArena's `kuiper` on binary scores), top-label or binary.
            KuiperRange = "kuiper_range" [TopLabel]: Pairs(PairEstimator::BinningFreeTests);
            /// Spiegelhalter's z (top-label or binary).
            Spiegelhalter = "spiegelhalter" [TopLabel]: Pairs(PairEstimator::BinningFreeTests);
            /// Its two-sided p-value.
            SpiegelhalterPvalue = "spiegelhalter_pvalue" [TopLabel]:
                Pairs(PairEstimator::BinningFreeTests);
            /// Smooth ECE (Błasiok & Nakkiran 2023, relplot's definition, exact kernel),
            /// top-label or binary.
            Smece = "smece" [TopLabel]: Pairs(PairEstimator::SmoothEce);
            /// LCE-based ECE (Posocco & Bonnefoy): `(1/N) sum_i |RC(s_i) - s_i|`, the kernel
            /// reliability curve at each score, top-label or binary.
            LceEce = "lce_ece" [TopLabel]: Pairs(PairEstimator::LceEce);
            /// The NLL a temperature-and-mixture refit removes: `NLL(f) - NLL(g o f)`.
            CalibrationNll = "calibration_nll" []: Refit(ProperLoss::Nll, LossPart::Calibration);
            /// The NLL that remains after it: `NLL(g o f)`.
            RefinementNll = "refinement_nll" []: Refit(ProperLoss::Nll, LossPart::Refinement);
            /// The Brier score a temperature-and-mixture refit removes.
            CalibrationBrier = "calibration_brier" []:
                Refit(ProperLoss::Brier, LossPart::Calibration);
            /// The Brier score that remains after it.
            RefinementBrier = "refinement_brier" []: Refit(ProperLoss::Brier, LossPart::Refinement);
        }
    };
}

pub(crate) use metrics;
