//! The wait between attempts: a [`Wait`] owns the failure that caused it and the sleep, which
//! a cancel of the enclosing turn ends early, and resolves to a [`Waited`] that the run
//! accounts for. It owns the sleep and its cancel; it must not decide how long to wait
//! (`ladder`) or account for the wait (the engine's run does, its quota refund included).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::turn::scope as turn;

/// The wait before the next attempt, in its box: what a waiting call holds, one pointer. It
/// owns the failure that caused it and the sleep, which a cancel of the turn ends early; it
/// resolves to a [`Waited`] for the run. Dropped before it is over, the run it came from
/// gives the quota back the retry's cost. Not public API.
#[doc(hidden)]
pub struct Wait<S, E>(Pin<Box<Waiting<S, E>>>);

impl<S: Future<Output = ()>, E> Wait<S, E> {
    /// A wait of `sleep` after `error`; inside a turn, a cancel of it ends the wait early.
    pub(crate) fn new(error: E, sleep: S, in_turn: bool) -> Self {
        let cancelled = if in_turn {
            turn::cancel_listener()
        } else {
            None
        };
        Wait(Box::pin(Waiting {
            error: Some(error),
            sleep: SleepOrCancel { sleep, cancelled },
        }))
    }
}

impl<S, E> fmt::Debug for Wait<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait").finish_non_exhaustive()
    }
}

/// A wait that is over: the failure it followed, and whether a cancel of the turn cut it
/// short. Not public API.
#[doc(hidden)]
#[derive(Debug)]
pub struct Waited<E> {
    error: E,
    cancelled: bool,
}

impl<E> Waited<E> {
    /// Whether a cancel of the turn cut the wait short.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// The failure the wait followed.
    pub(crate) fn into_error(self) -> E {
        self.error
    }
}

pin_project_lite::pin_project! {
    struct Waiting<S, E> {
        // `None` once the wait is over.
        error: Option<E>,
        #[pin]
        sleep: SleepOrCancel<S>,
    }
}

impl<S: Future<Output = ()>, E> Future for Wait<S, E> {
    type Output = Waited<E>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.0.as_mut().project();
        let cancelled = std::task::ready!(this.sleep.poll(cx));
        match this.error.take() {
            Some(error) => Poll::Ready(Waited { error, cancelled }),
            None => panic!("a retry's wait polled after it was over"),
        }
    }
}

pin_project_lite::pin_project! {
    /// A sleep that ends early, resolving to true, if the turn (or one around it) is
    /// cancelled. Not boxed: it lives in the failure path's one allocation, the sleep in
    /// place. Inside a turn, listening to the chain's cancels is boxed apart, so a call
    /// outside any turn does not carry its room.
    struct SleepOrCancel<S> {
        #[pin]
        sleep: S,
        cancelled: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    }
}

impl<S: Future<Output = ()>> Future for SleepOrCancel<S> {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.project();
        if let Some(cancelled) = this.cancelled
            && cancelled.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(true);
        }
        this.sleep.poll(cx).map(|()| false)
    }
}
