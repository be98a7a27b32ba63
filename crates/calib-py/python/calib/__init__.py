"""calib: measure and fix the calibration of classifier probabilities.

Metrics as functions (`calib.evaluate`, `calib.ece`, ... one per metric name in
`calib.METRICS`), bootstrap intervals (`calib.bootstrap`), reliability diagrams
(`calib.reliability`, `calib.plot_reliability`), calibrators as scikit-learn estimators
(`calib.TemperatureScaling`, `calib.IsotonicRegression`, ... one per method of `calib fit`),
and streaming metrics for training loops (`calib.CalibrationMetrics`). Every number equals the
`calib` command line's on the same rows (docs/conventions.md pins what each one means).
"""

from . import _calib
from ._estimators import CLASS_NAMES, ESTIMATORS, Calibrator, load, save
from ._inputs import CalibWarning
from ._metrics import (
    DEFAULT_METRICS,
    METRIC_FUNCTIONS,
    METRICS,
    Estimate,
    Reliability,
    bootstrap,
    evaluate,
    plot_reliability,
    reliability,
)
from ._streaming import CalibrationMetrics

__version__: str = _calib.__version__

globals().update(METRIC_FUNCTIONS)
globals().update({cls.__name__: cls for cls in ESTIMATORS.values()})

__all__ = [
    "CalibWarning",
    "CalibrationMetrics",
    "Calibrator",
    "DEFAULT_METRICS",
    "ESTIMATORS",
    "Estimate",
    "METRICS",
    "Reliability",
    "bootstrap",
    "evaluate",
    "load",
    "plot_reliability",
    "reliability",
    "save",
    *METRIC_FUNCTIONS,
    *(cls.__name__ for cls in ESTIMATORS.values()),
]

del CLASS_NAMES
