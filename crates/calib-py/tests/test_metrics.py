"""Metrics from Python equal the command line's and independent f64 loops on the shipped dumps."""

import json
import subprocess

import numpy as np
import pytest

import calib
from conftest import DATA, DUMPS, load, softmax


def cli_metrics(cli, *args):
    out = subprocess.run([cli, "--quiet", "eval", *args, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["metrics"]


@pytest.mark.parametrize("name", DUMPS)
def test_default_set_equals_calib_eval(cli, name):
    _, _, z, y = load(name)
    ours = calib.evaluate(z, y)
    theirs = cli_metrics(cli, str(DATA / f"{name}.npz"))
    assert set(ours) == set(theirs)
    for k in theirs:
        assert ours[k] == pytest.approx(theirs[k], rel=1e-12, abs=1e-15), k


def test_every_metric_equals_calib_eval(cli):
    _, _, z, y = load("densenet40_cifar10")
    ours = calib.evaluate(z, y, "all", bins=10)
    theirs = cli_metrics(cli, str(DATA / "densenet40_cifar10.npz"), "--metrics", "all", "--bins", "10")
    assert set(ours) == set(theirs)
    for k in theirs:
        assert ours[k] == pytest.approx(theirs[k], rel=1e-12, abs=1e-15), k


def test_default_names_and_every_metric_function():
    assert calib.DEFAULT_METRICS == ("ece", "mce", "rmsce", "sce", "ace", "tace", "toplabel_ece",
                                     "debiased_l2", "plugin_l2", "nll", "brier", "accuracy")
    _, _, z, y = load("resnet50-focal_cifar10")
    z, y = z[:2000], y[:2000]
    every = calib.evaluate(z, y, "all")
    for name in calib.METRICS:
        value = getattr(calib, name)(z, y)
        if isinstance(value, dict):
            assert all(every[k] == v for k, v in value.items())
        else:
            assert value == every[name], name


def test_ece_equals_an_f64_loop():
    _, _, z, y = load("densenet40_cifar10")
    p = softmax(z)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    # 15 even right-closed bins (docs/conventions.md): bin b holds (b/15, (b+1)/15].
    b = np.clip(np.ceil(conf * 15).astype(int) - 1, 0, 14)
    ece = sum(abs((pred[b == i] == y[b == i]).mean() - conf[b == i].mean()) * (b == i).mean()
              for i in range(15) if (b == i).any())
    assert calib.ece(z, y) == pytest.approx(ece, abs=1e-9)
    nll = -np.log(p[np.arange(len(y)), y]).mean()
    assert calib.nll(z, y) == pytest.approx(nll, rel=1e-9)
    assert calib.ece(z, y, n_bins=15) == calib.evaluate(z, y, ["ece"], bins=15)["ece"]


def test_dtypes_layouts_and_label_forms_agree():
    _, _, z, y = load("densenet40_cifar10")
    z, y = z[:3000], y[:3000]
    want = calib.evaluate(z, y, ["ece", "nll", "brier", "ace"])
    z64 = z.astype(np.float64)
    for scores in (z64, np.asfortranarray(z), z64[:, ::-1][:, ::-1].copy()):
        got = calib.evaluate(scores, y, ["ece", "nll", "brier", "ace"])
        assert got == pytest.approx(want, rel=1e-12)
    for labels in (y.astype(np.int32), y.astype(np.uint8), y.astype(np.float64), np.eye(10)[y]):
        assert calib.evaluate(z, labels, ["ece", "nll", "brier", "ace"]) == want
    half = calib.evaluate(z.astype(np.float16), y, ["ece"])["ece"]
    assert half == calib.evaluate(z.astype(np.float16).astype(np.float32), y, ["ece"])["ece"]


def test_probabilities_and_logits_give_the_same_metrics():
    _, _, z, y = load("resnet50-focal_cifar10")
    p = softmax(z)
    from_logits = calib.evaluate(z.astype(np.float64), y, ["ece", "sce", "brier", "accuracy"])
    auto = calib.evaluate(p, y, ["ece", "sce", "brier", "accuracy"])
    explicit = calib.evaluate(p, y, ["ece", "sce", "brier", "accuracy"], input="probs")
    assert auto == explicit
    assert auto == pytest.approx(from_logits, abs=1e-12)
    with pytest.warns(calib.CalibWarning, match="look like probabilities"):
        calib.evaluate(p, y, ["ece"], input="logits")


def test_binary_scores_and_log_odds():
    _, _, z, y = load("densenet40_cifar10")
    p = np.clip(softmax(z)[:, 0], 1e-12, 1 - 1e-12)
    t = (y == 0).astype(np.int64)
    probs = calib.evaluate(p, t, ["ece", "nll", "brier"])
    log_odds = calib.evaluate(np.log(p) - np.log1p(-p), t, ["ece", "nll", "brier"], input="logits")
    assert probs == pytest.approx(log_odds, rel=1e-9)


def test_integer_weights_equal_repeated_rows():
    _, _, z, y = load("densenet40_cifar10")
    z, y = z[:500], y[:500]
    w = np.random.default_rng(0).integers(0, 4, size=len(y))
    w[0] = 1
    rows = np.repeat(np.arange(len(y)), w)
    weighted = calib.evaluate(z, y, ["ece", "nll", "brier", "ace", "sce"], weights=w)
    repeated = calib.evaluate(z[rows], y[rows], ["ece", "nll", "brier", "ace", "sce"])
    assert weighted == pytest.approx(repeated, rel=1e-12)


def test_bootstrap_equals_calib_eval_bootstrap(cli):
    _, _, z, y = load("densenet40_cifar10")
    ours = calib.bootstrap(z, y, ["ece", "nll"], replicates=200, seed=3, level=0.95)
    out = subprocess.run([cli, "--quiet", "eval", str(DATA / "densenet40_cifar10.npz"), "--metrics", "ece,nll",
                          "--bootstrap", "200", "--seed", "3", "--level", "0.95", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    theirs = json.loads(out)
    for name in ("ece", "nll"):
        assert ours[name].estimate == theirs["metrics"][name]
        assert [ours[name].lower, ours[name].upper] == pytest.approx(theirs["intervals"][name], rel=1e-12)
        assert ours[name].standard_error == pytest.approx(theirs["standard_errors"][name], rel=1e-12)
        assert ours[name].lower <= ours[name].estimate <= ours[name].upper


def test_reliability_reduces_to_the_ece():
    _, _, z, y = load("resnet110_cifar10-lt")
    r = calib.reliability(z, y, bins=15)
    assert r.calibration_error == pytest.approx(calib.ece(z, y), abs=1e-12)
    assert r.counts.sum() == len(y) == r.n_samples
    assert np.allclose(r.edges, np.linspace(0, 1, 16))
    filled = r.counts > 0
    assert np.all((r.intervals[filled, 0] <= r.confidences[filled]) & (r.confidences[filled] <= r.intervals[filled, 1]))
    assert r.accuracy_intervals is None
    wilson = calib.reliability(z, y, bins=10, accuracy_interval="wilson", adaptive=True)
    assert wilson.accuracy_intervals.shape == (10, 2)
    classwise = calib.reliability(z, y, bins=15, class_index=3)
    assert classwise.counts.sum() == len(y)


def test_plot_reliability_draws_when_matplotlib_is_there():
    plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib not installed: plot not drawn")
    _, _, z, y = load("densenet40_cifar10")
    ax = calib.plot_reliability(z, y, bins=10)
    assert ax.get_xlabel() == "confidence"
    plt.close("all")
