"""calib against its peers where their definitions match (values in fixtures/peers.json, made
offline by fixtures/peers.py; CI installs no peer)."""

import json

import numpy as np
import pytest

import calib
from conftest import DUMPS, FIXTURES, load, softmax

PEERS = json.loads((FIXTURES / "peers.json").read_text())
EPS64 = float(np.finfo(np.float64).eps)


@pytest.mark.parametrize("name", DUMPS)
def test_multiclass_metrics_equal_the_peers(name):
    peer = PEERS["multiclass"][name]
    _, _, z, y = load(name)
    ours = calib.evaluate(z, y, ["ece", "mce", "brier"])
    # netcal's ECE: 15 even bins of the top-label confidence, computed in f64: equal.
    assert ours["ece"] == pytest.approx(peer["netcal_ece_15"], abs=1e-12)
    # torchmetrics' multiclass_calibration_error (norm l1 / max) is the same estimator, but it
    # accumulates in float32 whatever the input's dtype: equal to float32's precision.
    assert ours["ece"] == pytest.approx(peer["torchmetrics_ece_l1_15"], abs=5e-6)
    assert ours["mce"] == pytest.approx(peer["torchmetrics_ece_max_15"], abs=5e-6)
    # scikit-learn's multiclass brier_score_loss: sum over classes, mean over rows: equal.
    assert ours["brier"] == pytest.approx(peer["sklearn_brier_multiclass"], rel=1e-12)
    # scikit-learn's log_loss clips probabilities at float64's epsilon: calib's NLL with
    # nll_eps=eps is the same number; without it calib keeps the exact log-softmax (larger where
    # a true class's probability underflows, as on DenseNet-40 and ResNet-110-LT).
    nll = calib.nll(z, y)
    clipped = calib.evaluate(z, y, ["nll"], nll_eps=EPS64)["nll"]
    assert clipped == pytest.approx(peer["sklearn_log_loss"], rel=1e-12)
    assert nll >= clipped


def test_binary_metrics_and_calibration_curve_equal_scikit_learn():
    peer = PEERS["binary"]["densenet40_cifar10_class0"]
    _, _, z, y = load("densenet40_cifar10")
    p, t = softmax(z)[:, 0], (y == 0).astype(np.int64)
    ours = calib.evaluate(p, t, ["brier", "nll"])
    assert ours["brier"] == pytest.approx(peer["sklearn_brier_score_loss"], rel=1e-12)
    assert ours["nll"] == pytest.approx(peer["sklearn_log_loss"], rel=1e-12)
    # calibration_curve(strategy="uniform") drops empty bins; calib keeps them as NaN.
    r = calib.reliability(p, t, bins=10, class_index=1)
    filled = r.counts > 0
    assert r.accuracies[filled] == pytest.approx(peer["sklearn_calibration_curve_10_prob_true"], rel=1e-12)
    assert r.confidences[filled] == pytest.approx(peer["sklearn_calibration_curve_10_prob_pred"], rel=1e-12)


def test_temperature_scaling_against_scikit_learn_and_netcal():
    peer = PEERS["temperature"]
    vz, vy, _, _ = load("densenet40_cifar10")
    t = calib.TemperatureScaling().fit(vz, vy).temperature_

    def nll(temperature):
        return calib.nll(vz.astype(np.float64) / temperature, vy)

    # scikit-learn's temperature (CalibratedClassifierCV(method="temperature")): the same fit,
    # stopped at its tolerance; calib's objective is as low or lower.
    sk = 1 / peer["sklearn_inverse_temperature"]
    assert t == pytest.approx(sk, rel=1e-4)
    assert nll(t) <= nll(sk) + 1e-12
    # netcal's on float64 probabilities: a looser stop.
    nc = 1 / peer["netcal_inverse_temperature_f64_probs"]
    assert t == pytest.approx(nc, rel=1e-3)
    assert nll(t) <= nll(nc)
    # netcal's on float32 probabilities returns without fitting (scipy's numerical gradient of
    # a float32 loss is zero): T stays 1, far from the optimum.
    assert peer["netcal_inverse_temperature_f32_probs"] == 1.0
    assert nll(1.0) > nll(t) + 0.1
