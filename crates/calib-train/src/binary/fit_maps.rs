//! Fitting a [`MapCalibrator`]: one binary fit per map, in named phases.

use std::time::Instant;

use calib_core::input::Predictions;
use calib_kernels::{in_order, lane_dot, lane_sum, ln_positive};

use super::calibrator::MapCalibrator;
#[cfg(feature = "wgpu")]
use super::device_fit::DeviceFit;
use super::form::{Form, Reduction};
use super::map::{BinaryFit, BinaryFitted, BinaryMap};
use super::scores::HostScores;
use super::top_label_rows::{TopRow, calibrated_at_labels, problems};
use crate::api::Fitted;
use crate::error::{FitError, Result};
use crate::fit::{FitRecord, Solver};

/// Fits `config`'s map once per binary problem of `reduction` on `preds`.
///
/// A one-vs-rest problem with no positive or no negative outcome (a class absent from the
/// calibration labels), a top-label class never predicted, and a class whose problem the method
/// cannot fit (fewer scores than bins, constant scores) keep the identity map, with a warning;
/// on binary input each of these is an error.
///
/// # Errors
/// [`FitError::UnsuitableInput`] for K < 2 or a map that cannot be fitted;
/// [`FitError::Input`] when the rows cannot be read back.
pub(crate) fn fit_maps<F: BinaryFit + Sync>(
    config: &F,
    reduction: Reduction,
    preds: &Predictions,
) -> Result<Fitted<MapCalibrator<F::Map>>> {
    let start = Instant::now();
    config.check()?;
    // Rows on a GPU are sorted and fitted there, one-vs-rest or binary, where the map can.
    #[cfg(feature = "wgpu")]
    if config.sorts_on_device(preds.n_samples())
        && (reduction == Reduction::OneVsRest || preds.n_columns() == 1)
        && calib_core::engine::DevicePairs::takes(preds)
    {
        let pairs = calib_core::engine::DevicePairs::sort(preds)?;
        if let Some(fit) = config.fit_sorted(&pairs) {
            return fitted_on_device(fit?, preds, start);
        }
    }
    #[cfg(feature = "wgpu")]
    if let Some(logistic) = config.device_logistic()
        && (reduction == Reduction::OneVsRest || preds.n_columns() == 1)
        && calib_core::engine::DevicePairs::takes(preds)
    {
        return fitted_on_device(logistic.fit(preds)?, preds, start);
    }
    let scores = HostScores::read(preds)?;
    let form = Form::of(reduction, scores.n_columns);
    let mut warnings = Vec::new();
    let mut maps = Vec::new();
    let (mut iterations, mut converged) = (0, true);
    let two_columns = form == Form::OneVsRest && scores.n_columns == 2;
    // Weights reach a weighted map only: `Fit::fit_with_progress` repeats the rows for others.
    let weights = preds.weights().map(|w| w.values());
    let by_columns =
        weights.is_none() && form == Form::OneVsRest && !two_columns && !F::SHARES_SETTINGS;
    // Top-label rows are summarised once: for the problems, and again for the record.
    let tops = (form == Form::TopLabel && weights.is_none()).then(|| TopRow::all(&scores));
    let all = if by_columns {
        fit_by_columns(config, &scores)?
    } else if form == Form::Binary && weights.is_none() {
        // The scores are the one problem's, as they are (no copy).
        let mut outcomes = vec![false; scores.n_samples()];
        calib_kernels::for_row_blocks(&mut outcomes, 1, 1 << 16, |first, block| {
            block.iter_mut().zip(&scores.labels[first..]).for_each(|(o, &y)| *o = y == 1);
        });
        vec![fit_one(config, form, 0, (&scores.values, &outcomes), None)?]
    } else {
        let (sets, set_weights) = match weights {
            Some(w) => {
                let (sets, set_weights) = form.weighted_training_sets(&scores, w);
                (sets, Some(set_weights))
            }
            None => match &tops {
                Some(tops) => (problems(tops, scores.n_columns), None),
                None => (form.training_sets(&scores), None),
            },
        };
        let shared =
            if sets.len() > 1 { config.for_problems(&sets, set_weights.as_deref()) } else { None };
        let config = shared.as_ref().unwrap_or(config);
        fit_all(config, form, &sets, set_weights.as_deref(), two_columns)?
    };
    // A binary fit that knows its rows' NLL through the map gives the record's.
    let known_nll = if form == Form::Binary && weights.is_none() {
        all.first().and_then(|fitted| fitted.training_nll)
    } else {
        None
    };
    for fitted in all {
        iterations = iterations.max(fitted.iterations);
        converged &= fitted.converged;
        warnings.extend(fitted.warnings);
        maps.push(fitted.map);
    }
    let calibrator =
        MapCalibrator { form, n_classes: preds.n_classes(), maps, device: preds.device().clone() };
    // The record's training NLL: each calibration row's label through the maps.
    let nll = known_nll.unwrap_or_else(|| {
        let at_labels = match &tops {
            Some(tops) => calibrated_at_labels(&calibrator.maps, tops, &scores),
            None => form.label_probabilities(&calibrator.maps, &scores),
        };
        mean_nll(&at_labels, weights)
    });
    let solver = if iterations == 0 { Solver::Direct } else { Solver::Newton };
    let shape = (scores.n_samples(), preds.n_classes());
    let mut record =
        FitRecord::host(solver, iterations, (nll, nll), converged, shape, preds.device(), start);
    record.warnings = warnings;
    Ok(Fitted { calibrator, record })
}

