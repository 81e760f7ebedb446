//! Retry at one layer: a retried call inside another retried call is marked, and when the
//! inner ladder gives up on a transient failure the outer one does not retry it again.
//!
//! The marker is a thread-local swapped in and out around each poll of an attempt (as tokio's
//! task-locals are), so it follows the task across threads and costs no allocation.

use std::cell::Cell;

use crate::class::Class;

thread_local! {
    static CURRENT: Cell<Option<Frame>> = const { Cell::new(None) };
}

/// What an attempt learns from the retried calls nested inside it: the class of the last
/// failure an inner ladder ran out on, as its index + 1 (0: none). One byte, because it is
/// swapped in and out of a thread-local on every poll of every attempt.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Frame {
    exhausted: u8,
}

impl Frame {
    /// The class index an inner ladder ran out on, + 1; 0 if none did.
    pub(crate) fn exhausted(&self) -> u8 {
        self.exhausted
    }
}

/// Run `poll` with `frame` as the current attempt's frame, keeping what nested calls wrote.
#[inline]
pub(crate) fn enter<R>(frame: &mut Frame, poll: impl FnOnce() -> R) -> R {
    struct Restore<'f> {
        frame: &'f mut Frame,
        previous: Option<Frame>,
    }
    impl Drop for Restore<'_> {
        // Restores on unwind too, so a panicking attempt cannot leave its frame installed.
        #[inline]
        fn drop(&mut self) {
            if let Some(frame) = CURRENT.replace(self.previous) {
                *self.frame = frame;
            }
        }
    }
    let previous = CURRENT.replace(Some(*frame));
    let _restore = Restore { frame, previous };
    poll()
}

/// Tell the enclosing attempt, if there is one, that a ladder inside it ran out on a failure
/// of `class`.
pub(crate) fn mark_exhausted(class: Class) {
    CURRENT.with(|current| {
        if let Some(mut frame) = current.get() {
            // At most 9 classes: the index + 1 fits a byte.
            frame.exhausted = class.index() as u8 + 1;
            current.set(Some(frame));
        }
    });
}

/// Log that retry layers are nested, once for each ladder that stops because of it.
pub(crate) fn warn_nested(op: &'static str) {
    tracing::warn!(
        target: "retry",
        op,
        "retried calls are nested: an inner call already retried this failure and gave up, so \
         `{op}` does not retry it again; retry at one layer (remove one of the two ladders)"
    );
}
