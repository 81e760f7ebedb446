//! A turn's cancellation: the flag and who hears it ([`Cancel`]), the handle that sets it
//! from outside ([`Canceller`]), and a listener's place among those who hear it
//! ([`Listening`]), which a running turn and a waiting call hold in place. It owns only that;
//! it must not know what a turn is, nor what is dropped.
//!
//! A turn opened inside another is heard by the one around it, so cancelling a turn cancels
//! every turn inside it, and a listener listens to one cancel only, however deep its turn.
//! Listening takes a place in the cancel's list once; each poll after only keeps its waker
//! there, so a wait in a turn allocates nothing to be told of a cancel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

/// One turn's cancel: set once, heard by every listener and every turn inside it.
#[derive(Debug, Default)]
pub(super) struct Cancel {
    cancelled: AtomicBool,
    heard_by: Mutex<Vec<Hearer>>,
}

/// A place in a [`Cancel`]'s list.
#[derive(Debug)]
enum Hearer {
    /// Free, for the next listener.
    Free,
    /// A listener's, with the waker of its last poll.
    Listener(Option<Waker>),
    /// A turn opened inside this one: cancelled with it.
    Nested(Weak<Cancel>),
}

impl Cancel {
    /// Whether it was cancelled.
    pub(super) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Cancel, and wake every listener; then cancel every turn inside this one.
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        let mut nested = Vec::new();
        let mut wakers = Vec::new();
        for hearer in self.heard_by().iter_mut() {
            match hearer {
                Hearer::Listener(waker) => wakers.extend(waker.take()),
                Hearer::Nested(inner) => nested.extend(inner.upgrade()),
                Hearer::Free => {}
            }
        }
        // Outside the lock: a waker may run code that listens again.
        wakers.into_iter().for_each(Waker::wake);
        nested.iter().for_each(|inner| inner.cancel());
    }

    /// `inner`, a turn opened inside this one, is cancelled with it (at once if this one
    /// already is). Returns its place, to give back with [`release`](Self::release).
    pub(super) fn nest(&self, inner: &Arc<Cancel>) -> Option<usize> {
        let at = {
            let mut heard_by = self.heard_by();
            // Read under the lock: a cancel that has not taken it yet will see the place.
            (!self.is_cancelled())
                .then(|| take_place(&mut heard_by, Hearer::Nested(Arc::downgrade(inner))))
        };
        if at.is_none() {
            inner.cancel();
        }
        at
    }

    /// Give back the place at `at`.
    pub(super) fn release(&self, at: usize) {
        let released = self
            .heard_by()
            .get_mut(at)
            .map(|place| std::mem::replace(place, Hearer::Free));
        // Dropped outside the lock: a waker's last reference may drop a task, whose drop may
        // listen again.
        drop(released);
    }

    fn heard_by(&self) -> MutexGuard<'_, Vec<Hearer>> {
        // A listener never panics under the lock; a poisoned list is still a list.
        self.heard_by.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The first free place in `heard_by`, taken for `hearer`; the list grows only when every
/// place is taken.
fn take_place(heard_by: &mut Vec<Hearer>, hearer: Hearer) -> usize {
    match heard_by
        .iter()
        .position(|place| matches!(place, Hearer::Free))
    {
        Some(at) => {
            heard_by[at] = hearer;
            at
        }
        None => {
            heard_by.push(hearer);
            heard_by.len() - 1
        }
    }
}

/// Cancels a [`Turn`](crate::Turn) from outside it. Cloneable and `Send`.
///
/// ```
/// use retry_runtime::Turn;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let turn = Turn::new(Duration::from_secs(60));
/// let canceller = turn.canceller();
/// let (outcome, _) = turn
///     .run(async move {
///         canceller.cancel();
///         std::future::pending::<()>().await
///     })
///     .await;
/// assert!(outcome.is_cancelled());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Canceller {
    cancel: Arc<Cancel>,
}

impl Canceller {
    /// A canceller of `cancel`.
    pub(super) fn new(cancel: Arc<Cancel>) -> Canceller {
        Canceller { cancel }
    }

    /// Cancel the turn: [`Turn::run`](crate::Turn::run) drops its work now, attempts and waits
    /// in flight included; a ladder in a task carried in with
    /// [`TurnHandle::scope`](crate::turn::TurnHandle::scope) ends its wait and makes no
    /// further retry.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

/// A listener's place among those who hear a turn's cancel: held in place by a running turn,
/// and by a call's flight from its first wait. Dropped, it gives its place back.
#[derive(Debug)]
pub(crate) struct Listening {
    cancel: Arc<Cancel>,
    at: usize,
}

impl Listening {
    /// A place among those who hear `cancel`.
    pub(super) fn new(cancel: Arc<Cancel>) -> Listening {
        let at = take_place(&mut cancel.heard_by(), Hearer::Listener(None));
        Listening { cancel, at }
    }

    /// Ready once the turn (or one around it) is cancelled; until then, the task of `cx` is
    /// woken when it is.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.cancel.is_cancelled() {
            return Poll::Ready(());
        }
        let mut heard_by = self.cancel.heard_by();
        // Read again under the lock: a cancel takes it after setting the flag, so either it
        // is set now or the cancel will find the waker kept here.
        if self.cancel.is_cancelled() {
            return Poll::Ready(());
        }
        let replaced = match heard_by.get_mut(self.at) {
            Some(Hearer::Listener(Some(kept))) if kept.will_wake(cx.waker()) => None,
            Some(Hearer::Listener(waker)) => waker.replace(cx.waker().clone()),
            _ => None,
        };
        drop(heard_by);
        // The waker replaced is dropped outside the lock, as in `release`.
        drop(replaced);
        Poll::Pending
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.cancel.release(self.at);
    }
}
