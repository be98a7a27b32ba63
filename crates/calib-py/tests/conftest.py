"""Shared fixtures: the dumps shipped in data/, and the `calib` binary when one is built."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DUMPS = ["densenet40_cifar10", "resnet50-focal_cifar10", "resnet110_cifar10-lt", "lenet5_cifar100"]


def load(name: str):
    """(val_logits, val_labels, test_logits, test_labels) of a shipped dump."""
    d = np.load(DATA / f"{name}.npz")
    return d["val_logits"], d["val_labels"], d["test_logits"], d["test_labels"]


def softmax(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="session")
def cli():
    """The `calib` binary: $CALIB_BIN, else target/{debug,release}/calib, else on PATH; the
    tests that run it skip (saying so) where there is none."""
    named = os.environ.get("CALIB_BIN")
    if named and not (Path(named).is_file() and os.access(named, os.X_OK)):
        pytest.fail(f"CALIB_BIN={named} is not an executable file")
    candidates = [named]
    candidates += [str(REPO / "target" / p / "calib") for p in ("debug", "release")]
    candidates.append(shutil.which("calib"))
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    pytest.skip("no calib binary (set CALIB_BIN or run cargo build -p calib-cli): CLI parity not checked")
