//! A turn's cancellation: the flag and who hears it ([`Cancel`]), the handle that sets it
//! from outside ([`Canceller`]), and a listener's place among those who hear it
//! ([`Listening`]), which a running turn and a waiting call hold in place. It owns only that;
//! it must not know what a turn is, nor what is dropped.
//!
//! A turn opened inside another is heard by the one around it, so cancelling a turn cancels
//! every turn inside it, and a listener listens to one cancel only, however deep its turn.
//! Listening takes a place in the cancel's list once; each poll after only keeps its waker
//! there, so a wait in a turn allocates nothing to be told of a cancel. Taking a place and
//! giving it back cost the same however many calls wait in the turn (a [`Slab`], whose free
//! places are chained: issue 42 measured a search of the list at 1.2 s for 80,000 waits).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

use super::slab::Slab;

/// One turn's cancel: set once, heard by every listener and every turn inside it.
#[derive(Debug, Default)]
pub(super) struct Cancel {
    cancelled: AtomicBool,
    heard_by: Mutex<Slab<Hearer>>,
}

/// What takes a place in a [`Cancel`]'s list.
#[derive(Debug)]
enum Hearer {
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
            (!self.is_cancelled()).then(|| heard_by.insert(Hearer::Nested(Arc::downgrade(inner))))
        };
        if at.is_none() {
            inner.cancel();
        }
        at
    }

    /// Give back the place at `at`.
    pub(super) fn release(&self, at: usize) {
        let released = self.heard_by().remove(at);
        // Dropped outside the lock: a waker's last reference may drop a task, whose drop may
        // listen again.
        drop(released);
    }

    fn heard_by(&self) -> MutexGuard<'_, Slab<Hearer>> {
        // A listener never panics under the lock; a poisoned list is still a list.
        self.heard_by.lock().unwrap_or_else(|e| e.into_inner())
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
        let at = cancel.heard_by().insert(Hearer::Listener(None));
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    use super::{Cancel, Canceller, Listening};

    /// Many calls come into a wait and leave it (issue 42): the list keeps as many places as
    /// were ever held at once, and a cancel still reaches every listener that holds one.
    #[test]
    fn the_listeners_list_stays_as_long_as_the_most_listeners_held_at_once() {
        let cancel = Arc::new(Cancel::default());
        let mut cx = Context::from_waker(Waker::noop());
        let mut held: Vec<Listening> = (0..1_000)
            .map(|_| Listening::new(Arc::clone(&cancel)))
            .collect();
        for round in 0..100_000 {
            drop(held.swap_remove((round * 7919) % held.len()));
            let mut listening = Listening::new(Arc::clone(&cancel));
            assert!(listening.poll(&mut cx).is_pending());
            held.push(listening);
        }
        assert_eq!(cancel.heard_by().places(), 1_000);

        let inner = Arc::new(Cancel::default());
        let nested_at = cancel.nest(&inner).expect("not cancelled yet");
        assert_eq!(cancel.heard_by().places(), 1_001);
        Canceller::new(Arc::clone(&cancel)).cancel();
        assert!(held.iter_mut().all(|l| l.poll(&mut cx) == Poll::Ready(())));
        assert!(inner.is_cancelled(), "a turn inside hears the cancel");
        cancel.release(nested_at);
    }
}
