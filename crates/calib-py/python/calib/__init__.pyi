"""Type stubs of calib (written by crates/calib-py/stubgen.py; do not edit)."""

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

# One function per metric (calib.METRICS).
def ece(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def mce(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def rmsce(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def sce(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def ace(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def tace(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def toplabel_ece(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def debiased_l2(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def plugin_l2(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def nll(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def brier(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def brier_decomposition(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> dict[str, float]: ...
def accuracy(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def ks(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def ks_pvalue(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def kuiper(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def kuiper_pvalue(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def kuiper_range(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def spiegelhalter(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def spiegelhalter_pvalue(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def smece(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def lce_ece(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def calibration_nll(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def refinement_nll(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def calibration_brier(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...
def refinement_brier(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_bins: int = 15,
    edges: Optional[Sequence[float]] = None,
    weights: Optional[ArrayLike] = None,
    input: Input = "auto",
) -> float: ...

# One estimator per method of `calib fit` (calib.ESTIMATORS).
class AffineLogitScaling(Calibrator):
    def __init__(
        self,
        *,
        ridge: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class BayesianBinning(Calibrator):
    def __init__(
        self,
        *,
        strategy: Optional[Literal['width', 'mass']] = None,
        input: Input = "auto",
    ) -> None: ...

class BetaCalibration(Calibrator):
    def __init__(
        self,
        *,
        form: Optional[Literal['abm', 'am', 'ab']] = None,
        input: Input = "auto",
    ) -> None: ...

class CdfSplineCalibration(Calibrator):
    def __init__(
        self,
        *,
        input: Input = "auto",
    ) -> None: ...

class CentredIsotonicRegression(Calibrator):
    def __init__(
        self,
        *,
        input: Input = "auto",
    ) -> None: ...

class DirichletCalibration(Calibrator):
    def __init__(
        self,
        *,
        max_iter: Optional[Any] = None,
        lam: Optional[Any] = None,
        mu: Optional[Any] = None,
        lambdas: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class EceTemperatureScaling(Calibrator):
    temperature_: float
    def __init__(
        self,
        *,
        metric: Optional[Any] = None,
        bins: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class EnsembleTemperatureScaling(Calibrator):
    def __init__(
        self,
        *,
        loss: Optional[Literal['mse', 'nll']] = None,
        input: Input = "auto",
    ) -> None: ...

class HistogramBinning(Calibrator):
    def __init__(
        self,
        *,
        bins: Optional[Any] = None,
        strategy: Optional[Literal['width', 'mass']] = None,
        bootstrap: Optional[Any] = None,
        seed: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class IsotonicRegression(Calibrator):
    def __init__(
        self,
        *,
        input: Input = "auto",
    ) -> None: ...

class KernelCalibration(Calibrator):
    def __init__(
        self,
        *,
        bandwidth: Optional[Any] = None,
        bandwidth_rule: Optional[Literal['rule', 'loo']] = None,
        input: Input = "auto",
    ) -> None: ...

class LceCalibration(Calibrator):
    def __init__(
        self,
        *,
        bandwidth: Optional[Any] = None,
        bandwidth_rule: Optional[Literal['loo', 'silverman']] = None,
        scale: Optional[Literal['logit', 'probability']] = None,
        kernel: Optional[Literal['gaussian', 'triweight']] = None,
        input: Input = "auto",
    ) -> None: ...

class MatrixScaling(Calibrator):
    def __init__(
        self,
        *,
        max_iter: Optional[Any] = None,
        lam: Optional[Any] = None,
        mu: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class PlattScaling(Calibrator):
    def __init__(
        self,
        *,
        max_iter: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class QuadraticLogitScaling(Calibrator):
    def __init__(
        self,
        *,
        ridge: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class ScalingBinning(Calibrator):
    def __init__(
        self,
        *,
        bins: Optional[Any] = None,
        paper_split: bool = False,
        input: Input = "auto",
    ) -> None: ...

class StructuredMatrixScaling(Calibrator):
    def __init__(
        self,
        *,
        max_iter: Optional[Any] = None,
        lambda_intercept: Optional[Any] = None,
        lambda_diagonal: Optional[Any] = None,
        rho: Optional[Any] = None,
        tau: Optional[Any] = None,
        lambda_off_diagonal: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class SplineCalibration(Calibrator):
    def __init__(
        self,
        *,
        input: Input = "auto",
    ) -> None: ...

class StructuredVectorScaling(Calibrator):
    def __init__(
        self,
        *,
        max_iter: Optional[Any] = None,
        lambda_intercept: Optional[Any] = None,
        lambda_diagonal: Optional[Any] = None,
        rho: Optional[Any] = None,
        tau: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class TemperatureScaling(Calibrator):
    temperature_: float
    def __init__(
        self,
        *,
        max_iter: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class TopLabelCalibration(Calibrator):
    def __init__(
        self,
        *,
        base: Optional[Any] = None,
        bins: Optional[Any] = None,
        strategy: Optional[Literal['width', 'mass']] = None,
        bootstrap: Optional[Any] = None,
        seed: Optional[Any] = None,
        form: Optional[Literal['abm', 'am', 'ab']] = None,
        paper_split: bool = False,
        bandwidth: Optional[Any] = None,
        bandwidth_rule: Optional[Literal['loo', 'silverman']] = None,
        scale: Optional[Literal['logit', 'probability']] = None,
        kernel: Optional[Literal['gaussian', 'triweight']] = None,
        ridge: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class VectorScaling(Calibrator):
    def __init__(
        self,
        *,
        max_iter: Optional[Any] = None,
        input: Input = "auto",
    ) -> None: ...

class VennAbers(Calibrator):
    def __init__(
        self,
        *,
        input: Input = "auto",
    ) -> None: ...
