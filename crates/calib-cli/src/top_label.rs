//! Metrics of a top-label calibrator's output, read as it says them: the top-label metrics
//! (`Metric::is_top_label`: ECE, MCE, RMSCE, top-label ECE, the L2 errors, accuracy, the
//! binning-free tests) from each row's prediction and calibrated confidence
//! ([`TopLabelPrediction`]), the class-wise ones (SCE, ACE, TACE, NLL, Brier) from the
//! calibrated probabilities. Every other calibrator is measured on its probabilities alone.

use burn::tensor::Device;
use calib_core::bootstrap::{BootstrapConfig, MetricInterval};
use calib_core::input::Predictions;
use calib_core::{EvaluationConfig, Metric, Report};
use calib_train::TopLabelPrediction;

use crate::error::{CliError, Result};

/// `config`'s metrics of `calibrated`, the top-label ones from `top` when given.
///
/// # Errors
/// [`CliError::Core`] (in `origin`) when the rows cannot be evaluated.
pub fn evaluate(
    config: &EvaluationConfig,
    calibrated: &Predictions,
    top: Option<&TopLabelPrediction>,
    device: &Device,
    origin: &str,
) -> Result<Report> {
    let core = |e| CliError::core(origin, e);
    let mut report = config.evaluate(calibrated).map_err(core)?;
    if let Some((view_config, view)) = top_label_view(config, calibrated, top, device, origin)? {
        let from_view = view_config.evaluate(&view).map_err(core)?;
        for value in &mut report.values {
            if let Some(v) = from_view.values.iter().find(|v| v.metric == value.metric) {
                *value = v.clone();
            }
        }
    }
    Ok(report)
}

/// [`evaluate`] with bootstrap intervals: both parts resample the same rows (one seed, one N).
///
/// # Errors
/// As [`evaluate`].
pub fn bootstrap(
    config: &EvaluationConfig,
    calibrated: &Predictions,
    top: Option<&TopLabelPrediction>,
    bootstrap: &BootstrapConfig,
    device: &Device,
    origin: &str,
) -> Result<(Report, Vec<MetricInterval>)> {
    let core = |e| CliError::core(origin, e);
    let (mut report, mut intervals) = config.bootstrap(calibrated, bootstrap).map_err(core)?;
    if let Some((view_config, view)) = top_label_view(config, calibrated, top, device, origin)? {
        let (from_view, view_intervals) = view_config.bootstrap(&view, bootstrap).map_err(core)?;
        for value in &mut report.values {
            if let Some(v) = from_view.values.iter().find(|v| v.metric == value.metric) {
                *value = v.clone();
            }
        }
        for interval in &mut intervals {
            if let Some(v) = view_intervals.iter().find(|v| v.name == interval.name) {
                *interval = v.clone();
            }
        }
    }
    Ok((report, intervals))
}

/// The configuration of `config`'s top-label metrics and the rows that carry `top`'s
/// predictions and confidences; `None` without `top` or without a top-label metric.
fn top_label_view(
    config: &EvaluationConfig,
    calibrated: &Predictions,
    top: Option<&TopLabelPrediction>,
    device: &Device,
    origin: &str,
) -> Result<Option<(EvaluationConfig, Predictions)>> {
    let Some(top) = top else { return Ok(None) };
    let metrics: Vec<Metric> =
        config.metrics.iter().copied().filter(|m| m.is_top_label()).collect();
    if metrics.is_empty() {
        return Ok(None);
    }
    let view = top.as_predictions(device).map_err(|e| CliError::train(origin, e))?;
    // The view's rows are the calibrated rows: the same sample weights.
    let view = view.with_weights_of(calibrated).map_err(|e| CliError::core(origin, e))?;
    Ok(Some((config.clone().with_metrics(metrics), view)))
}
