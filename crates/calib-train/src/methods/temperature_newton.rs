//! The fast temperature solver: safeguarded Newton on `s = 1/T`, one fused f64 pass over the
//! host rows per iteration, on all cores, with the vectorised kernels of
//! [`calib_kernels`].
//!
//! ```text
//! L(s)   = (1/N) sum_i [ logsumexp_j(s z_ij) - s z_iy ]          convex in s
//! L'(s)  = (1/N) sum_i [ E_p[z_i] - z_iy ],      p = softmax(s z_i)
//! L''(s) = (1/N) sum_i Var_p[z_i]  >= 0
//! ```
//! With sample weights each row's terms are weighted by `w_i` and `N` becomes `W = sum_i w_i`
//! (the host passes; weighted rows never take the device passes).
//! With `m_i = max_j z_ij` and `d_ij = z_ij - m_i <= 0`, the pass accumulates per row
//! `S0 = sum_j exp(s d_ij)`, `S1 = sum_j d_ij exp(s d_ij)`, `S2 = sum_j d_ij^2 exp(s d_ij)`;
//! then `logsumexp = s m_i + ln S0`, `E_p[z] = m_i + S1/S0`, `Var_p[z] = S2/S0 - (S1/S0)^2`.
//! The root of `L'` is kept in a bracket `[lo, hi]` (sign of `L'`); a Newton step that leaves it
//! is replaced by bisection (or doubling while `hi` is unknown). Iterations start on a strided
//! subsample of about 8,192 rows until the gradient there is below 1e-3, then continue on all
//! rows, so the full passes are the last two or three of a quadratically converging sequence.
//!
//! The gradient reported is `dL/d(log T) = -s L'(s)`, the gradient of the `log_temperature`
//! parameter the optimiser path fits, so both paths share one stopping rule.
//!
//! On a GPU device (feature `wgpu`) the passes run as one kernel each on the device
//! ([`calib_core::engine::TemperedRows`], f32 per row, partial sums added in f64): only three
//! numbers per 1,024 rows come back per iteration, and the same solver steers them.

use std::thread;
use std::time::Instant;

use calib_core::input::{HostValues, Predictions};
use calib_kernels::{Score, dispatch, max_and_argmax, tempered_moments};

use crate::error::{FitError, Result};
use crate::fit::{FitEngine, FitRecord, FloatType, Point, Progress, Solver, StopReason};

/// Stopping rule of the Newton solver.
pub(crate) struct NewtonSettings {
    /// On `|dL/d log T|`.
    pub tolerance_grad: f64,
    /// Iteration cap.
    pub max_iter: usize,
}

/// Rows in the warm-start subsample.
const SUBSAMPLE: usize = 8192;

/// Per-row sums: L, L', L'' (sums, not means).
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    loss: f64,
    d1: f64,
    d2: f64,
}

impl std::ops::Add for Sums {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self { loss: self.loss + o.loss, d1: self.d1 + o.d1, d2: self.d2 + o.d2 }
    }
}

/// Row maxima and label logits, computed once, and the rows' sample weights.
struct Rows<'a> {
    values: HostValues<'a>,
    k: usize,
    max: Vec<f64>,
    label: Vec<f64>,
    weights: Option<&'a [f64]>,
}

impl Rows<'_> {
    /// `L`, `L'`, `L''` sums at `s` over the rows `idx` (all rows when `None`).
    fn sums(&self, s: f64, idx: Option<&[usize]>) -> Sums {
        let threads = calib_kernels::threads();
        let n = idx.map_or(self.max.len(), <[usize]>::len);
        let per = n.div_ceil(threads).max(1024);
        thread::scope(|scope| {
            let handles: Vec<_> = (0..n)
                .step_by(per)
                .map(|start| {
                    let end = (start + per).min(n);
                    scope.spawn(move || {
                        dispatch(
                            #[inline(always)]
                            || {
                                let mut acc = Sums::default();
                                for r in start..end {
                                    let i = idx.map_or(r, |ix| ix[r]);
                                    acc = acc + self.weighted_row(i, s);
                                }
                                acc
                            },
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("worker"))
                .fold(Sums::default(), |a, b| a + b)
        })
    }

    /// One row's contribution times its weight (zero-weight rows skip the row's pass).
    #[inline(always)]
    fn weighted_row(&self, i: usize, s: f64) -> Sums {
        match self.weights {
            None => self.row(i, s),
            Some(w) if w[i] == 0.0 => Sums::default(),
            Some(w) => {
                let r = self.row(i, s);
                Sums { loss: w[i] * r.loss, d1: w[i] * r.d1, d2: w[i] * r.d2 }
            }
        }
    }

    /// The rows' total weight over `idx` (all rows when `None`): their count without weights.
    fn total(&self, idx: Option<&[usize]>) -> f64 {
        match (self.weights, idx) {
            (None, _) => idx.map_or(self.max.len(), <[usize]>::len) as f64,
            (Some(w), None) => w.iter().sum(),
            (Some(w), Some(ix)) => ix.iter().map(|&i| w[i]).sum(),
        }
    }

    /// One row's contribution.
    #[inline(always)]
    fn row(&self, i: usize, s: f64) -> Sums {
        let m = self.max[i];
        let (s0, s1, s2) = match &self.values {
            HostValues::F32(v) => tempered_moments(&v[i * self.k..(i + 1) * self.k], m, s),
            HostValues::F64(v) => tempered_moments(&v[i * self.k..(i + 1) * self.k], m, s),
        };
        let mean = s1 / s0;
        Sums {
            loss: s * (m - self.label[i]) + s0.ln(),
            d1: m + mean - self.label[i],
            d2: (s2 / s0 - mean * mean).max(0.0),
        }
    }
}

/// Where the solver's passes run.
trait Passes {
    /// The mean loss and derivatives at `s` over the subsample (`sub`) or all rows.
    fn mean_at(&self, s: f64, sub: bool, iteration: usize) -> Result<MeanPoint>;
}

/// The host rows and the subsample's row indices.
struct HostPasses<'a> {
    rows: Rows<'a>,
    sub: Vec<usize>,
}

impl Passes for HostPasses<'_> {
    fn mean_at(&self, s: f64, sub: bool, iteration: usize) -> Result<MeanPoint> {
        self.rows.mean_at(s, sub.then_some(self.sub.as_slice()), iteration)
    }
}

/// The rows on the device; the subsample is every `stride`-th row, as on the host.
#[cfg(feature = "wgpu")]
struct DevicePasses<'a> {
    rows: &'a calib_core::engine::TemperedRows,
    stride: usize,
}

