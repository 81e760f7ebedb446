//! Retry at one layer: a retried call inside another retried call is marked, and when an
//! inner ladder gives up on a transient failure the outer one does not retry that attempt
//! again, whatever its own failure says.
//!
//! The marker is a thread-local swapped in and out around each poll of an attempt (as tokio's
//! task-locals are), so it follows the task across threads and costs no allocation. It also
//! carries what the turn's report needs to count each attempt once: whether a retried call
//! ran inside the attempt (its attempts are the inner ladder's).

use std::cell::Cell;

thread_local! {
    /// The frame of the attempt being polled on this thread; 0 when none is.
    static CURRENT: Cell<u8> = const { Cell::new(0) };
}

/// Bits of a frame: present (an attempt is being polled), an inner ladder gave up on a
/// transient failure, an inner retried call finished.
const PRESENT: u8 = 1;
const GAVE_UP: u8 = 1 << 1;
const RAN: u8 = 1 << 2;

/// What an attempt learns from the retried calls nested inside it. One byte, because it is
/// swapped in and out of a thread-local on every poll of every attempt, and lives in every
/// annotated function's future.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame(u8);

impl Default for Frame {
    fn default() -> Frame {
        Frame(PRESENT)
    }
}

impl Frame {
    /// Whether a ladder nested in the attempt gave up on a transient failure.
    pub(crate) fn inner_gave_up(self) -> bool {
        self.0 & GAVE_UP != 0
    }

    /// Whether a retried call finished inside the attempt.
    pub(crate) fn inner_ran(self) -> bool {
        self.0 & RAN != 0
    }
}

/// Run `poll` with `frame` as the current attempt's frame, keeping what nested calls wrote.
#[inline]
pub(crate) fn enter<R>(frame: &mut Frame, poll: impl FnOnce() -> R) -> R {
    struct RestoreFrame<'f> {
        frame: &'f mut Frame,
        previous: u8,
    }
    impl Drop for RestoreFrame<'_> {
        // Restores on unwind too, so a panicking attempt cannot leave its frame installed.
        #[inline]
        fn drop(&mut self) {
            self.frame.0 = CURRENT.replace(self.previous);
        }
    }
    let previous = CURRENT.replace(frame.0);
    let _restore = RestoreFrame { frame, previous };
    poll()
}

/// Whether the current code runs inside an attempt of a retried call.
pub(crate) fn is_nested() -> bool {
    CURRENT.get() & PRESENT != 0
}

fn update(change: impl FnOnce(u8) -> u8) {
    CURRENT.with(|current| {
        let frame = current.get();
        if frame & PRESENT != 0 {
            current.set(change(frame));
        }
    });
}

/// Tell the enclosing attempt, if there is one, that a ladder inside it gave up on a
/// transient failure.
pub(crate) fn mark_gave_up() {
    update(|frame| frame | GAVE_UP);
}

/// Tell the enclosing attempt, if there is one, that a retried call inside it finished.
pub(crate) fn mark_ran() {
    update(|frame| frame | RAN);
}

/// Log that retry layers are nested, once for each ladder that stops because of it.
pub(crate) fn warn_nested(op: &str) {
    tracing::warn!(
        target: "retry",
        op,
        "retried calls are nested: an inner call already retried and gave up during this \
         attempt, so `{op}` does not retry it again; retry at one layer (remove one of the two \
         ladders)"
    );
}
