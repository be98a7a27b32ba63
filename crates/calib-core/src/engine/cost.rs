//! [`DeviceCost`]: what work on a device costs, counted where it is launched and where its
//! results are read back, so that budgets (passes over the scores, host synchronisations) can
//! be asserted on any machine, lavapipe included, without timing anything.
//!
//! Counted on the calling thread: calib's own kernels (the `engine::cube` kernels) as they are
//! launched, with the bytes of the `N x K` scores each one reads; every read-back transaction
//! ([`read_back`]) as one host synchronisation, with its bytes. burn's own tensor ops are not
//! launches here (burn may fuse them); their read-backs are, when they go through
//! [`read_back`] (the device fits do).

use std::cell::Cell;
use std::ops::Sub;

use burn::tensor::{TensorData, Transaction};

use crate::error::{CalibError, Result};

/// Counts of device work; see the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCost {
    /// Launches of calib's kernels.
    pub launches: u64,
    /// Bytes of the scores (the `N x K` values) those kernels read: the data's size in bytes
    /// times the passes over it.
    pub score_bytes: u64,
    /// Host synchronisations: read-back transactions waited for.
    pub syncs: u64,
    /// Bytes read back to the host.
    pub read_back_bytes: u64,
    /// The bytes of the largest single read-back (a measured call that never reads the `N x
    /// K` scores back keeps this below their size).
    pub largest_read_bytes: u64,
}

thread_local! {
    static COUNTED: Cell<DeviceCost> = const { Cell::new(DeviceCost {
        launches: 0,
        score_bytes: 0,
        syncs: 0,
        read_back_bytes: 0,
        largest_read_bytes: 0,
    }) };
}

impl DeviceCost {
    /// Runs `f` and returns what it cost on this thread.
    ///
    /// ```
    /// use calib_core::engine::DeviceCost;
    ///
    /// let ((), cost) = DeviceCost::measure(|| ());
    /// assert_eq!(cost, DeviceCost::default());
    /// ```
    pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Self) {
        let before = COUNTED.get();
        COUNTED.set(DeviceCost { largest_read_bytes: 0, ..before });
        let out = f();
        let after = COUNTED.get();
        let largest = before.largest_read_bytes.max(after.largest_read_bytes);
        COUNTED.set(DeviceCost { largest_read_bytes: largest, ..after });
        (out, after - before)
    }

    /// Passes over scores of `data_bytes` bytes: `score_bytes / data_bytes`.
    pub fn passes(&self, data_bytes: u64) -> f64 {
        self.score_bytes as f64 / data_bytes.max(1) as f64
    }
}

impl Sub for DeviceCost {
    type Output = Self;

    fn sub(self, earlier: Self) -> Self {
        Self {
            launches: self.launches - earlier.launches,
            score_bytes: self.score_bytes - earlier.score_bytes,
            syncs: self.syncs - earlier.syncs,
            read_back_bytes: self.read_back_bytes - earlier.read_back_bytes,
            // The later count's: a largest read is not a difference.
            largest_read_bytes: self.largest_read_bytes,
        }
    }
}

/// Counts one launch of a kernel that reads `score_bytes` bytes of the scores (0 for a kernel
/// that reads only per-row fields or tables).
pub(crate) fn count_launch(score_bytes: usize) {
    let now = COUNTED.get();
    COUNTED.set(DeviceCost {
        launches: now.launches + 1,
        score_bytes: now.score_bytes + score_bytes as u64,
        ..now
    });
}

/// Executes `tx` (one host synchronisation) and counts it with the bytes it reads back.
///
/// # Errors
/// [`CalibError::Backend`] when the device cannot read the tensors back.
pub fn read_back(tx: Transaction) -> Result<Vec<TensorData>> {
    let data = tx.try_execute().map_err(|e| CalibError::Backend(e.to_string()))?;
    let bytes: usize = data.iter().map(|d| d.as_bytes().len()).sum();
    let now = COUNTED.get();
    COUNTED.set(DeviceCost {
        syncs: now.syncs + 1,
        read_back_bytes: now.read_back_bytes + bytes as u64,
        largest_read_bytes: now.largest_read_bytes.max(bytes as u64),
        ..now
    });
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_counts_only_what_runs_inside_it() {
        count_launch(100);
        let ((), cost) = DeviceCost::measure(|| {
            count_launch(40);
            count_launch(0);
        });
        assert_eq!(cost, DeviceCost { launches: 2, score_bytes: 40, ..DeviceCost::default() });
        assert_eq!(cost.passes(20), 2.0);
    }

    #[test]
    fn other_threads_do_not_count() {
        let ((), cost) = DeviceCost::measure(|| {
            std::thread::spawn(|| count_launch(8)).join().expect("thread");
        });
        assert_eq!(cost, DeviceCost::default());
    }
}
