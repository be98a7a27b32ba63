"""`CalibrationMetrics`: metrics accumulated batch by batch, merged across processes."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import _calib
from ._inputs import as_labels, as_scores, as_weights, warn
from ._metrics import _edges, _names, evaluate


class CalibrationMetrics:
    """Calibration metrics over batches, in torchmetrics' style::

        m = calib.CalibrationMetrics(["ece", "ace", "nll"])
        for logits, y in batches:
            m.update(logits, y)
        m.compute()          # {"ece": ..., "ace": ..., "nll": ...}
        m.merge(other)       # the metrics of both objects' rows

    The metrics that one pass computes (even and custom bins, NLL, Brier, accuracy) live in
    calib's mergeable evaluation state, of constant size: `save_state(path)` writes it for
    `calib merge`, and `merge` adds another process's. The others (equal-mass ranges such as
    ACE and TACE, the binning-free tests, smooth ECE) need every row at once, so the object
    keeps a copy of the batches for them, as torchmetrics' list states do; `compute` evaluates
    them on all rows. Either way `compute()` equals `calib.evaluate` on the concatenated rows.
    Objects pickle (send them between processes to merge).
    """

    def __init__(
        self,
        metrics: Optional[Sequence[str] | str] = None,
        *,
        bins: int = 15,
        edges: Optional[Sequence[float]] = None,
        nll_eps: Optional[float] = None,
        input: str = "auto",
    ) -> None:
        flags = _calib.one_pass_metrics(_names(metrics), bins, _edges(edges))
        self.metrics = [name for name, _ in flags]
        self.bins, self.edges, self.nll_eps, self.input = bins, _edges(edges), nll_eps, input
        self._one_pass = [name for name, one in flags if one]
        self._kept = [name for name, one in flags if not one]
        self.reset()

    def reset(self) -> None:
        """Forgets every row."""
        self._state = (
            _calib.StreamingState(self._one_pass, self.bins, self.edges, self.nll_eps)
            if self._one_pass
            else None
        )
        self._rows: list[tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]] = []

    @property
    def n_samples(self) -> int:
        """Rows added so far."""
        if self._state is not None:
            return int(self._state.n_samples)
        return sum(len(labels) for _, labels, _ in self._rows)

    def update(self, scores: Any, labels: Any, weights: Any = None) -> None:
        """Adds a batch: scores `[B, K]` (or `[B]`), labels `[B]`, optional weights `[B]`."""
        s, y, w = as_scores(scores), as_labels(labels), as_weights(weights)
        if self._state is not None:
            warn(self._state.update(s, y, self.input, w))
        if self._kept:
            copy = None if w is None else w.copy()
            self._rows.append((np.array(s, copy=True), y.copy(), copy))

    def compute(self) -> dict[str, float]:
        """The metrics of every row added (and merged) so far."""
        out: dict[str, float] = {}
        if self._state is not None:
            out.update(self._state.compute())
        if self._kept:
            if not self._rows:
                raise ValueError("no rows: call update first")
            scores = np.concatenate([s for s, _, _ in self._rows])
            labels = np.concatenate([y for _, y, _ in self._rows])
            weights = None
            if any(w is not None for _, _, w in self._rows):
                weights = np.concatenate(
                    [np.ones(len(y)) if w is None else w for _, y, w in self._rows]
                )
            out.update(
                evaluate(scores, labels, self._kept, bins=self.bins, edges=self.edges,
                         weights=weights, input=self.input, nll_eps=self.nll_eps)
            )
        return out

    def merge(self, other: "CalibrationMetrics") -> "CalibrationMetrics":
        """A new object holding the rows of both (same metrics and settings)."""
        same = (self.metrics, self.bins, self.edges, self.nll_eps) == (
            other.metrics, other.bins, other.edges, other.nll_eps)
        if not same:
            raise ValueError("cannot merge CalibrationMetrics of different metrics or settings")
        merged = CalibrationMetrics.__new__(CalibrationMetrics)
        merged.__dict__.update(self.__dict__)
        merged._state = None if self._state is None else self._state.merge(other._state)
        merged._rows = self._rows + other._rows
        return merged

    def save_state(self, path: Any) -> None:
        """Writes the one-pass metrics' state for `calib merge` (JSON for a `.json` path, else
        calib's binary form)."""
        if self._state is None:
            raise ValueError(f"none of {self.metrics} is computed in one pass: no state to save")
        self._state.save(str(path))

    def __repr__(self) -> str:
        return f"CalibrationMetrics({self.metrics!r}, bins={self.bins}, n_samples={self.n_samples})"
