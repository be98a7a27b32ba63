//! Where a pass's wall time goes (`calib --trace`, `CALIB_TRACE=1`): inside parallel sections,
//! as each worker's busy time, or outside them, the serial time that caps the speed-up.
//!
//! A traced stretch (a pass over the rows) runs from [`begin`] to [`end`]. Inside it, every
//! parallel section of calib's host passes ([`in_order`](crate::in_order), the fused engine's
//! and the range passes' thread scopes) adds its wall time to the stretch's parallel time and
//! each worker's busy time to that worker's slot (slot 0 is the calling thread). Then
//!
//! ```text
//! serial      S = wall - parallel                 (reading, checks, merges, refinement)
//! one thread  T1 ~ S + sum_t busy_t               (every worker's work done in turn)
//! Amdahl      T(p) = S + sum_t busy_t / p         (the predicted wall on p threads)
//! ```
//!
//! and the serial fraction `S / T1` bounds the speed-up on any number of cores by `T1 / S`.
//! Named serial steps ([`step`]: waiting for the reader, the chunk checks, merges, the end of
//! a pass) say where `S` goes.
//! Off by default: then every call is one relaxed atomic load.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One traced stretch, ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stretch {
    /// What ran (`pass 1`, ...).
    pub name: String,
    /// From [`begin`] to [`end`].
    pub wall: Duration,
    /// Inside parallel sections.
    pub parallel: Duration,
    /// Each worker slot's busy time inside the sections.
    pub busy: Vec<Duration>,
    /// Named serial steps ([`step`]) and the time each took in all, in first-seen order.
    pub steps: Vec<(&'static str, Duration)>,
}

impl Stretch {
    /// `S`: the wall time outside parallel sections.
    pub fn serial(&self) -> Duration {
        self.wall.saturating_sub(self.parallel)
    }

    /// `T1 ~ S + sum_t busy_t`: the stretch on one thread.
    pub fn one_thread(&self) -> Duration {
        self.serial() + self.busy.iter().sum::<Duration>()
    }

    /// `S / T1` (0 for an empty stretch).
    pub fn serial_fraction(&self) -> f64 {
        let t1 = self.one_thread().as_secs_f64();
        if t1 > 0.0 { self.serial().as_secs_f64() / t1 } else { 0.0 }
    }

    /// Amdahl's prediction on `threads` threads: `S + sum_t busy_t / threads`.
    pub fn predicted(&self, threads: usize) -> Duration {
        self.serial() + self.busy.iter().sum::<Duration>() / threads.max(1) as u32
    }
}

/// The stretch running and those ended.
#[derive(Debug, Default)]
struct Log {
    open: Option<(Instant, Stretch)>,
    ended: Vec<Stretch>,
}

static ON: AtomicBool = AtomicBool::new(false);

fn log() -> &'static Mutex<Log> {
    static LOG: OnceLock<Mutex<Log>> = OnceLock::new();
    LOG.get_or_init(|| {
        let from_env = std::env::var("CALIB_TRACE").is_ok_and(|v| !matches!(v.trim(), "" | "0"));
        ON.fetch_or(from_env, Ordering::Relaxed);
        Mutex::new(Log::default())
    })
}

fn with_log<R>(f: impl FnOnce(&mut Log) -> R) -> R {
    f(&mut log().lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// Whether tracing is on: [`set_tracing`], or `CALIB_TRACE` set to anything but `0`.
pub fn enabled() -> bool {
    log();
    ON.load(Ordering::Relaxed)
}

/// Turns tracing on or off for the rest of the process (`calib --trace` turns it on).
pub fn set_tracing(on: bool) {
    log();
    ON.store(on, Ordering::Relaxed);
}

/// Begins the stretch `name`, ending the one running.
pub fn begin(name: impl Into<String>) {
    if enabled() {
        end();
        let stretch = Stretch { name: name.into(), ..Stretch::default() };
        with_log(|log| log.open = Some((Instant::now(), stretch)));
    }
}

/// Ends the stretch running, if any.
pub fn end() {
    if enabled() {
        with_log(|log| {
            if let Some((start, mut stretch)) = log.open.take() {
                stretch.wall = start.elapsed();
                log.ended.push(stretch);
            }
        });
    }
}

/// The stretches ended so far, in order; the log is emptied.
pub fn take() -> Vec<Stretch> {
    with_log(|log| std::mem::take(&mut log.ended))
}

/// Runs `work` as the serial step `name` of the stretch running (reading, checks, merges,
/// the end of a pass), adding its serial time (its wall time less the parallel sections it
/// opened) to the step's: the trace then says where the serial time went. Inside a parallel
/// section it only runs `work` (that time is a worker's).
pub fn step<R>(name: &'static str, work: impl FnOnce() -> R) -> R {
    if !enabled() || OPEN.load(Ordering::Acquire) > 0 {
        return work();
    }
    let parallel = || with_log(|log| log.open.as_ref().map_or(Duration::ZERO, |o| o.1.parallel));
    let (start, before) = (Instant::now(), parallel());
    let out = work();
    let took = start.elapsed();
    with_log(|log| {
        if let Some((_, stretch)) = &mut log.open {
            let took = took.saturating_sub(stretch.parallel.saturating_sub(before));
            match stretch.steps.iter_mut().find(|(n, _)| *n == name) {
                Some((_, d)) => *d += took,
                None => stretch.steps.push((name, took)),
            }
        }
    });
    out
}

/// A parallel section of the stretch running: its wall time counts as parallel when it ends
/// (dropped); [`Section::busy`] times each worker. A section opened inside another (a pass
/// nested in a worker's share) counts nothing: its time is the outer section's.
#[derive(Debug)]
pub struct Section {
    /// When the section started, if it counts.
    start: Option<Instant>,
    /// Whether it holds a place in [`OPEN`].
    open: bool,
}

/// Sections open, over every thread.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// Starts a parallel section (a no-op unless tracing is on).
pub fn section() -> Section {
    if !enabled() {
        return Section { start: None, open: false };
    }
    let outermost = OPEN.fetch_add(1, Ordering::AcqRel) == 0;
    Section { start: outermost.then(Instant::now), open: true }
}

impl Section {
    /// Runs `work` as worker `slot`'s share of the section, timing it.
    pub fn busy<R>(&self, slot: usize, work: impl FnOnce() -> R) -> R {
        if self.start.is_none() {
            return work();
        }
        let start = Instant::now();
        let out = work();
        let took = start.elapsed();
        with_log(|log| {
            if let Some((_, stretch)) = &mut log.open {
                if stretch.busy.len() <= slot {
                    stretch.busy.resize(slot + 1, Duration::ZERO);
                }
                stretch.busy[slot] += took;
            }
        });
        out
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        if self.open {
            OPEN.fetch_sub(1, Ordering::AcqRel);
        }
        if let Some(start) = self.start {
            let took = start.elapsed();
            with_log(|log| {
                if let Some((_, stretch)) = &mut log.open {
                    stretch.parallel += took;
                }
            });
        }
    }
}
