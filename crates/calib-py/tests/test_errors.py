"""Bad input raises ValueError or TypeError with calib's one-line message; nothing panics
across the boundary."""

import numpy as np
import pytest

import calib
from conftest import load


@pytest.fixture(scope="module")
def rows():
    _, _, z, y = load("densenet40_cifar10")
    return z[:200], y[:200]


def one_line(excinfo):
    text = str(excinfo.value)
    assert "\n" not in text and text, text
    return text


def test_scores_and_labels_that_do_not_fit(rows):
    z, y = rows
    cases = [
        (lambda: calib.evaluate(z, y[:-1]), ValueError, "label"),
        (lambda: calib.evaluate(z, y + 10), ValueError, "out of range"),
        (lambda: calib.evaluate(np.where(np.arange(z.size).reshape(z.shape) == 7, np.nan, z), y), ValueError, "NaN"),
        (lambda: calib.evaluate(z, y, ["nope"]), ValueError, "unknown metric"),
        (lambda: calib.evaluate(z, y, input="odds"), ValueError, "input must be"),
        (lambda: calib.evaluate(z, y, bins=0), ValueError, "n_bins"),
        (lambda: calib.evaluate(z, y, edges=[0.0, 0.7, 0.5, 1.0]), ValueError, "edges"),
        (lambda: calib.evaluate(z, y, weights=-np.ones(len(y))), ValueError, "weight"),
        (lambda: calib.evaluate(z, y, weights=np.zeros(len(y))), ValueError, "zero"),
        (lambda: calib.evaluate(z, y + 0.5), ValueError, "Unknown label type"),
        (lambda: calib.evaluate(z, np.array(["a"] * len(y))), ValueError, "Unknown label type"),
        (lambda: calib.evaluate(z, np.ones((len(y), 10))), ValueError, "one-hot"),
        (lambda: calib.evaluate(z[None], y), ValueError, "shape"),
        (lambda: calib.evaluate(z[:0], y[:0]), ValueError, "0 sample"),
        (lambda: calib.evaluate(z.astype(np.complex64), y), ValueError, "Complex"),
        (lambda: calib.evaluate(np.full(z.shape, 0.3), y, input="probs"), ValueError, "sum"),
        (lambda: calib.bootstrap(z, y, replicates=1), ValueError, "replicates"),
        (lambda: calib.reliability(z, y, class_index=10), ValueError, "out of range"),
        (lambda: calib.TemperatureScaling(max_iter=-1).fit(z, y), ValueError, "max-iter"),
        (lambda: calib.HistogramBinning(strategy="sideways").fit(z, y), ValueError, "sideways"),
        (lambda: calib.IsotonicRegression().fit(z[:, 0], y), ValueError, "feature"),
        (lambda: calib.load("/nonexistent/calibrator.json"), FileNotFoundError, "no such file"),
    ]
    for call, kind, words in cases:
        with pytest.raises(kind) as excinfo:
            call()
        assert words in one_line(excinfo), (words, str(excinfo.value))


def test_device_tensors_are_refused_with_a_clear_message(rows):
    z, y = rows

    class OnDevice:
        """What a CUDA tensor says through DLPack."""

        device = "cuda:0"

        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):  # pragma: no cover - never reached
            raise AssertionError("read")

    with pytest.raises(ValueError, match=r"\.cpu\(\)") as excinfo:
        calib.evaluate(OnDevice(), y)
    one_line(excinfo)


def test_torch_tensors_when_torch_is_there(rows):
    torch = pytest.importorskip("torch", reason="torch not installed: tensors not checked")
    z, y = rows
    want = calib.evaluate(z, y, ["ece", "nll"])
    t = torch.from_numpy(z).requires_grad_(True)
    assert calib.evaluate(t, torch.from_numpy(y), ["ece", "nll"]) == want
    assert calib.evaluate(t.to(torch.bfloat16), y, ["ece"])["ece"] == pytest.approx(want["ece"], abs=0.02)
    assert calib.ece(torch.from_numpy(z), torch.nn.functional.one_hot(torch.from_numpy(y), 10)) == want["ece"]


def test_a_corrupt_saved_calibrator(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError) as excinfo:
        calib.load(bad)
    one_line(excinfo)
