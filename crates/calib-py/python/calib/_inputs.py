"""Arrays from Python as calib takes them: scores as C-contiguous float32/float64 (read in
place when they already are), labels as int64 class indices, weights as float64."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

_CPU = 1  # DLPack's kDLCPU


class CalibWarning(UserWarning):
    """Something about the input worth knowing (probabilities passed as logits, zero
    probabilities floored before their logarithm)."""


def _array(x: Any, what: str) -> np.ndarray:
    """A NumPy view of `x`: NumPy arrays as they are, CPU tensors (torch, JAX, CuPy...)
    through DLPack without a copy, anything else through `numpy.asarray`."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "toarray") and hasattr(x, "nnz"):  # scipy.sparse
        raise TypeError(f"{what}: sparse input is not supported: pass a dense array (x.toarray())")
    if hasattr(x, "__dlpack_device__"):
        device = x.__dlpack_device__()[0]
        if int(device) != _CPU:
            raise ValueError(
                f"{what}: calib reads host memory; this tensor is on a device "
                f"({_device_name(x)}): move it with .cpu() first"
            )
        if hasattr(x, "detach"):  # torch: drop the autograd graph
            x = x.detach()
        if str(getattr(x, "dtype", "")) == "torch.bfloat16":
            x = x.float()
        try:
            return np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError):
            pass
    try:
        return np.asarray(x)
    except Exception as e:  # noqa: BLE001 - any conversion failure is the caller's input
        raise TypeError(f"{what}: cannot be read as an array ({e})") from None


def _device_name(x: Any) -> str:
    device = getattr(x, "device", None)
    return str(device) if device is not None else "not the CPU"


def as_scores(x: Any) -> np.ndarray:
    """Scores `[N]` (binary) or `[N, K]` as C-contiguous float32 or float64: no copy when they
    already are; float16 and bfloat16 widen to float32, integers to float64, other layouts
    (Fortran order, strides, foreign byte order) are copied to C order."""
    a = _array(x, "scores")
    if a.dtype.kind == "f":
        if a.dtype.itemsize < 4:
            a = a.astype(np.float32)
        elif a.dtype.itemsize > 8:
            a = a.astype(np.float64)
    elif a.dtype.kind in "iub":
        a = a.astype(np.float64)
    elif a.dtype.kind == "c":
        raise ValueError("scores: Complex data not supported")
    elif a.dtype.kind == "O":
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"scores must be numbers: {e}") from None
    else:
        raise TypeError(f"scores must be numbers, got dtype {a.dtype}")
    if a.ndim not in (1, 2):
        raise ValueError(f"scores must be [N] (binary) or [N, K], got shape {a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"scores: 0 sample(s) (shape={a.shape}) while a minimum of 1 is required.")
    if a.ndim == 2 and a.shape[1] == 0:
        raise ValueError(f"scores: 0 feature(s) (shape={a.shape}) while a minimum of 1 is required.")
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return np.ascontiguousarray(a)


def as_labels(y: Any) -> np.ndarray:
    """Labels as int64 class indices `[N]`: any integer or boolean dtype, whole-valued floats,
    or one-hot rows `[N, K]` (one 1 per row)."""
    if y is None:
        raise ValueError("calib requires y to be passed, but the target y is None")
    a = _array(y, "labels")
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim == 2:
        if a.dtype.kind not in "iubf" or not np.isin(a, (0, 1)).all() or (a.sum(axis=1) != 1).any():
            raise ValueError("labels: 2-D labels must be one-hot rows (one 1 per row, zeros elsewhere)")
        a = a.argmax(axis=1)
    if a.ndim != 1:
        raise ValueError(f"labels must be [N] class indices or [N, K] one-hot rows, got shape {a.shape}")
    if a.dtype.kind == "f":
        if not np.isfinite(a).all() or (a != np.round(a)).any():
            raise ValueError(
                "Unknown label type: continuous: labels must be class indices (whole numbers), "
                "not fractions or NaN"
            )
    elif a.dtype.kind not in "iub":
        raise ValueError(
            f"Unknown label type: labels must be class indices (integers) or one-hot rows, "
            f"got dtype {a.dtype}"
        )
    return np.ascontiguousarray(a, dtype=np.int64)


def as_weights(w: Any) -> np.ndarray | None:
    """Sample weights `[N]` as float64, or None."""
    if w is None:
        return None
    a = _array(w, "weights")
    if a.dtype.kind not in "iubf":
        raise TypeError(f"weights must be numbers, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"weights must be [N], got shape {a.shape}")
    return a


def warn(messages: list[str], stacklevel: int = 3) -> None:
    """Issues calib's warnings about the input as `CalibWarning`s."""
    for message in messages:
        warnings.warn(message, CalibWarning, stacklevel=stacklevel)
