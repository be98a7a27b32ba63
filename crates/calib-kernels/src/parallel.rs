//! [`in_order`]: independent pieces of work shared out over the cores, their results in the
//! order of the input; [`cores`]: how many.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `work(item)` for every item, on as many threads as the machine has cores (at most one per
/// item), each thread taking the next item when it is done with one (a work queue: pieces of
/// very different cost balance); the results in item order.
///
/// # Panics
/// When `work` panics.
pub fn in_order<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = cores().min(items.len()).max(1);
    let next = AtomicUsize::new(0);
    let worker = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            out.push((i, work(item)));
        }
        out
    };
    // The calling thread is one of the workers: `threads - 1` are spawned.
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(worker)).collect();
        let mut done = worker();
        handles.into_iter().for_each(|h| done.extend(h.join().expect("a piece of work panicked")));
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The number of cores work is shared out over: `std::thread::available_parallelism`, read
/// once per process (on Linux each call reads the affinity mask and the cgroup's quota).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |t| t.get()))
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
}
