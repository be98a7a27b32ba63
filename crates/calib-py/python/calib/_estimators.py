"""Calibrators as scikit-learn estimators, one class per method of calib's registry, each
taking its method's `calib fit` options as keyword arguments (generated from the same
definitions, so every method the command line fits is here)."""

from __future__ import annotations

import json
import keyword
import math
import warnings
from typing import Any

import numpy as np

from . import _calib
from ._inputs import as_labels, as_scores, as_weights, warn
from ._metrics import _edges, _names

try:  # scikit-learn is optional: the estimators work without it, and join it when present.
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import ClassifierMixin as _Classifier
except ImportError:  # pragma: no cover - exercised where scikit-learn is absent

    class _Base:  # type: ignore[no-redef]
        """scikit-learn's parameter protocol, for when scikit-learn is not installed."""

        def get_params(self, deep: bool = True) -> dict[str, Any]:
            names = [p for p, _, _ in self._options] + ["input"]  # type: ignore[attr-defined]
            return {name: getattr(self, name) for name in names}

        def set_params(self, **params: Any) -> Any:
            valid = self.get_params()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError(f"Invalid parameter {name!r} for {type(self).__name__}")
                setattr(self, name, value)
            return self

        def __repr__(self) -> str:
            changed = {k: v for k, v in self.get_params().items() if v is not None and v is not False and v != "auto"}
            return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    class _Classifier:  # type: ignore[no-redef]
        _estimator_type = "classifier"

        def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
            """Accuracy of `predict` (weighted)."""
            hits = (self.predict(X) == as_labels(y)).astype(np.float64)  # type: ignore[attr-defined]
            return float(np.average(hits, weights=as_weights(sample_weight)))

#: calib's method names and their Python classes.
CLASS_NAMES: dict[str, str] = {
    "temperature": "TemperatureScaling",
    "vector": "VectorScaling",
    "matrix": "MatrixScaling",
    "dirichlet": "DirichletCalibration",
    "sms": "StructuredMatrixScaling",
    "svs": "StructuredVectorScaling",
    "ets": "EnsembleTemperatureScaling",
    "kernel": "KernelCalibration",
    "platt": "PlattScaling",
    "isotonic": "IsotonicRegression",
    "histogram": "HistogramBinning",
    "beta": "BetaCalibration",
    "scaling-binning": "ScalingBinning",
    "venn-abers": "VennAbers",
    "lce": "LceCalibration",
    "spline": "SplineCalibration",
    "affine": "AffineLogitScaling",
    "quadratic": "QuadraticLogitScaling",
    "cir": "CentredIsotonicRegression",
    "bbq": "BayesianBinning",
    "cdf-spline": "CdfSplineCalibration",
    "top-label": "TopLabelCalibration",
    "ece-temperature": "EceTemperatureScaling",
}


def _class_name(method: str) -> str:
    return CLASS_NAMES.get(method) or "".join(p.capitalize() for p in method.split("-"))


#: Options whose command-line name is a Python keyword, and their keyword arguments.
RENAMED: dict[str, str] = {"lambda": "lam"}


def _param_name(option: str) -> str:
    name = RENAMED.get(option, option)
    if keyword.iskeyword(name):
        raise RuntimeError(f"calib: option {option!r} needs a Python name in RENAMED")
    return name


