"""Metrics as functions: `evaluate`, `bootstrap`, `reliability`, `plot_reliability`, and one
function per metric name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

from . import _calib
from ._inputs import as_labels, as_scores, as_weights, warn

#: Every metric name `calib eval --metrics` takes, in calib's order.
METRICS: tuple[str, ...] = tuple(name for name, _, _ in _calib.metric_names())
#: The default set (`calib eval` without `--metrics`).
DEFAULT_METRICS: tuple[str, ...] = tuple(name for name, default, _ in _calib.metric_names() if default)


def _names(metrics: Optional[Sequence[str] | str]) -> Optional[list[str]]:
    if metrics is None:
        return None
    if isinstance(metrics, str):
        return [m for m in metrics.split(",")]
    return [str(m) for m in metrics]


def evaluate(
    scores: Any,
    labels: Any,
    metrics: Optional[Sequence[str] | str] = None,
    *,
    bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Any = None,
    input: str = "auto",
    nll_eps: Optional[float] = None,
    split_fits: Optional[int] = None,
) -> dict[str, float]:
    """The metrics of `scores` against `labels`, keyed by calib's metric names: what
    `calib eval --format json` prints under `"metrics"`.

    scores: logits or probabilities `[N, K]`, or positive-class scores `[N]` (NumPy arrays of
        any float dtype, or CPU tensors; C-contiguous float32/float64 are read in place).
    labels: class indices `[N]` (any integer dtype) or one-hot rows `[N, K]`.
    metrics: names (`calib.METRICS`), `"all"`, or None for the default set.
    bins: bins of the binned metrics (and equal-mass ranges of the adaptive ones).
    edges: custom bin edges from 0 to 1 instead of `bins` even bins.
    weights: per-row sample weights `[N]`.
    input: "auto" (probabilities when every row is in [0, 1] and sums to 1), "logits" or
        "probs".
    """
    values, messages = _calib.evaluate(
        as_scores(scores),
        as_labels(labels),
        input,
        _names(metrics),
        bins,
        _edges(edges),
        as_weights(weights),
        nll_eps,
        split_fits,
    )
    warn(messages)
    return dict(values)


def _edges(edges: Optional[Sequence[float]]) -> Optional[list[float]]:
    return None if edges is None else [float(e) for e in edges]


class Estimate(NamedTuple):
    """A metric on all rows with its bootstrap interval."""

    estimate: float
    lower: float
    upper: float
    standard_error: float


def bootstrap(
    scores: Any,
    labels: Any,
    metrics: Optional[Sequence[str] | str] = None,
    *,
    replicates: int = 1000,
    level: float = 0.9,
    seed: int = 0,
    interval: str = "percentile",
    bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Any = None,
    input: str = "auto",
    nll_eps: Optional[float] = None,
) -> dict[str, Estimate]:
    """Each metric with a bootstrap interval (`calib eval --bootstrap`): `replicates` resamples
    of the rows, a `level` interval ("percentile" or "basic"), reproducible from `seed`."""
    rows, messages = _calib.bootstrap(
        as_scores(scores),
        as_labels(labels),
        input,
        _names(metrics),
        bins,
        _edges(edges),
        as_weights(weights),
        nll_eps,
        None,
        replicates,
        level,
        seed,
        interval,
    )
    warn(messages)
    return {name: Estimate(e, lo, hi, se) for name, e, lo, hi, se in rows}


@dataclass(frozen=True)
class Reliability:
    """A reliability diagram's numbers, bin by bin (empty bins hold NaN)."""

    #: Left and right edge of each bin `[B]`.
    lower: np.ndarray
    upper: np.ndarray
    #: Rows (or their weight) in each bin `[B]`.
    counts: np.ndarray
    #: Mean confidence in each bin `[B]`.
    confidences: np.ndarray
    #: Accuracy (share of correct top-label predictions, or of the class) in each bin `[B]`.
    accuracies: np.ndarray
    #: Binomial acceptance interval of the accuracy under perfect calibration `[B, 2]`.
    intervals: np.ndarray
    #: Interval of the accuracy itself `[B, 2]`, when asked for (else None).
    accuracy_intervals: Optional[np.ndarray]
    #: Rows binned.
    n_samples: float
    #: `sum_b (n_b / N) |acc_b - conf_b|` over these bins (the ECE for top-label even bins).
    calibration_error: float

    @property
    def edges(self) -> np.ndarray:
        """The bin edges `[B + 1]`."""
        return np.append(self.lower, self.upper[-1:])


