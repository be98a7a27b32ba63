"""CalibrationMetrics: batches, merges across processes, pickles, and `calib merge` reads its
state."""

import json
import pickle
import subprocess

import numpy as np
import pytest

import calib
from conftest import load


@pytest.fixture(scope="module")
def rows():
    _, _, z, y = load("resnet110_cifar10-lt")
    return z, y


def feed(m, z, y, size=1234):
    for i in range(0, len(y), size):
        m.update(z[i:i + size], y[i:i + size])
    return m


def test_batches_equal_the_whole(rows):
    z, y = rows
    metrics = ["ece", "ace", "nll", "brier", "tace", "accuracy", "smece"]
    got = feed(calib.CalibrationMetrics(metrics), z, y).compute()
    want = calib.evaluate(z, y, metrics)
    assert set(got) == set(want)
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-15), k


def test_merge_of_shards_equals_the_whole_and_pickles(rows):
    z, y = rows
    metrics = ["ece", "ace", "nll"]
    a = feed(calib.CalibrationMetrics(metrics), z[:6000], y[:6000])
    b = feed(calib.CalibrationMetrics(metrics), z[6000:], y[6000:])
    b = pickle.loads(pickle.dumps(b))  # as sent from another process
    merged = a.merge(b)
    assert merged.n_samples == len(y)
    want = calib.evaluate(z, y, metrics)
    assert merged.compute() == pytest.approx(want, rel=1e-12)
    assert a.n_samples == 6000  # merge leaves its inputs alone
    with pytest.raises(ValueError, match="different"):
        a.merge(calib.CalibrationMetrics(["ece"]))


def test_default_set_and_reset(rows):
    z, y = rows
    m = feed(calib.CalibrationMetrics(), z, y)
    assert m.metrics == list(calib.DEFAULT_METRICS)
    assert m.compute() == pytest.approx(calib.evaluate(z, y), rel=1e-12)
    m.reset()
    assert m.n_samples == 0


def test_weighted_batches(rows):
    z, y = rows
    w = np.random.default_rng(2).random(len(y))
    m = calib.CalibrationMetrics(["ece", "nll", "ace"])
    for i in range(0, len(y), 3000):
        m.update(z[i:i + 3000], y[i:i + 3000], weights=w[i:i + 3000])
    assert m.compute() == pytest.approx(calib.evaluate(z, y, ["ece", "nll", "ace"], weights=w), rel=1e-12)
    # A batch may weigh nothing (the whole set's weights must not).
    w[:3000] = 0.0
    m = calib.CalibrationMetrics(["ece", "nll", "ace"])
    for i in range(0, len(y), 3000):
        m.update(z[i:i + 3000], y[i:i + 3000], weights=w[i:i + 3000])
    assert m.compute() == pytest.approx(calib.evaluate(z, y, ["ece", "nll", "ace"], weights=w), rel=1e-12)


def test_state_for_calib_merge(cli, rows, tmp_path):
    z, y = rows
    a = feed(calib.CalibrationMetrics(["ece", "nll", "brier"]), z[:5000], y[:5000])
    b = feed(calib.CalibrationMetrics(["ece", "nll", "brier"]), z[5000:], y[5000:])
    a.save_state(tmp_path / "a.json")
    b.save_state(tmp_path / "b.state")
    out = subprocess.run([cli, "--quiet", "merge", str(tmp_path / "a.json"), str(tmp_path / "b.state"),
                          "--format", "json"], check=True, capture_output=True, text=True).stdout
    merged = json.loads(out)["metrics"]
    want = calib.evaluate(z, y, ["ece", "nll", "brier"])
    for k in want:
        assert merged[k] == pytest.approx(want[k], rel=1e-12), k
    state = calib._calib.StreamingState.load(str(tmp_path / "b.state"))
    assert state.n_samples == len(y) - 5000


def test_a_state_of_rows_only_says_so(rows):
    z, y = rows
    m = feed(calib.CalibrationMetrics(["ace"]), z[:100], y[:100])
    with pytest.raises(ValueError, match="one pass"):
        m.save_state("unused.json")
    with pytest.raises(ValueError, match="no rows"):
        calib.CalibrationMetrics(["ace"]).compute()
