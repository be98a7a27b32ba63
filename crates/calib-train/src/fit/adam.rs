//! Mini-batch Adam (burn's `Adam`), for inputs beyond memory and for training loops.

use std::time::Instant;

use burn::optim::{AdamConfig, GradientsParams};
use calib_core::synthetic::SplitMix64;

use super::context::{FitContext, Progress};
use super::data::FitData;
use super::map::CalibrationMap;
use super::objective::{Evaluation, objective};
use super::record::{FitRecord, Solver, StopReason};
use crate::error::{FitError, Result};

/// Settings of one Adam run.
pub(crate) struct AdamRun {
    pub learning_rate: f64,
    pub batch_size: usize,
    pub epochs: usize,
    pub seed: u64,
}

/// Minimises the objective of `init` on `data` with mini-batch Adam; the record's loss and
/// gradient norm are full-batch values at the returned parameters.
pub(crate) fn fit_adam<M: CalibrationMap>(
    init: M,
    data: &FitData,
    run: AdamRun,
    ctx: &mut FitContext<'_>,
) -> Result<(M, FitRecord)> {
    let start = Instant::now();
    let mut optimizer = AdamConfig::new().init();
    let mut rng = SplitMix64(run.seed);
    let n = data.n_samples;
    let mut order: Vec<usize> = (0..n).collect();
    let mut module = init;
    let mut evaluations = 0;
    let mut previous = f64::INFINITY;
    let mut stop = StopReason::IterationCap;
    let mut epochs = 0;
    let mut last = Evaluation::of(&module, data)?;
    for epoch in 1..=run.epochs.min(ctx.max_iter) {
        // Fisher-Yates with the seeded generator: deterministic batches.
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for batch in order.chunks(run.batch_size) {
            let part = if batch.len() == n { data.clone() } else { data.select(batch) };
            let (loss, _) = objective(&module, &part);
            let grads = GradientsParams::from_grads(loss.backward(), &module);
            module = optimizer.step(run.learning_rate, module, grads);
            evaluations += 1;
        }
        epochs = epoch;
        last = Evaluation::of(&module, data)?;
        evaluations += 1;
        if !last.is_finite() {
            return Err(FitError::NonFinite {
                what: "loss".into(),
                iteration: epoch,
                value: last.loss,
            });
        }
        (ctx.progress)(Progress { iteration: epoch, loss: last.loss, grad_norm: last.grad_norm });
        if last.grad_norm <= ctx.tolerance_grad {
            stop = StopReason::Gradient;
            break;
        }
        if (previous - last.loss).abs() <= ctx.tolerance_change * last.loss.abs().max(1.0) {
            stop = StopReason::LossChange;
            break;
        }
        previous = last.loss;
    }
    Ok((module, ctx.record(Solver::Adam, epochs, evaluations, last.point(), stop, start)))
}
