//! `calib eval`'s configuration from its options, checked once: what the command line and the
//! Python package (`calib.evaluate`) both evaluate with.

use calib_core::binning::Binning;
use calib_core::{EvaluationConfig, Metric};

use crate::error::{CliError, Result, plain};

/// Parses `--metrics` (`None`: the defaults; `all`: every metric).
///
/// # Errors
/// [`CliError::Usage`] for an unknown name, or a list that names no metric.
pub fn parse_metrics(list: Option<&[String]>) -> Result<Vec<Metric>> {
    let Some(list) = list else { return Ok(Metric::defaults()) };
    if list.iter().any(|m| m.trim().eq_ignore_ascii_case("all")) {
        return Ok(Metric::ALL.to_vec());
    }
    let mut metrics = Vec::new();
    for name in list.iter().filter(|m| !m.trim().is_empty()) {
        let m = Metric::from_name(name).map_err(|e| CliError::Usage(plain(e)))?;
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    if metrics.is_empty() {
        return Err(CliError::Usage("--metrics names no metric".into()));
    }
    Ok(metrics)
}

/// The evaluation of `metrics` (as [`parse_metrics`] reads them) with `bins` even bins and as
/// many equal-mass ranges, custom `edges` (checked), the NLL clipped at `nll_eps` and the
/// calibration/refinement split cross-fitted over `split_fits` folds.
///
/// # Errors
/// [`CliError::Usage`] for unknown metrics or edges that are not increasing from 0 to 1.
pub fn evaluation_config(
    metrics: Option<&[String]>,
    bins: usize,
    edges: Option<Vec<f64>>,
    nll_eps: Option<f64>,
    split_fits: Option<usize>,
) -> Result<EvaluationConfig> {
    let metrics = parse_metrics(metrics)?;
    if let Some(edges) = &edges {
        Binning::Custom { edges: edges.clone() }
            .validate()
            .map_err(|e| CliError::Usage(plain(e)))?;
    }
    Ok(EvaluationConfig::new()
        .with_metrics(metrics)
        .with_n_bins(bins)
        .with_n_ranges(bins)
        .with_edges(edges)
        .with_nll_eps(nll_eps)
        .with_split_fits(split_fits))
}