/// The fit of [`fit_maps`] from maps fitted on pairs sorted on the device: the problems
/// with one outcome only as [`degenerate`] says, the training NLL the device's.
#[cfg(feature = "wgpu")]
fn fitted_on_device<M: BinaryMap>(
    fit: DeviceFit<M>,
    preds: &Predictions,
    start: Instant,
) -> Result<Fitted<MapCalibrator<M>>> {
    let form = if preds.n_columns() == 1 { Form::Binary } else { Form::OneVsRest };
    let n = preds.n_samples();
    let (mut maps, mut warnings) = (Vec::new(), fit.warnings);
    for (k, (map, n_pos)) in fit.maps.into_iter().zip(fit.positives).enumerate() {
        let fitted = degenerate::<M>(form, k, n, n_pos).unwrap_or(Ok(BinaryFitted::exact(map)))?;
        warnings.extend(fitted.warnings);
        maps.push(fitted.map);
    }
    let calibrator =
        MapCalibrator { form, n_classes: preds.n_classes(), maps, device: preds.device().clone() };
    let nll = match fit.nll {
        Some(nll) => nll,
        None => device_nll(&calibrator.maps, preds)?,
    };
    let shape = (n, preds.n_classes());
    let nll = (nll, nll);
    let solver = if fit.iterations == 0 { Solver::Direct } else { Solver::Newton };
    let (iterations, converged) = (fit.iterations, fit.converged);
    let mut record =
        FitRecord::host(solver, iterations, nll, converged, shape, preds.device(), start);
    record.engine = crate::fit::FitEngine::Kernels;
    record.dtype = crate::fit::FloatType::F32;
    record.warnings = warnings;
    Ok(Fitted { calibrator, record })
}

/// Every problem's map (problem `k` weighted by `weights[k]` when given), the problems shared
/// out over the cores (each fit is independent).
fn fit_all<F: BinaryFit + Sync>(
    config: &F,
    form: Form,
    sets: &[(Vec<f64>, Vec<bool>)],
    weights: Option<&[Vec<f64>]>,
    two_columns: bool,
) -> Result<Vec<BinaryFitted<F::Map>>> {
    let problems: Vec<usize> = (0..sets.len()).collect();
    in_order(&problems, |&k| {
        let class = if two_columns { 1 } else { k };
        let weights = weights.map(|w| w[k].as_slice());
        fit_one(config, form, class, (&sets[k].0, &sets[k].1), weights)
    })
    .into_iter()
    .collect()
}

/// Every class's one-vs-rest map, unweighted, each class's scores copied out of the rows only
/// while its map is fitted (a group of classes at a time on each core): the K columns never
/// exist at once (at 50,000 x 1,000 they were 400 MB of fresh pages).
fn fit_by_columns<F: BinaryFit + Sync>(
    config: &F,
    scores: &HostScores,
) -> Result<Vec<BinaryFitted<F::Map>>> {
    let labels = &scores.labels;
    scores
        .map_columns(|k, column| {
            let outcomes: Vec<bool> = labels.iter().map(|&y| y == k as i64).collect();
            fit_one(config, Form::OneVsRest, k, (&column, &outcomes), None)
        })
        .into_iter()
        .collect()
}

