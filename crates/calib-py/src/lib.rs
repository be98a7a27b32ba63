//! `calib._calib`: the native half of the Python package `calib` (the Python half, in
//! `python/calib`, turns torch tensors, other dtypes and one-hot labels into the arrays this
//! module takes, and wraps it in scikit-learn estimators and a streaming metric object).
//!
//! Every function takes C-contiguous `float32`/`float64` scores, which it reads in place
//! ([`buffer`]), `int64` labels and optional `float64` weights; it runs with the GIL released
//! and turns calib's errors into `ValueError`/`OSError` with calib's one-line message and a
//! Rust panic into `RuntimeError` ([`outcome`]), so nothing unwinds across the boundary.

mod buffer;
mod calibrator;
mod input;
mod metrics;
mod outcome;
mod streaming;

use pyo3::prelude::*;

/// The module: metrics, calibrators and the streaming state.
#[pymodule]
fn _calib(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(metrics::metric_names, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::reliability, m)?)?;
    m.add_function(wrap_pyfunction!(calibrator::method_specs, m)?)?;
    m.add_function(wrap_pyfunction!(input::read_address, m)?)?;
    m.add_function(wrap_pyfunction!(streaming::one_pass_metrics, m)?)?;
    m.add_class::<calibrator::PyCalibrator>()?;
    m.add_class::<streaming::PyStreamingState>()?;
    Ok(())
}