class Calibrator(_Classifier, _Base):
    """A calibrator as a scikit-learn estimator: `fit(scores, y, sample_weight=None)` on
    validation scores (logits or probabilities `[N, K]`, or binary scores `[N]`), then
    `predict_proba(scores)` gives calibrated probabilities `[N, K]` (`[N, 2]` for binary
    scores). A post-processor of a classifier's scores, classifier-like: `predict` is the
    argmax of `predict_proba`, `score` its accuracy.

    Fitted attributes: `calibrator_` (calib's calibrator), `record_` (the fit record: whether it
    converged, why it stopped, iterations, final loss, wall time), `parameters_` (named arrays),
    `classes_`, `n_classes_`, `n_features_in_`.
    """

    #: calib's method name (`calib fit METHOD`).
    method: str = ""
    #: `(parameter, command-line flag, takes a value)` of each option.
    _options: tuple[tuple[str, str, bool], ...] = ()

    def _option_words(self) -> list[str]:
        words: list[str] = []
        for param, flag, takes_value in self._options:
            value = getattr(self, param)
            if value is None or value is False:
                continue
            if not takes_value:
                words.append(f"--{flag}")
            elif isinstance(value, (list, tuple, np.ndarray)):
                words.append(f"--{flag}=" + ",".join(_word(v) for v in value))
            else:
                words.append(f"--{flag}={_word(value)}")
        return words

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "Calibrator":
        """Fits on scores `X` and labels `y` (class indices or one-hot rows)."""
        scores = as_scores(X)
        if getattr(y, "ndim", 1) == 2 and y.shape[1] == 1:
            _column_vector_warning()
        labels = as_labels(y)
        if (scores.ndim == 1 or scores.shape[1] == 1) and labels.size and labels.max() > 1:
            raise ValueError(
                f"X has 1 feature(s), a column of binary scores, but y names "
                f"{labels.max() + 1} classes: a calibrator's X has one column per class"
            )
        native, messages = _calib.Calibrator.fit(
            self.method,
            self._option_words(),
            scores,
            labels,
            self.input,
            as_weights(sample_weight),
        )
        warn(messages)
        self._adopt(native)
        self.n_features_in_ = 1 if scores.ndim == 1 else scores.shape[1]
        return self

    def _adopt(self, native: Any) -> None:
        saved = json.loads(native.to_json())
        self.calibrator_ = native
        self.record_ = saved.get("fit")
        self.parameters_ = {
            name: np.asarray(t["values"], dtype=np.float64).reshape(t["shape"])
            for name, t in saved["parameters"].items()
        }
        if self.record_ is not None and any(p == "max_iter" for p, _, _ in self._options):
            self.n_iter_ = int(self.record_.get("iterations", 0))
        self.n_classes_ = max(int(saved["n_classes"]), 2)
        self.classes_ = np.arange(self.n_classes_)
        self._fitted_attributes()

    def _fitted_attributes(self) -> None:
        """Method-specific fitted attributes (`temperature_`)."""

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "calibrator_")

    def _check_fitted(self) -> None:
        if not hasattr(self, "calibrator_"):
            try:
                from sklearn.exceptions import NotFittedError
            except ImportError:  # pragma: no cover
                NotFittedError = AttributeError  # noqa: N806
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet: call fit first"
            )

    def predict_proba(self, X: Any) -> np.ndarray:
        """Calibrated probabilities `[N, K]` (`[N, 2]` for binary scores), float64."""
        self._check_fitted()
        scores = as_scores(X)
        width = 1 if scores.ndim == 1 else scores.shape[1]
        expected = getattr(self, "n_features_in_", width)
        if width != expected:
            raise ValueError(
                f"X has {width} features, but {type(self).__name__} is expecting {expected} "
                "features as input (a 1-D X is one column of binary scores: Reshape your data "
                "with X.reshape(1, -1) if it is a single row)"
            )
        probs, messages = self.calibrator_.predict_proba(scores, self.input)
        warn(messages)
        return probs

    def predict(self, X: Any) -> np.ndarray:
        """The class of highest calibrated probability."""
        probs = self.predict_proba(X)
        return self.classes_[np.argmax(probs, axis=1)]

    def evaluate(
        self,
        X: Any,
        y: Any,
        metrics: Any = None,
        *,
        bins: int = 15,
        edges: Any = None,
        sample_weight: Any = None,
        nll_eps: Any = None,
    ) -> dict[str, float]:
        """The metrics of `X` after this calibrator against `y` (`calib eval --calibrator`):
        a top-label calibrator's top-label metrics come from its predictions and calibrated
        confidences, which its probabilities alone do not carry."""
        self._check_fitted()
        values, messages = self.calibrator_.evaluate(
            as_scores(X), as_labels(y), self.input, _names(metrics), bins,
            _edges(edges), as_weights(sample_weight), nll_eps,
        )
        warn(messages)
        return dict(values)

    def predict_top_label(self, X: Any) -> Any:
        """A top-label calibrator's `(prediction, confidence)` arrays for each row; None for
        other calibrators."""
        self._check_fitted()
        top, messages = self.calibrator_.predict_top_label(as_scores(X), self.input)
        warn(messages)
        return top

    def save(self, path: Any) -> None:
        """Writes the fitted calibrator as `calib fit -o PATH` does (atomically); the command
        line (`calib apply`, `calib eval --calibrator`) and `calib.load` read it."""
        self._check_fitted()
        self.calibrator_.save(str(path))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.input_tags.allow_nan = False
        if tags.classifier_tags is not None:
            tags.classifier_tags.poor_score = True
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"poor_score": True, "requires_y": True}


