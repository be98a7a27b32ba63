"""scikit-learn's estimator checks, every calibrator.

calib's estimators post-process a classifier's scores: column k of X is class k's logit or
probability, and y must index those columns. scikit-learn's generic checks feed feature
matrices with more classes than columns, string classes, or expect a classifier that learns
to predict; those checks do not apply to a post-processor and are listed below with why.
Every other check runs and passes.
"""

import pytest

import calib

sklearn = pytest.importorskip("sklearn", reason="scikit-learn not installed: its checks not run")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

COLUMNS_ARE_CLASSES = (
    "the check's y has more classes than X has columns; a calibrator's X columns are the "
    "classes, so its labels are out of range and calib refuses them"
)
NOT_A_LEARNER = (
    "a calibrator keeps (or barely moves) the argmax of the scores it is given: it cannot "
    "learn to predict labels from random features"
)
#: Checks that do not apply to any calibrator.
EVERY = {
    "check_classifier_data_not_an_array": COLUMNS_ARE_CLASSES,
    "check_classifiers_train": COLUMNS_ARE_CLASSES,
    "check_estimators_fit_returns_self": COLUMNS_ARE_CLASSES,
    "check_estimators_overwrite_params": COLUMNS_ARE_CLASSES,
    "check_readonly_memmap_input": COLUMNS_ARE_CLASSES,
    "check_sample_weights_not_an_array": COLUMNS_ARE_CLASSES,
    "check_sample_weights_not_overwritten": COLUMNS_ARE_CLASSES,
    "check_sample_weights_shape": COLUMNS_ARE_CLASSES,
    "check_classifiers_classes": "classes are score columns, indexed by integers: string labels are refused",
}
#: The methods that choose a strength by cross-validation over rows.
CROSS_VALIDATED = {"dirichlet", "lce", "spline"}
#: Methods whose map changes no row's argmax on one class's data (the others refuse it).
KEEPS_ARGMAX = {
    "affine", "bbq", "beta", "cdf-spline", "cir", "ece-temperature", "ets", "histogram",
    "isotonic", "lce", "platt", "quadratic", "scaling-binning", "spline", "temperature",
    "top-label", "venn-abers",
}


def expected_failures(estimator):
    method = estimator.method
    out = dict(EVERY)
    if method in KEEPS_ARGMAX:
        out["check_classifiers_one_label"] = NOT_A_LEARNER
    if method in CROSS_VALIDATED:
        out["check_sample_weight_equivalence_on_dense_data"] = (
            "chooses its strength by cross-validation over rows: a repeated row can fall in "
            "two folds, a weighted row in one"
        )
    if method == "dirichlet":
        out["check_fit2d_1sample"] = "5-fold cross-validation needs 5 rows; calib says so in its words"
    if method == "matrix":
        out["check_sample_weight_equivalence_on_dense_data"] = (
            "27 rows for K(K+1) = 930 parameters: calib refuses the unregularised fit"
        )
    return out


@parametrize_with_checks(
    [cls() for _, cls in sorted(calib.ESTIMATORS.items())],
    expected_failed_checks=expected_failures,
)
def test_sklearn_check(estimator, check):
    check(estimator)
