"""Writes python/calib/__init__.pyi, the type stubs of the package, from the installed module
(the metric functions and estimator classes are generated from calib's registries, so their
stubs are too). tests/test_stubs.py checks that the committed file is what this writes.

    python crates/calib-py/stubgen.py
"""

from pathlib import Path

HEAD = '''"""Type stubs of calib (written by crates/calib-py/stubgen.py; do not edit)."""

from typing import Any, Literal, NamedTuple, Optional, Sequence, Union

import numpy as np

ArrayLike = Any
Input = Literal["auto", "logits", "probs"]

__version__: str
METRICS: tuple[str, ...]
DEFAULT_METRICS: tuple[str, ...]
ESTIMATORS: dict[str, type[Calibrator]]

class CalibWarning(UserWarning): ...

def evaluate(
    scores: ArrayLike,
    labels: ArrayLike,
    metrics: Optional[Union[Sequence[str], str]] = None,
    *,
    bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
    nll_eps: Optional[float] = None,
    split_fits: Optional[int] = None,
) -> dict[str, float]: ...

class Estimate(NamedTuple):
    estimate: float
    lower: float
    upper: float
    standard_error: float

def bootstrap(
    scores: ArrayLike,
    labels: ArrayLike,
    metrics: Optional[Union[Sequence[str], str]] = None,
    *,
    replicates: int = 1000,
    level: float = 0.9,
    seed: int = 0,
    interval: Literal["percentile", "basic"] = "percentile",
    bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
    nll_eps: Optional[float] = None,
) -> dict[str, Estimate]: ...

class Reliability:
    lower: np.ndarray
    upper: np.ndarray
    counts: np.ndarray
    confidences: np.ndarray
    accuracies: np.ndarray
    intervals: np.ndarray
    accuracy_intervals: Optional[np.ndarray]
    n_samples: float
    calibration_error: float
    @property
    def edges(self) -> np.ndarray: ...

def reliability(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    bins: int = 15,
    adaptive: bool = False,
    edges: Optional[Sequence[float]] = None,
    class_index: Optional[int] = None,
    alpha: float = 0.05,
    accuracy_interval: Optional[Literal["clopper-pearson", "wilson"]] = None,
    input: Input = "auto",
) -> Reliability: ...
def plot_reliability(
    scores: ArrayLike, labels: ArrayLike, *, ax: Any = None, title: Optional[str] = None, **options: Any
) -> Any: ...

class CalibrationMetrics:
    metrics: list[str]
    def __init__(
        self,
        metrics: Optional[Union[Sequence[str], str]] = None,
        *,
        bins: int = 15,
        edges: Optional[Sequence[float]] = None,
        nll_eps: Optional[float] = None,
        input: Input = "auto",
    ) -> None: ...
    @property
    def n_samples(self) -> int: ...
    def update(self, scores: ArrayLike, labels: ArrayLike, weights: Optional[ArrayLike] = None) -> None: ...
    def compute(self) -> dict[str, float]: ...
    def merge(self, other: CalibrationMetrics) -> CalibrationMetrics: ...
    def reset(self) -> None: ...
    def save_state(self, path: Any) -> None: ...

class Calibrator:
    method: str
    input: Input
    calibrator_: Any
    record_: Optional[dict[str, Any]]
    parameters_: dict[str, np.ndarray]
    classes_: np.ndarray
    n_classes_: int
    n_features_in_: int
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: Optional[ArrayLike] = None) -> Calibrator: ...
    def predict_proba(self, X: ArrayLike) -> np.ndarray: ...
    def predict(self, X: ArrayLike) -> np.ndarray: ...
    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: Optional[ArrayLike] = None) -> float: ...
    def evaluate(
        self,
        X: ArrayLike,
        y: ArrayLike,
        metrics: Optional[Union[Sequence[str], str]] = None,
        *,
        bins: int = 15,
        edges: Optional[Sequence[float]] = None,
        sample_weight: Optional[ArrayLike] = None,
        nll_eps: Optional[float] = None,
    ) -> dict[str, float]: ...
    def predict_top_label(self, X: ArrayLike) -> Optional[tuple[np.ndarray, np.ndarray]]: ...
    def save(self, path: Any) -> None: ...
    def get_params(self, deep: bool = True) -> dict[str, Any]: ...
    def set_params(self, **params: Any) -> Calibrator: ...

def load(path: Any) -> Calibrator: ...
def save(calibrator: Calibrator, path: Any) -> None: ...
'''


def metric_stub(name: str) -> str:
    returns = "dict[str, float]" if name == "brier_decomposition" else "float"
    return (
        f"def {name}(\n    scores: ArrayLike,\n    labels: ArrayLike,\n    *,\n    n_bins: int = 15,\n"
        f"    edges: Optional[Sequence[float]] = None,\n    weights: Optional[ArrayLike] = None,\n"
        f"    input: Input = \"auto\",\n) -> {returns}: ...\n"
    )


def class_stub(cls: type) -> str:
    import calib

    specs = {s[0]: s for s in calib._calib.method_specs()}
    options = specs[cls.method][3]
    lines = [f"class {cls.__name__}(Calibrator):"]
    if cls.method in ("temperature", "ece-temperature"):
        lines.append("    temperature_: float")
    params = []
    for name, _, _, takes, choices in options:
        py = calib._estimators._param_name(name)
        if not takes:
            kind, default = "bool", "False"
        elif choices:
            kind, default = "Optional[Literal[" + ", ".join(repr(c) for c in choices) + "]]", "None"
        else:
            kind, default = "Optional[Any]", "None"
        params.append(f"        {py}: {kind} = {default},")
    params.append('        input: Input = "auto",')
    lines.append("    def __init__(\n        self,\n        *,\n" + "\n".join(params) + "\n    ) -> None: ...")
    return "\n".join(lines) + "\n"


def render() -> str:
    import calib

    parts = [HEAD, "\n# One function per metric (calib.METRICS).\n"]
    parts += [metric_stub(name) for name in calib.METRICS]
    parts.append("\n# One estimator per method of `calib fit` (calib.ESTIMATORS).\n")
    parts += [class_stub(cls) + "\n" for _, cls in sorted(calib.ESTIMATORS.items())]
    return "".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    path = Path(__file__).resolve().parent / "python" / "calib" / "__init__.pyi"
    path.write_text(render())
    print(f"wrote {path}")
