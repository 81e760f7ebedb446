//! The wait between attempts: a [`Wait`] owns the failure that caused it and the sleep, which
//! a cancel of the enclosing turn ends early, and resolves to a [`Waited`] that the run
//! accounts for, and the quota's side of it ([`Paid`]): the retry it paid for, given back if
//! the wait never ends. It owns the sleep and that refund; it must not decide how long to wait
//! (`ladder`), listen for the turn's cancel (the run's flight does) or account for the time
//! waited (the engine's run does).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::class::Class;
use crate::quota::Quota;

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

pin_project_lite::pin_project! {
    /// The wait before the next attempt, held in place in the call's future (no box): the
    /// failure that caused it and the sleep. It resolves to a [`Waited`] for the run, cut
    /// short if the run heard its turn's cancel; the run keeps what listens for that cancel,
    /// so the wait carries nothing for it. Dropped before it is over, the run it came from
    /// gives the quota back the retry's cost. Not public API.
    #[doc(hidden)]
    pub struct Wait<S, E> {
        // `None` once the wait is over.
        error: Option<E>,
        #[pin]
        sleep: S,
    }
}

impl<S: Future<Output = ()>, E> Wait<S, E> {
    /// A wait of `sleep` after `error`.
    #[inline]
    pub(crate) fn new(error: E, sleep: S) -> Self {
        Wait {
            error: Some(error),
            sleep,
        }
    }

    /// Poll the sleep; over at once if `cancelled` (the run heard its turn's cancel).
    #[inline]
    pub(crate) fn poll(
        self: Pin<&mut Self>,
        cancelled: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Waited<E>> {
        let this = self.project();
        if !cancelled {
            std::task::ready!(this.sleep.poll(cx));
        }
        match this.error.take() {
            Some(error) => Poll::Ready(Waited { error, cancelled }),
            None => panic!("a retry's wait polled after it was over"),
        }
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