def _column_vector_warning() -> None:
    try:
        from sklearn.exceptions import DataConversionWarning as category
    except ImportError:  # pragma: no cover
        category = UserWarning  # type: ignore[assignment]
    warnings.warn(
        "A column-vector y was passed when a 1d array was expected: read as class indices",
        category,
        stacklevel=3,
    )


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return str(value)


def _make_class(method: str, about: str, binary_map: bool, options: list) -> type:
    """The estimator class of `method`: an `__init__` with its options as keyword arguments
    (scikit-learn reads the signature) and a docstring from their help."""
    params = [(_param_name(name), flag, takes, help_, choices) for name, flag, help_, takes, choices in options]
    cls = type(
        _class_name(method),
        (Calibrator,),
        {
            "__init__": _init(method, [(p, takes) for p, _, takes, _, _ in params]),
            "__doc__": _docstring(method, about, binary_map, params),
            "__module__": "calib",
            "method": method,
            "_options": tuple((p, flag, takes) for p, flag, takes, _, _ in params),
        },
    )
    cls.__init__.__qualname__ = f"{cls.__name__}.__init__"
    return cls


def _init(method: str, params: list[tuple[str, bool]]) -> Any:
    """`def __init__(self, *, option=None, ..., flag=False, ..., input="auto")`."""
    names = [p for p, _ in params] + ["input"]
    for name in names:
        if not name.isidentifier():
            raise RuntimeError(f"calib: option {name!r} of {method} is not a Python name")
    defaults = [f"{p}={'None' if takes else 'False'}" for p, takes in params] + ["input='auto'"]
    source = f"def __init__(self, *, {', '.join(defaults)}):\n" + "".join(
        f"    self.{n} = {n}\n" for n in names
    )
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # noqa: S102 - a signature of calib's own option names, checked above
    return namespace["__init__"]


def _docstring(method: str, about: str, binary_map: bool, params: list) -> str:
    form = " (a binary map: binary scores, or one-vs-rest over K classes)" if binary_map else ""
    lines = [f"{about}.", "", f"`calib fit {method}`{form}.", "", "Parameters", "----------"]
    for p, flag, takes, help_, choices in params:
        kind = "bool" if not takes else (f"one of {', '.join(map(repr, choices))}" if choices else "value")
        lines.append(f"{p} : {kind}, default {'None' if takes else 'False'}")
        lines.append(f"    `--{flag}`: {help_}")
    lines += ["input : 'auto', 'logits' or 'probs', default 'auto'", "    What the scores are."]
    return "\n".join(lines) + "\n\n" + (Calibrator.__doc__ or "")


ESTIMATORS: dict[str, type] = {
    spec[0]: _make_class(*spec) for spec in _calib.method_specs()
}


def _temperature(self: Calibrator) -> None:
    self.temperature_ = float(np.exp(self.parameters_["log_temperature"].ravel()[0]))


for _method in ("temperature", "ece-temperature"):
    if _method in ESTIMATORS:
        ESTIMATORS[_method]._fitted_attributes = _temperature  # type: ignore[method-assign]


def load(path: Any) -> Calibrator:
    """A calibrator saved by `calib fit -o PATH` or `Calibrator.save`, as the estimator of its
    method (fitted; its options at their defaults)."""
    return from_native(_calib.Calibrator.load(str(path)))


def from_native(native: Any) -> Calibrator:
    """The estimator of a native calibrator's method, fitted to it."""
    estimator = ESTIMATORS[native.method]()
    estimator._adopt(native)
    return estimator


def save(calibrator: Calibrator, path: Any) -> None:
    """`calibrator.save(path)`."""
    calibrator.save(path)


