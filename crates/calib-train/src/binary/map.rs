//! [`BinaryMap`]: a fitted map from a score to a probability, and [`BinaryFit`]: the settings
//! that fit one on `(score, outcome)` pairs.

use std::collections::BTreeMap;

use crate::api::{Method, SavedTensor};
use crate::error::{FitError, Result};
use crate::fit::SampleWeighting;

#[cfg(feature = "wgpu")]
use super::device_fit::DeviceFit;

/// A fitted binary calibration map `[0, 1] -> [0, 1]`.
pub trait BinaryMap: Clone + std::fmt::Debug + Send + Sync + Sized {
    /// The method the map belongs to.
    const METHOD: Method;

    /// The calibrated probability of score `s` (in `[0, 1]`).
    fn predict(&self, s: f64) -> f64;

    /// [`BinaryMap::predict`] within a few ulp, written so loops over it vectorise (the vectorised
    /// `exp` and `ln`): a fit's record reads it over every calibration row; `predict` keeps the
    /// C library's, so a saved map's outputs never move. Default: `predict`.
    #[inline(always)]
    fn predict_fast(&self, s: f64) -> f64 {
        self.predict(s)
    }

    /// Every value of `scores` replaced by its [`BinaryMap::predict_fast`]; a map whose
    /// `predict` is a search can run several searches side by side here.
    #[inline(always)]
    fn predict_fast_into(&self, scores: &mut [f64]) {
        for s in scores.iter_mut() {
            *s = self.predict_fast(*s);
        }
    }

    /// The map that leaves every score as it is (for a class the calibration labels lack).
    fn identity() -> Self;

    /// The map as a table the device applies, where it is one; `None` (the default): the
    /// map applies on the host.
    #[cfg(feature = "wgpu")]
    fn device_table(&self) -> Option<calib_core::engine::MapTable> {
        None
    }

    /// Writes the map's tables into `out`, each name prefixed by `prefix`.
    fn save(&self, prefix: &str, out: &mut BTreeMap<String, SavedTensor>);

    /// Reads a map written by [`BinaryMap::save`] with the same `prefix`.
    ///
    /// # Errors
    /// [`FitError::Format`] when a table is missing, misshapen or not finite.
    fn load(prefix: &str, parameters: &BTreeMap<String, SavedTensor>) -> Result<Self>;
}

/// A fitted map with what its fit has to say.
#[derive(Debug, Clone)]
pub struct BinaryFitted<M> {
    /// The map.
    pub map: M,
    /// Iterations of an iterative fit (0 for closed-form ones).
    pub iterations: usize,
    /// False when an iterative fit stopped short of its optimum.
    pub converged: bool,
    /// Things the user should know (a fallback taken, a degenerate problem).
    pub warnings: Vec<String>,
    /// The mean NLL of the fit's pairs at their outcomes through the map, where the fit has it
    /// at hand (a binary fit's record then takes it instead of applying the map to every row).
    pub training_nll: Option<f64>,
}

impl<M> BinaryFitted<M> {
    /// A map from a closed-form fit.
    pub fn exact(map: M) -> Self {
        Self { map, iterations: 0, converged: true, warnings: Vec::new(), training_nll: None }
    }
}

/// Settings that fit a [`BinaryMap`] on `(score, outcome)` pairs.
pub trait BinaryFit {
    /// The map these settings fit.
    type Map: BinaryMap;

    /// Checks the settings alone.
    ///
    /// # Errors
    /// [`FitError::InvalidConfig`] naming the setting.
    fn check(&self) -> Result<()>;

    /// How the map takes sample weights: a [`SampleWeighting::Weighted`] map weighs the pairs
    /// in [`BinaryFit::fit_pairs`]; a [`SampleWeighting::Repeated`] one is fitted on the
    /// repeated rows, without weights.
    const SAMPLE_WEIGHTS: SampleWeighting;

    /// Fits on `scores` (each in `[0, 1]`) with `outcomes` (both non-empty, of equal length)
    /// and the pairs' positive sample `weights` (`None`: each 1; weighted sums, weighted
    /// pooled means). A [`SampleWeighting::Repeated`] map is given `None` only.
    ///
    /// # Errors
    /// [`FitError::UnsuitableInput`] when the pairs cannot be fitted (too few for the bins).
    fn fit_pairs(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: Option<&[f64]>,
    ) -> Result<BinaryFitted<Self::Map>>;