def reliability(
    scores: Any,
    labels: Any,
    *,
    bins: int = 15,
    adaptive: bool = False,
    edges: Optional[Sequence[float]] = None,
    class_index: Optional[int] = None,
    alpha: float = 0.05,
    accuracy_interval: Optional[str] = None,
    input: str = "auto",
) -> Reliability:
    """The numbers of `calib plot`'s reliability diagram: top-label confidence against
    accuracy (or class `class_index`'s probability against its frequency) in `bins` even bins,
    equal-mass ranges (`adaptive`) or custom `edges`, with `1 - alpha` acceptance intervals and,
    when asked ("clopper-pearson" or "wilson"), intervals of each bin's accuracy."""
    rows, n, error, messages = _calib.reliability(
        as_scores(scores),
        as_labels(labels),
        input,
        bins,
        adaptive,
        _edges(edges),
        class_index,
        alpha,
        accuracy_interval,
    )
    warn(messages)
    nan = float("nan")
    pair = lambda p: (nan, nan) if p is None else p  # noqa: E731
    column = lambda i: np.array([nan if r[i] is None else r[i] for r in rows], dtype=np.float64)  # noqa: E731
    return Reliability(
        lower=column(0),
        upper=column(1),
        counts=column(2),
        confidences=column(3),
        accuracies=column(4),
        intervals=np.array([pair(r[5]) for r in rows], dtype=np.float64).reshape(-1, 2),
        accuracy_intervals=(
            np.array([pair(r[6]) for r in rows], dtype=np.float64).reshape(-1, 2)
            if accuracy_interval is not None
            else None
        ),
        n_samples=n,
        calibration_error=error,
    )


def plot_reliability(scores: Any, labels: Any, *, ax: Any = None, title: Optional[str] = None, **options: Any) -> Any:
    """Draws the reliability diagram of `reliability(scores, labels, **options)` on `ax` (a new
    figure's axes when None) with matplotlib (`pip install matplotlib`); returns the axes."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("calib.plot_reliability needs matplotlib: pip install matplotlib") from None
    r = reliability(scores, labels, **options)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    width = r.upper - r.lower
    filled = r.counts > 0
    ax.bar(r.lower[filled], r.accuracies[filled], width=width[filled], align="edge",
           edgecolor="black", color="tab:blue", alpha=0.8, label="accuracy")
    ax.bar(r.lower[filled], r.confidences[filled] - r.accuracies[filled], bottom=r.accuracies[filled],
           width=width[filled], align="edge", color="tab:red", alpha=0.3, label="gap")
    centre = (r.lower + r.upper) / 2
    low, high = r.intervals[:, 0], r.intervals[:, 1]
    ok = filled & np.isfinite(low)
    ax.vlines(centre[ok], low[ok], high[ok], color="black", lw=1, label=f"{100 * (1 - options.get('alpha', 0.05)):g}% acceptance")
    ax.plot([0, 1], [0, 1], ls="--", color="gray")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.set_title(title or f"calibration error {r.calibration_error:.4f}")
    ax.legend(loc="upper left")
    return ax


def _metric_function(name: str) -> Callable[..., float]:
    def metric(
        scores: Any,
        labels: Any,
        *,
        n_bins: int = 15,
        edges: Optional[Sequence[float]] = None,
        weights: Any = None,
        input: str = "auto",
    ) -> Any:
        values = evaluate(scores, labels, [name], bins=n_bins, edges=edges, weights=weights, input=input)
        if name in values:
            return values[name]
        return values

    metric.__name__ = metric.__qualname__ = name
    metric.__doc__ = (
        f"calib's `{name}` of `scores` against `labels` (docs/conventions.md): "
        f"`evaluate(scores, labels, ['{name}'], bins=n_bins, ...)['{name}']`."
    )
    return metric


METRIC_FUNCTIONS: dict[str, Callable[..., Any]] = {name: _metric_function(name) for name in METRICS}
