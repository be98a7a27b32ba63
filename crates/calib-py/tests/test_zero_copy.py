"""Scores are read where they lie: no copy of a C-contiguous float32/float64 array."""

import gc
import resource
import threading

import numpy as np
import pytest

import calib
from calib import _calib
from conftest import load


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_contiguous_scores_are_read_in_place(dtype):
    _, _, z, y = load("densenet40_cifar10")
    z = np.ascontiguousarray(z, dtype=dtype)
    assert _calib.read_address(z, y) == address(z)
    assert _calib.read_address(z[100:200], y[100:200]) == address(z[100:200])
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert _calib.read_address(p, y) == address(p)  # probabilities too


def test_other_layouts_are_copied_once():
    _, _, z, y = load("densenet40_cifar10")
    f = np.asfortranarray(z)
    copy = calib._inputs.as_scores(f)
    assert copy.flags.c_contiguous and address(copy) != address(f)
    assert address(calib._inputs.as_scores(z)) == address(z)


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_large_array_is_not_copied():
    # 256 MiB of float32 scores: a copy would raise the peak by as much; the metrics' own
    # buffers are a few MiB.
    rng = np.random.default_rng(0)
    n, k = 65_536, 1024
    z = rng.standard_normal((n, k), dtype=np.float32)
    y = rng.integers(0, k, size=n)
    gc.collect()
    before = peak_rss_mib()
    calib.evaluate(z, y, ["ece", "nll", "brier", "accuracy"])
    grown = peak_rss_mib() - before
    assert grown < 64, f"peak RSS grew by {grown:.0f} MiB for a 256 MiB input"


def test_threads_share_the_module():
    _, _, z, y = load("lenet5_cifar100")
    want = calib.evaluate(z, y)
    out = [None] * 4

    def run(i):
        out[i] = calib.evaluate(z, y)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(o == want for o in out)