    /// [`BinaryFit::fit_pairs`] without weights.
    ///
    /// # Errors
    /// As [`BinaryFit::fit_pairs`].
    fn fit_binary(&self, scores: &[f64], outcomes: &[bool]) -> Result<BinaryFitted<Self::Map>> {
        self.fit_pairs(scores, outcomes, None)
    }

    /// [`BinaryFit::fit_pairs`] with `weights`.
    ///
    /// # Errors
    /// As [`BinaryFit::fit_pairs`].
    fn fit_weighted(
        &self,
        scores: &[f64],
        outcomes: &[bool],
        weights: &[f64],
    ) -> Result<BinaryFitted<Self::Map>> {
        self.fit_pairs(scores, outcomes, Some(weights))
    }

    /// Whether these settings fit problems of `n_pairs` pairs sorted on the device
    /// ([`BinaryFit::fit_sorted`]): then rows that live on a GPU, unweighted, one-vs-rest or
    /// binary, are sorted and fitted there, and their scores never read back. Asked before the
    /// sort, so that problems the device path does not fit go to the host (which says why)
    /// without one. Default: no.
    fn sorts_on_device(&self, _n_pairs: usize) -> bool {
        false
    }

    /// Every problem's map fitted on `pairs`, sorted on the device, where
    /// [`BinaryFit::sorts_on_device`]; `None` (the default) where the settings have no device
    /// fit.
    #[cfg(feature = "wgpu")]
    fn fit_sorted(
        &self,
        _pairs: &calib_core::engine::DevicePairs,
    ) -> Option<Result<DeviceFit<Self::Map>>> {
        None
    }

    /// The logistic regression these settings fit on each problem, for rows that live on a
    /// GPU (unweighted, one-vs-rest or binary): then every problem is fitted at once on sums
    /// from the device and the scores never read back. `None` (the default): host fits only.
    #[cfg(feature = "wgpu")]
    fn device_logistic(&self) -> Option<super::DeviceLogistic<Self::Map>> {
        None
    }

    /// Whether [`BinaryFit::for_problems`] reads the problems (then a K-class fit builds every
    /// problem before fitting any; otherwise a one-vs-rest fit copies each class's scores out
    /// only while it fits that class).
    const SHARES_SETTINGS: bool = false;

    /// Settings chosen once for all the problems of one K-class fit (one-vs-rest or
    /// top-label), each problem then fitted with them; `None` (the default): these settings.
    /// LCE calibration chooses one bandwidth for all its classes here. `weights[k]`: problem
    /// `k`'s sample weights, when the fit has any.
    fn for_problems(
        &self,
        _problems: &[(Vec<f64>, Vec<bool>)],
        _weights: Option<&[Vec<f64>]>,
    ) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
}

/// A saved 1-D table `name` (with `prefix`), checked finite.
pub(crate) fn table<'a>(
    parameters: &'a BTreeMap<String, SavedTensor>,
    prefix: &str,
    name: &str,
) -> Result<&'a [f64]> {
    let key = format!("{prefix}{name}");
    let t = parameters
        .get(&key)
        .ok_or_else(|| FitError::Format(format!("missing parameter `{key}`")))?;
    if t.shape != [t.values.len()] {
        return Err(FitError::Format(format!(
            "parameter `{key}` has shape {:?} with {} values",
            t.shape,
            t.values.len()
        )));
    }
    if let Some(v) = t.values.iter().find(|v| !v.is_finite()) {
        return Err(FitError::Format(format!("parameter `{key}` holds {v}")));
    }
    Ok(&t.values)
}

/// Stores `values` as the 1-D table `prefix` + `name`.
pub(crate) fn put(
    out: &mut BTreeMap<String, SavedTensor>,
    prefix: &str,
    name: &str,
    values: Vec<f64>,
) {
    out.insert(format!("{prefix}{name}"), SavedTensor { shape: vec![values.len()], values });
}