#[cfg(feature = "wgpu")]
impl Passes for DevicePasses<'_> {
    fn mean_at(&self, s: f64, sub: bool, iteration: usize) -> Result<MeanPoint> {
        let ([loss, d1, d2], used) = self.rows.sums(s, if sub { self.stride } else { 1 })?;
        MeanPoint::of(Sums { loss, d1, d2 }, used as f64, iteration)
    }
}

/// Fits `log T` by Newton on `s = 1/T`, on the host rows in f64 or, with `on_device`, with
/// the device kernels; returns it with the fit record.
pub(crate) fn fit_newton(
    preds: &Predictions,
    settings: NewtonSettings,
    on_device: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<(f64, FitRecord)> {
    #[cfg(feature = "wgpu")]
    if on_device {
        let rows = calib_core::engine::TemperedRows::new(preds)?;
        return fit_newton_on_device(&rows, settings, progress);
    }
    let _ = on_device;
    let start = Instant::now();
    let (n, k) = (preds.n_samples(), preds.n_columns());
    let mut stride = (n / SUBSAMPLE).max(1);
    let (values, labels) = preds.host_rows()?;
    let (max, label) = row_max_and_label(&values, &labels, k);
    let weights = preds.weights().map(|w| w.values());
    let rows = Rows { values, k, max, label, weights };
    let mut sub: Vec<usize> = (0..n).step_by(stride).collect();
    if rows.total(Some(&sub)) == 0.0 {
        // Every sampled row has weight 0: no warm start.
        (stride, sub) = (1, Vec::new());
    }
    let passes = HostPasses { rows, sub };
    let shape = Shape { n, k, backend: calib_core::BackendKind::of(preds.device()) };
    solve(shape, &passes, stride, settings, FitEngine::Host, progress, start)
}

/// [`fit_newton`] on logits held on a GPU device.
#[cfg(feature = "wgpu")]
pub(crate) fn fit_newton_on_device(
    rows: &calib_core::engine::TemperedRows,
    settings: NewtonSettings,
    progress: &mut dyn FnMut(Progress),
) -> Result<(f64, FitRecord)> {
    let start = Instant::now();
    let (n, k) = (rows.n_samples(), rows.n_classes());
    let stride = (n / SUBSAMPLE).max(1);
    let passes = DevicePasses { rows, stride };
    let shape = Shape { n, k, backend: calib_core::BackendKind::of(rows.device()) };
    solve(shape, &passes, stride, settings, FitEngine::Kernels, progress, start)
}

/// What the record says about the data.
struct Shape {
    n: usize,
    k: usize,
    backend: calib_core::BackendKind,
}

/// The safeguarded Newton iteration over `passes`.
fn solve(
    shape: Shape,
    passes: &dyn Passes,
    stride: usize,
    settings: NewtonSettings,
    engine: FitEngine,
    progress: &mut dyn FnMut(Progress),
    start: Instant,
) -> Result<(f64, FitRecord)> {
    let mut on_sub = stride > 1;
    let mut bracket = Bracket::OPEN;
    let (mut s, mut iterations, mut evaluations) = (1.0f64, 0, 0);
    let (mut loss, mut grad);
    let stop = loop {
        let point = passes.mean_at(s, on_sub, iterations)?;
        evaluations += 1;
        (loss, grad) = (point.loss, -s * point.d1); // dL/d(log T)
        if on_sub {
            if grad.abs() <= 1e-3 || iterations >= settings.max_iter {
                // Refine on all rows from here; the subsample's bracket does not hold for them.
                (on_sub, bracket) = (false, Bracket::OPEN);
                continue;
            }
        } else {
            progress(Progress { iteration: iterations, loss, grad_norm: grad.abs() });
            if grad.abs() <= settings.tolerance_grad {
                break StopReason::Gradient;
            }
            if iterations >= settings.max_iter {
                break StopReason::IterationCap;
            }
        }
        let next = bracket.step(s, point.d1, point.d2);
        iterations += 1;
        if next == s || bracket.exhausted(s) {
            if !on_sub {
                break StopReason::LossChange; // the bracket cannot shrink further in f64
            }
            (on_sub, bracket) = (false, Bracket::OPEN);
        }
        s = next;
        if s > 1e12 {
            break StopReason::NoProgress; // T -> 0: separable data, reported by the caller
        }
    };
    let point = Point { loss, nll: loss, grad_norm: grad.abs() };
    let mut record = newton_record(shape, point, (iterations, evaluations), stop, start);
    if engine == FitEngine::Kernels {
        (record.engine, record.dtype) = (engine, FloatType::F32);
    }
    Ok((-s.ln(), record))
}

/// The record of a Newton fit on data of `shape` that stopped at `point` for `stop`.
fn newton_record(
    shape: Shape,
    point: Point,
    (iterations, evaluations): (usize, usize),
    stop: StopReason,
    start: Instant,
) -> FitRecord {
    FitRecord {
        optimizer: Solver::Newton,
        iterations,
        evaluations,
        hessian_products: 0,
        final_loss: point.loss,
        final_nll: point.nll,
        grad_norm: point.grad_norm,
        wall_time_s: start.elapsed().as_secs_f64(),
        converged: matches!(stop, StopReason::Gradient | StopReason::LossChange),
        stop_reason: stop,
        n_samples: shape.n,
        n_classes: shape.k,
        cross_validation: Vec::new(),
        backend: shape.backend,
        dtype: FloatType::F64,
        engine: FitEngine::Host,
        warnings: Vec::new(),
        search: None,
    }
}

/// The interval `(lo, hi)` known to hold the optimum of `s`, from the signs of the
/// derivatives seen so far.
#[derive(Clone, Copy)]
struct Bracket {
    lo: f64,
    hi: f64,
}

impl Bracket {
    /// Nothing known yet: `s` in `(0, inf)`.
    const OPEN: Self = Self { lo: 0.0, hi: f64::INFINITY };

    /// Narrows the bracket by the slope `d1` at `s`, then the next `s`: the Newton step when
    /// the curvature `d2` is positive and the step stays inside, else the bisection (or a
    /// doubling while the bracket is open above).
    fn step(&mut self, s: f64, d1: f64, d2: f64) -> f64 {
        if d1 < 0.0 {
            self.lo = self.lo.max(s)
        } else {
            self.hi = self.hi.min(s)
        }
        let newton = if d2 > 0.0 { s - d1 / d2 } else { f64::NAN };
        if newton > self.lo && newton < self.hi {
            newton
        } else if self.hi.is_finite() {
            0.5 * (self.lo + self.hi)
        } else {
            2.0 * s.max(self.lo)
        }
    }

    /// The bracket is as narrow as f64 resolves around `s`.
    fn exhausted(&self, s: f64) -> bool {
        (self.hi - self.lo) <= 4.0 * f64::EPSILON * s
    }
}

/// Mean loss and derivatives in `s` over some rows.
struct MeanPoint {
    loss: f64,
    d1: f64,
    d2: f64,
}

impl Rows<'_> {
    /// The mean over the rows `idx` (all when `None`) at `s`.
    ///
    /// # Errors
    /// [`FitError::NonFinite`] naming `iteration` when a value is not finite.
    fn mean_at(&self, s: f64, idx: Option<&[usize]>, iteration: usize) -> Result<MeanPoint> {
        MeanPoint::of(self.sums(s, idx), self.total(idx), iteration)
    }
}

impl MeanPoint {
    /// The mean of `sums` over `count` rows.
    ///
    /// # Errors
    /// [`FitError::NonFinite`] naming `iteration` when a value is not finite.
    fn of(sums: Sums, count: f64, iteration: usize) -> Result<Self> {
        let (loss, d1, d2) = (sums.loss / count, sums.d1 / count, sums.d2 / count);
        if !(loss.is_finite() && d1.is_finite() && d2.is_finite()) {
            return Err(FitError::NonFinite { what: "loss".into(), iteration, value: loss });
        }
        Ok(Self { loss, d1, d2 })
    }
}

/// Per-row `max_j z_ij` and `z_iy` in f64.
fn row_max_and_label(values: &HostValues<'_>, labels: &[i64], k: usize) -> (Vec<f64>, Vec<f64>) {
    fn go<T: Score>(v: &[T], labels: &[i64], k: usize) -> (Vec<f64>, Vec<f64>) {
        v.chunks_exact(k)
            .zip(labels)
            .map(|(row, &y)| (max_and_argmax(row).0.into(), row[y as usize].into()))
            .unzip()
    }
    match values {
        HostValues::F32(v) => go(v, labels, k),
        HostValues::F64(v) => go(v, labels, k),
    }
}
