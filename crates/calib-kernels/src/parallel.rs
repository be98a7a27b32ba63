//! [`in_order`]: independent pieces of work shared out over the cores, their results in the
//! order of the input; [`for_row_blocks`]: rows written in place, a block of them per thread;
//! [`threads`]: how many threads, [`set_threads`]: a cap.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

thread_local! {
    /// Whether this thread is one of [`in_order`]'s or [`for_row_blocks`]' workers.
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// `work(item)` for every item, on as many threads as the machine has cores (at most one per
/// item), each thread taking the next item when it is done with one (a work queue: pieces of
/// very different cost balance); the results in item order. Inside `work` on more than one
/// thread, [`threads`] is 1: a parallel pass nested in another runs on its worker alone
/// instead of spawning more threads than cores.
///
/// # Panics
/// When `work` panics.
pub fn in_order<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads().min(items.len()).max(1);
    let next = AtomicUsize::new(0);
    let worker = || {
        // One worker alone leaves the other cores to the work's own passes.
        let _worker = (threads > 1).then(WorkerMark::set);
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            out.push((i, work(item)));
        }
        out
    };
    // The calling thread is one of the workers (slot 0), the pool's helpers the others.
    let section = crate::trace::section();
    let slots: Vec<Mutex<Vec<(usize, R)>>> = (0..threads).map(|_| Mutex::default()).collect();
    crate::pool::run(threads - 1, &|t| {
        let out = section.busy(t, worker);
        *slots[t].lock().unwrap_or_else(PoisonError::into_inner) = out;
    });
    drop(section);
    let mut done: Vec<(usize, R)> = slots
        .into_iter()
        .flat_map(|s| s.into_inner().unwrap_or_else(PoisonError::into_inner))
        .collect();
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// `work(first, block)` for `rows` (`[n, width]`, row-major) cut into one block of whole rows
/// per thread, each of at least `min_rows` rows (a smaller input is one block), the first on
/// the calling thread, each other on a thread of its own; `first` is the block's first row.
/// Inside `work`, as in [`in_order`]'s, [`threads`] is 1 when there are several blocks.
///
/// ```
/// use calib_kernels::for_row_blocks;
/// let mut rows = vec![0usize; 2 * 5000];
/// for_row_blocks(&mut rows, 2, 1024, |first, block| {
///     block.chunks_exact_mut(2).enumerate().for_each(|(i, r)| r.fill(first + i));
/// });
/// assert!(rows.chunks_exact(2).enumerate().all(|(i, r)| r == [i, i]));
/// ```
pub fn for_row_blocks<T: Send>(
    rows: &mut [T],
    width: usize,
    min_rows: usize,
    work: impl Fn(usize, &mut [T]) + Sync,
) {
    let width = width.max(1);
    let per = (rows.len() / width).div_ceil(threads()).max(min_rows).max(1);
    let several = rows.len() > per * width;
    let section = crate::trace::section();
    let blocks: Vec<Mutex<Option<&mut [T]>>> =
        rows.chunks_mut(per * width).map(|b| Mutex::new(Some(b))).collect();
    crate::pool::run(blocks.len().saturating_sub(1), &|b| {
        let _worker = several.then(WorkerMark::set);
        let block = blocks[b].lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(block) = block {
            section.busy(b, || work(b * per, block));
        }
    });
}

/// The number of threads calib's host passes share work out over: the cap of
/// [`set_threads`] if one is set, else `CALIB_THREADS`, else `RAYON_NUM_THREADS` (a positive
/// whole number), else `std::thread::available_parallelism` (the cores of the CPU affinity
/// and cgroup quota the process runs under). The environment and the cores are read once per
/// process (on Linux each `available_parallelism` call reads the affinity mask and the
/// cgroup's files). 1 inside the work of [`in_order`] and [`for_row_blocks`] on several
/// threads. Results do not depend on it.
pub fn threads() -> usize {
    if IN_WORKER.get() {
        return 1;
    }
    match CAP.load(Ordering::Relaxed) {
        0 => detected(),
        n => n,
    }
}

/// Caps [`threads`] at `n` for the rest of the process (`0`: back to the default); `calib
/// --threads N` sets it.
pub fn set_threads(n: usize) {
    CAP.store(n, Ordering::Relaxed);
}

/// Marks the current thread as a worker of [`in_order`] or [`for_row_blocks`] until dropped
/// (also when the work panics), then restores what it was.
struct WorkerMark(bool);

impl WorkerMark {
    fn set() -> Self {
        Self(IN_WORKER.replace(true))
    }
}

impl Drop for WorkerMark {
    fn drop(&mut self) {
        IN_WORKER.set(self.0);
    }
}

/// The cap of [`set_threads`] (0: none).
static CAP: AtomicUsize = AtomicUsize::new(0);

/// The threads from the environment or the cores, read once.
fn detected() -> usize {
    static DETECTED: OnceLock<usize> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        let from_env = |key: &str| std::env::var(key).ok()?.trim().parse::<usize>().ok();
        ["CALIB_THREADS", "RAYON_NUM_THREADS"]
            .into_iter()
            .find_map(|key| from_env(key).filter(|&n| n > 0))
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |t| t.get()))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_in_item_order() {
        let items: Vec<u64> = (0..1000).collect();
        let out = super::in_order(&items, |&i| i * i);
        assert_eq!(out, items.iter().map(|i| i * i).collect::<Vec<_>>());
        assert!(super::in_order(&[] as &[u8], |_| 0).is_empty());
    }

    #[test]
    fn nested_work_sees_one_thread() {
        let inner = super::in_order(&[0u8; 4], |_| super::threads());
        assert_eq!(inner, vec![1; 4]);
        assert!(!super::IN_WORKER.get());
    }
}
