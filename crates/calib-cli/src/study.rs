//! [`Study`]: Nixon et al.'s metric study (2019, §5, Tables 4 and 5): every calibrator fitted on
//! one split, all 32 GCE variants measured on another at several bin counts, the methods
//! ranked under each variant, and how far the rankings agree (Spearman's rho) when one
//! property of the metric changes: "does my conclusion depend on the metric I chose?".

use calib_core::input::Predictions;
use calib_core::metrics::{CalibrationErrorConfig, GceProperty, GceVariant};
use calib_core::stats::{average_ranks, spearman};
use calib_train::{Method, Reduction};

use crate::comparison::{Applied, fit_and_apply};
use crate::error::{CliError, Result};

/// The values of every ranked method, variant and bin count.
#[derive(Debug, Clone)]
pub struct Study {
    /// Bin counts (even bins and adaptive ranges alike).
    pub bins: Vec<usize>,
    /// `uncalibrated`, then each method that could be fitted, in the order asked.
    pub methods: Vec<String>,
    /// `values[method][bin count][variant]`.
    pub values: Vec<Vec<Vec<f64>>>,
    /// Methods that could not be fitted or applied, with why.
    pub failed: Vec<(String, String)>,
}

/// Mean Spearman correlations between rankings that differ in one property.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    /// The property (`binning`, `scores`, `class_conditional`, `threshold`, `norm`) or
    /// `bin_count`.
    pub property: String,
    /// Per bin count: the mean over the 16 variant pairs differing in the property. For
    /// `bin_count`, per bin count after the first: the mean over the 32 variants of rho against
    /// the first bin count.
    pub per_bins: Vec<(usize, f64)>,
    /// The mean of `per_bins`.
    pub mean: f64,
}

impl Study {
    /// Fits each of `methods` on `fit`, applies it to `test` and measures every variant at
    /// each of `bins`, next to the uncalibrated scores.
    ///
    /// # Errors
    /// [`CliError::Usage`] for no bin count or one below 1, fewer than two rankable methods;
    /// [`CliError::Core`] when the uncalibrated scores cannot be measured.
    pub fn run(
        fit: &Predictions,
        test: &Predictions,
        methods: &[Method],
        bins: &[usize],
        on_method: &mut dyn FnMut(Method),
    ) -> Result<Self> {
        if bins.is_empty() || bins.contains(&0) {
            return Err(CliError::Usage("--bins needs bin counts of at least 1".into()));
        }
        let uncalibrated = measure(test, bins).map_err(|e| CliError::core("study", e))?;
        let mut study = Self {
            bins: bins.to_vec(),
            methods: vec!["uncalibrated".into()],
            values: vec![uncalibrated],
            failed: Vec::new(),
        };
        for &method in methods {
            on_method(method);
            let measured = fit_and_apply(fit, test, method, Reduction::OneVsRest)
                .and_then(|a| measure_applied(&a, test, bins, method.name()));
            match measured {
                Ok(values) => {
                    study.methods.push(method.name().into());
                    study.values.push(values);
                }
                Err(e) => study.failed.push((method.name().into(), e.to_string())),
            }
        }
        if study.methods.len() < 2 {
            return Err(CliError::Usage("the study needs at least one method that fits".into()));
        }
        Ok(study)
    }

    /// The methods (indices into [`Self::methods`]) best first under `variant` at bin count
    /// index `b`; equal values keep the methods' order.
    pub fn ranking(&self, b: usize, variant: GceVariant) -> Vec<usize> {
        let value = |m: usize| self.values[m][b][variant.number()];
        let mut order: Vec<usize> = (0..self.methods.len()).collect();
        order.sort_by(|&x, &y| value(x).total_cmp(&value(y)));
        order
    }

    /// Average ranks of the methods under `variant` at bin count index `b`.
    fn ranks(&self, b: usize, variant: GceVariant) -> Vec<f64> {
        let values: Vec<f64> = self.values.iter().map(|m| m[b][variant.number()]).collect();
        average_ranks(&values)
    }

    /// Per property, the mean Spearman correlation between rankings that differ in it only
    /// (Nixon et al. §5.3), then between bin counts.
    pub fn agreement(&self) -> Vec<Agreement> {
        let mut out: Vec<Agreement> = GceProperty::ALL
            .iter()
            .map(|&p| {
                let per_bins = (0..self.bins.len())
                    .map(|b| {
                        let pairs = GceVariant::all().filter(|v| !v.has(p));
                        let rhos = pairs.map(|v| self.rho(b, v, b, v.flipped(p)));
                        (self.bins[b], mean(rhos))
                    })
                    .collect();
                Agreement::new(p.name(), per_bins)
            })
            .collect();
        let per_bins = (1..self.bins.len())
            .map(|b| (self.bins[b], mean(GceVariant::all().map(|v| self.rho(0, v, b, v)))))
            .collect();
        out.push(Agreement::new("bin_count", per_bins));
        out
    }

    fn rho(&self, b1: usize, v1: GceVariant, b2: usize, v2: GceVariant) -> f64 {
        spearman(&self.ranks(b1, v1), &self.ranks(b2, v2)).unwrap_or(f64::NAN)
    }
}

impl Agreement {
    fn new(property: &str, per_bins: Vec<(usize, f64)>) -> Self {
        let mean = mean(per_bins.iter().map(|&(_, r)| r));
        Self { property: property.into(), per_bins, mean }
    }
}

/// The mean of `values` (NaN when there are none).
fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { f64::NAN } else { sum / n as f64 }
}

/// `[bin count][variant]` values of `preds`, every configuration in one pass.
/// [`measure`] of a fitted method's output: a top-label calibrator's top-label variants
/// (max probability scores) from its predictions and confidences ([`crate::top_label`]).
fn measure_applied(
    a: &Applied,
    test: &Predictions,
    bins: &[usize],
    name: &str,
) -> Result<Vec<Vec<f64>>> {
    let core = |e| CliError::core(name, e);
    let mut values = measure(&a.calibrated, bins).map_err(core)?;
    if let Some(top) = &a.top_label {
        let view = top.as_predictions(test.device()).map_err(|e| CliError::train(name, e))?;
        let from_view = measure(&view, bins).map_err(core)?;
        for (row, view_row) in values.iter_mut().zip(from_view) {
            for v in GceVariant::all().filter(|v| !v.has(GceProperty::Scores)) {
                row[v.number()] = view_row[v.number()];
            }
        }
    }
    Ok(values)
}

fn measure(preds: &Predictions, bins: &[usize]) -> calib_core::Result<Vec<Vec<f64>>> {
    let configs: Vec<CalibrationErrorConfig> =
        bins.iter().flat_map(|&b| GceVariant::all().map(move |v| v.config(b))).collect();
    let values = CalibrationErrorConfig::compute_many(&configs, preds)?;
    Ok(values.chunks(GceVariant::COUNT).map(|c| c.iter().map(|v| v.value).collect()).collect())
}
