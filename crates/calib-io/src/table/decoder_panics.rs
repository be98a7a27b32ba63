//! arrow-ipc panics on some damaged inputs (an integer type of a million bits, ...) instead of
//! returning an error. Calls into it run through [`guarded`], which turns such a panic into
//! an error; while one runs, [`catching_decoder_panics`] is true on its thread, so that a
//! program's panic hook can stay quiet about a panic that becomes an error.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;

use super::source::Batches;

thread_local! {
    static CATCHING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is inside a decoder call whose panic calib-io turns into an error.
pub fn catching_decoder_panics() -> bool {
    CATCHING.with(Cell::get)
}

/// `decode()`, or the message of its panic.
pub(super) fn guarded<T>(decode: impl FnOnce() -> T) -> Result<T, String> {
    let outer = CATCHING.with(|c| c.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(decode));
    CATCHING.with(|c| c.set(outer));
    outcome.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the decoder failed".into());
        format!("damaged data ({message})")
    })
}

/// `decode()`'s outcome, its error or its panic as text: a fallible decoder call, [`guarded`].
pub(super) fn guarded_try<T, E: std::fmt::Display>(
    decode: impl FnOnce() -> Result<T, E>,
) -> Result<T, String> {
    guarded(decode).and_then(|outcome| outcome.map_err(|e| e.to_string()))
}

/// `batches` with each step [`guarded`]: a panic ends them with an error.
pub(super) fn guarded_batches(batches: Batches) -> Batches {
    Box::new(Guarded(Some(batches)))
}

struct Guarded(Option<Batches>);

impl Iterator for Guarded {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batches = self.0.as_mut()?;
        match guarded(|| batches.next()) {
            Ok(item) => item,
            Err(message) => {
                self.0 = None;
                Some(Err(ArrowError::IpcError(message)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_errors_and_the_flag_is_set_inside_alone() {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        assert!(!catching_decoder_panics());
        assert_eq!(guarded(catching_decoder_panics), Ok(true));
        let e = guarded(|| -> u8 { panic!("bit width 14525287") }).unwrap_err();
        std::panic::set_hook(hook);
        assert_eq!(e, "damaged data (bit width 14525287)");
        assert_eq!(guarded_try(|| "x".parse::<u8>()), Err("invalid digit found in string".into()));
        assert_eq!(guarded_try(|| "7".parse::<u8>()), Ok(7));
        assert!(!catching_decoder_panics());
        let failing = (0..3).map(|i| {
            if i == 1 {
                panic!("two")
            } else {
                Ok(RecordBatch::new_empty(std::sync::Arc::new(arrow_schema::Schema::empty())))
            }
        });
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let results: Vec<_> = guarded_batches(Box::new(failing)).collect();
        std::panic::set_hook(hook);
        assert_eq!(results.len(), 2);
        assert!(results[1].as_ref().unwrap_err().to_string().contains("damaged data (two)"));
    }
}
