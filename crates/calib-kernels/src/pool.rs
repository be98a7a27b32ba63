//! [`run`]: one job on the calling thread and on parked helper threads, which stay alive
//! between parallel passes.
//!
//! Starting and joining a thread costs about 60 µs on a 2-core VM, as much as a whole pass of
//! a 10,000 x 10 fit; a parked helper starts in a few microseconds. The helpers are spawned
//! on first use, as many as the largest pass asked for, and never exit. A pass that finds
//! the pool busy (another thread of the process is in one) or a process that was forked
//! after the pool started (its helpers did not survive the fork) spawns scoped threads as
//! before.
//!
//! One audited `unsafe` (the workspace lint is `deny`): the job's borrow is erased so that
//! threads that outlive it can call it, as `std::thread::scope` does inside; [`run`] returns
//! only after every helper is done with the job, a panic included.
#![allow(unsafe_code)]

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// A job as the helpers see it: called with the helper's slot, `1..=helpers`.
type Job = &'static (dyn Fn(usize) + Sync);

/// How long a helper polls for the next pass before it sleeps: a fit's passes follow each
/// other within microseconds, and a wake-up from sleep costs tens of them.
const SPIN: Duration = Duration::from_micros(100);

/// What the caller and the helpers share.
struct Shared {
    state: Mutex<State>,
    /// [`State::generation`], readable without the lock (the helpers' polling).
    generation: AtomicU64,
    /// Signalled when a pass starts.
    start: Condvar,
    /// Signalled when the last helper of a pass is done.
    done: Condvar,
}

/// The pass in progress.
struct State {
    /// Counts passes; a helper runs each new one it takes part in once.
    generation: u64,
    /// The pass's job, while it runs.
    job: Option<Job>,
    /// Helpers that take part: slots `1..=wanted`.
    wanted: usize,
    /// Helpers of the pass not yet done.
    running: usize,
    /// The first panic of a helper, resumed on the caller.
    panic: Option<Box<dyn Any + Send>>,
}

/// The helpers of this process.
struct Pool {
    shared: Arc<Shared>,
    helpers: usize,
    /// The process that spawned them.
    pid: u32,
}

/// The pool; locked by the pass that uses it.
static POOL: Mutex<Option<Pool>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `job(0)` on the calling thread and `job(1)`, ..., `job(helpers)` on other threads, all
/// finished when it returns.
///
/// # Panics
/// When `job` panics (the first panic is resumed once every thread is done).
pub(crate) fn run(helpers: usize, job: &(dyn Fn(usize) + Sync)) {
    if helpers == 0 {
        return job(0);
    }
    let mut pool = match POOL.try_lock() {
        Ok(pool) => pool,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return scoped(helpers, job),
    };
    let pid = std::process::id();
    if pool.as_ref().is_some_and(|p| p.pid != pid) {
        // A forked child: the helpers are the parent's. Their state is left as it is.
        std::mem::forget(pool.take());
    }
    let pool = pool.get_or_insert_with(|| Pool::new(pid));
    pool.grow(helpers);
    // SAFETY: the job's borrow is erased for the helpers; `dispatch` returns only when every
    // helper that took part is done with it (also when a call of it panics), and the job is
    // removed from the state before that.
    let erased: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), Job>(job) };
    pool.dispatch(helpers, erased);
}

impl Pool {
    fn new(pid: u32) -> Self {
        let state = State { generation: 0, job: None, wanted: 0, running: 0, panic: None };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            generation: AtomicU64::new(0),
            start: Condvar::new(),
            done: Condvar::new(),
        });
        Self { shared, helpers: 0, pid }
    }

    /// At least `helpers` helpers.
    fn grow(&mut self, helpers: usize) {
        while self.helpers < helpers {
            self.helpers += 1;
            let (shared, slot) = (Arc::clone(&self.shared), self.helpers);
            std::thread::Builder::new()
                .name(format!("calib-{slot}"))
                .spawn(move || helper(&shared, slot))
                .expect("cannot start a worker thread");
        }
    }

    /// Runs `job` on slots `0..=helpers` and waits for all of them.
    fn dispatch(&self, helpers: usize, job: Job) {
        let shared = &self.shared;
        {
            let mut state = lock(&shared.state);
            state.generation += 1;
            state.job = Some(job);
            state.wanted = helpers;
            state.running = helpers;
            shared.generation.store(state.generation, Ordering::Release);
            shared.start.notify_all();
        }
        let own = catch_unwind(AssertUnwindSafe(|| job(0)));
        let mut state = lock(&shared.state);
        while state.running > 0 {
            state = shared.done.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.job = None;
        let panic = state.panic.take();
        drop(state);
        if let Err(payload) = own {
            resume_unwind(payload);
        }
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
    }
}

/// A helper's life: wait for a pass it takes part in, run its slot, report, again.
fn helper(shared: &Shared, slot: usize) {
    let mut seen = 0;
    loop {
        let spin_until = Instant::now() + SPIN;
        while shared.generation.load(Ordering::Acquire) == seen && Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        let mut state = lock(&shared.state);
        while state.generation == seen {
            state = shared.start.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        seen = state.generation;
        if slot > state.wanted {
            continue;
        }
        let job = state.job.expect("a pass in progress has a job");
        drop(state);
        let result = catch_unwind(AssertUnwindSafe(|| job(slot)));
        let mut state = lock(&shared.state);
        if let Err(payload) = result {
            state.panic.get_or_insert(payload);
        }
        state.running -= 1;
        if state.running == 0 {
            shared.done.notify_one();
        }
    }
}

/// [`run`] on scoped threads spawned for this pass.
fn scoped(helpers: usize, job: &(dyn Fn(usize) + Sync)) {
    std::thread::scope(|scope| {
        for slot in 1..=helpers {
            scope.spawn(move || job(slot));
        }
        job(0);
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn every_slot_runs_once_per_pass() {
        for helpers in [0, 1, 3, 2, 5] {
            let hits: Vec<AtomicUsize> = (0..=helpers).map(|_| AtomicUsize::new(0)).collect();
            for _ in 0..50 {
                run(helpers, &|slot| {
                    hits[slot].fetch_add(1, Ordering::Relaxed);
                });
            }
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 50), "{helpers} helpers");
        }
    }

    #[test]
    fn a_helpers_panic_reaches_the_caller_and_the_pool_goes_on() {
        let caught = catch_unwind(|| {
            run(2, &|slot| assert_ne!(slot, 2, "slot two fails"));
        });
        assert!(caught.is_err());
        let sum = AtomicUsize::new(0);
        run(2, &|slot| {
            sum.fetch_add(slot, Ordering::Relaxed);
        });
        assert_eq!(sum.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn passes_from_several_threads_at_once_all_run() {
        let total = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..20 {
                        run(1, &|_| {
                            total.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 20 * 2);
    }
}