/// The mean NLL of `preds`' labels through `maps` applied on the device (their tables).
#[cfg(feature = "wgpu")]
fn device_nll<M: BinaryMap>(maps: &[M], preds: &Predictions) -> Result<f64> {
    let tables: Option<Vec<_>> = maps.iter().map(BinaryMap::device_table).collect();
    let tables = tables.ok_or_else(|| {
        FitError::Input(calib_core::CalibError::InvalidConfig(format!(
            "{} fitted on the device without a device table for its NLL",
            M::METHOD.name()
        )))
    })?;
    Ok(calib_core::engine::map_tables_nll(preds, &tables)?)
}

/// The map of problem `k`, or the identity when it has nothing to learn from: no rows, or (one-vs-rest)
/// outcomes all equal.
fn fit_one<F: BinaryFit>(
    config: &F,
    form: Form,
    k: usize,
    (scores, outcomes): (&[f64], &[bool]),
    weights: Option<&[f64]>,
) -> Result<BinaryFitted<F::Map>> {
    let n_pos = outcomes.iter().filter(|&&o| o).count();
    if let Some(identity) = degenerate(form, k, scores.len(), n_pos) {
        return identity;
    }
    let what = problem_name(form, k);
    let fitted = match weights {
        Some(w) => config.fit_weighted(scores, outcomes, w),
        None => config.fit_binary(scores, outcomes),
    };
    match fitted {
        // One class's problem that cannot be fitted (fewer rows than bins, constant scores)
        // keeps its scores; binary input has no other problem to fall back on.
        Err(FitError::UnsuitableInput { reason, .. }) if form != Form::Binary => {
            let mut fitted = BinaryFitted::exact(F::Map::identity());
            fitted.warnings.push(format!("{what}: {reason}; its map is the identity"));
            Ok(fitted)
        }
        Err(FitError::UnsuitableInput { method, reason }) => {
            Err(FitError::UnsuitableInput { method, reason: format!("{what}: {reason}") })
        }
        other => other,
    }
}

/// How a warning names problem `k`.
fn problem_name(form: Form, k: usize) -> String {
    match form {
        Form::Binary => "the binary scores".to_string(),
        Form::OneVsRest => format!("class {k}"),
        Form::TopLabel => format!("predicted class {k}"),
    }
}

/// The identity map with its warning (an error on binary input) for problem `k` of `n`
/// pairs, `n_pos` positive, when it has nothing to learn from: no rows, or (one-vs-rest)
/// outcomes all equal. Top-label: a predicted class whose rows are all right (or all wrong)
/// is still fitted (isotonic gives a constant, as MAPIE does); only a class never predicted
/// keeps the identity. `None`: the problem is fitted.
fn degenerate<M: BinaryMap>(
    form: Form,
    k: usize,
    n: usize,
    n_pos: usize,
) -> Option<Result<BinaryFitted<M>>> {
    let degenerate = if form == Form::TopLabel { n == 0 } else { n_pos == 0 || n_pos == n };
    if !degenerate {
        return None;
    }
    let what = problem_name(form, k);
    let why = match (n, n_pos) {
        (0, _) => "no calibration rows".to_string(),
        (n, 0) => format!("no positive outcome in its {n} rows"),
        (n, _) => format!("only positive outcomes in its {n} rows"),
    };
    if form == Form::Binary {
        return Some(Err(FitError::UnsuitableInput {
            method: M::METHOD.name().into(),
            reason: format!("{what}: {why}"),
        }));
    }
    let mut fitted = BinaryFitted::exact(M::identity());
    fitted.warnings.push(format!("{what}: {why}; its map is the identity"));
    Some(Ok(fitted))
}

/// Mean NLL of the calibrated probabilities of the labels, each clipped at 1e-15
/// (scikit-learn's `log_loss` convention, so a map that outputs 0 or 1 gives a finite record),
/// weighted by `weights` when given: a block of logs at a time (vectorised), summed in lanes.
fn mean_nll(at_labels: &[f64], weights: Option<&[f64]>) -> f64 {
    const BLOCK: usize = 1024;
    let mut logs = [0.0; BLOCK];
    let mut sum = 0.0;
    for (b, p) in at_labels.chunks(BLOCK).enumerate() {
        let logs = &mut logs[..p.len()];
        calib_kernels::dispatch(
            #[inline(always)]
            || {
                for (l, &p) in logs.iter_mut().zip(p) {
                    *l = -ln_positive(p.clamp(1e-15, 1.0));
                }
            },
        );
        sum += match weights {
            Some(w) => lane_dot(logs, &w[b * BLOCK..b * BLOCK + p.len()]),
            None => lane_sum(logs),
        };
    }
    sum / weights.map_or(at_labels.len().max(1) as f64, |w| w.iter().sum())
}
