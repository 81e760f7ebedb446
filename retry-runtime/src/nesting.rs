//! Retry at one layer: a retried call inside another retried call is marked, and when the
//! inner ladder gives up on a transient failure the outer one does not retry it again.
//!
//! The marker is a thread-local swapped in and out around each poll of an attempt (as tokio's
//! task-locals are), so it follows the task across threads and costs no allocation.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static CURRENT: Cell<Option<Frame>> = const { Cell::new(None) };
}

/// What an attempt learns from the retried calls nested inside it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Frame {
    inner_gave_up: bool,
}

impl Frame {
    pub(crate) fn inner_gave_up(&self) -> bool {
        self.inner_gave_up
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

/// Tell the enclosing attempt, if there is one, that a ladder inside it gave up on a
/// transient failure.
pub(crate) fn mark_gave_up() {
    CURRENT.with(|current| {
        if let Some(mut frame) = current.get() {
            frame.inner_gave_up = true;
            current.set(Some(frame));
        }
    });
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// Log that retry layers are nested: in full the first time in the process, briefly after.
pub(crate) fn warn_nested(op: &'static str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            target: "retry",
            op,
            "retried calls are nested: an inner call already gave up on this failure, so `{op}` \
             does not retry it again; retry at one layer (remove one of the two ladders)"
        );
    } else {
        tracing::debug!(target: "retry", op, "nested retry: not retrying a failure an inner call gave up on");
    }
}
