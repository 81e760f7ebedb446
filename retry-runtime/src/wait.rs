//! The wait between attempts: a [`Wait`] owns the failure that caused it and the sleep, which
//! a cancel of the enclosing turn ends early, and resolves to a [`Waited`] that the run
//! accounts for, and the quota's side of it ([`Paid`]): the retry it paid for, given back if
//! the wait never ends. It owns the sleep, its cancel and that refund; it must not decide how
//! long to wait (`ladder`) or account for the time waited (the engine's run does).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::class::Class;
use crate::notice::Reached;
use crate::quota::Quota;
use crate::turn::cancel::Listener;

/// The quota's side of a call's waits, one byte of its run: whether the retry the quota paid
/// for is still to be made (its wait is in progress), and whether the last paid retry followed
/// a timeout, which costs more. A wait cut short, or a call dropped in one, gives the cost
/// back; a success after retries settles on the last one's, as AWS's standard mode does.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Paid(u8);

/// A retry is paid for and not yet made.
const WAITING: u8 = 1;
/// The last paid retry followed a timeout.
const AFTER_TIMEOUT: u8 = 1 << 1;

impl Paid {
    /// Nothing paid yet.
    pub(crate) const NONE: Paid = Paid(0);

    /// Pay for a retry after a `class` failure; `false` if the quota refuses it. Without a
    /// quota every retry is free.
    #[inline]
    pub(crate) fn withdraw(&mut self, quota: Option<&Quota>, class: Class) -> bool {
        let Some(quota) = quota else {
            return true;
        };
        if !quota.withdraw(class) {
            return false;
        }
        self.0 = WAITING
            | if class == Class::Timeout {
                AFTER_TIMEOUT
            } else {
                0
            };
        true
    }

    /// The wait is over: its retry is being made.
    #[inline]
    pub(crate) fn wait_over(&mut self) {
        self.0 &= !WAITING;
    }

    /// The retry paid for will never be made (its wait was cut short, or the call was dropped
    /// in it): give its cost back.
    #[inline]
    pub(crate) fn refund(&mut self, quota: Option<&Quota>) {
        if self.0 & WAITING != 0 {
            self.0 &= !WAITING;
            if let Some(quota) = quota {
                quota.refund(self.paid_class());
            }
        }
    }

    /// A success after `attempts`: a first try adds the refill, a success after retries gives
    /// back its last retry's cost.
    #[inline]
    pub(crate) fn settle(self, quota: &Quota, attempts: u32) {
        if attempts > 1 {
            quota.succeeded_after(self.paid_class());
        } else {
            quota.deposit();
        }
    }

    /// The class the last retry was paid at: a timeout's price, or any other failure's.
    fn paid_class(self) -> Class {
        if self.0 & AFTER_TIMEOUT != 0 {
            Class::Timeout
        } else {
            Class::Transport
        }
    }
}

/// The wait before the next attempt, in its box: what a waiting call holds, one pointer. It
/// owns the failure that caused it and the sleep, which a cancel of the turn ends early; it
/// resolves to a [`Waited`] for the run. Dropped before it is over, the run it came from
/// gives the quota back the retry's cost. Not public API.
#[doc(hidden)]
pub struct Wait<S, E>(Pin<Box<Waiting<S, E>>>);

impl<S: Future<Output = ()>, E> Wait<S, E> {
    /// A wait of `sleep` after `error`; inside a turn, `cancelled` (the turn's cancel) ends
    /// it early.
    pub(crate) fn new(error: E, reached: Reached, sleep: S, cancelled: Option<Listener>) -> Self {
        Wait(Box::pin(Waiting {
            error: Some(error),
            reached,
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
    reached: Reached,
    cancelled: bool,
}

impl<E> Waited<E> {
    /// Whether a cancel of the turn cut the wait short.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// How far the failed attempt had got.
    pub(crate) fn reached(&self) -> Reached {
        self.reached
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
        reached: Reached,
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
            Some(error) => Poll::Ready(Waited {
                error,
                reached: *this.reached,
                cancelled,
            }),
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
        cancelled: Option<Listener>,
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
