//! A turn's cancellation: the flag and its wake-up ([`Cancel`]), the handle that sets them
//! from outside ([`Canceller`]), and the future that a turn, or a wait inside one, listens to
//! ([`Listener`]). It owns only that; it must not know what a turn is, nor what is dropped.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use tokio::sync::Notify;

/// One turn's cancel: set once, heard by every listener.
#[derive(Debug, Default)]
pub(super) struct Cancel {
    cancelled: AtomicBool,
    notify: Notify,
}

impl Cancel {
    /// Whether it was cancelled.
    pub(super) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
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
        self.cancel.cancelled.store(true, Ordering::Release);
        self.cancel.notify.notify_waiters();
    }
}

/// A future that resolves once a turn, or one around it, is cancelled.
pub(crate) type Listener = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// One future that resolves once any of `cancels` is cancelled. A single turn, the common
/// case, is listened to with one allocation; a chain of nested turns, with a few more.
pub(super) fn listen(mut cancels: impl Iterator<Item = Arc<Cancel>>) -> Listener {
    let innermost = cancels.next();
    // Collecting an empty iterator allocates nothing.
    let outer: Vec<Arc<Cancel>> = cancels.collect();
    match innermost {
        Some(only) if outer.is_empty() => Box::pin(cancelled_one(only)),
        innermost => Box::pin(cancelled(innermost.into_iter().chain(outer).collect())),
    }
}

/// Resolves once `cancel` is cancelled (at once if it already is).
async fn cancelled_one(cancel: Arc<Cancel>) {
    let mut notified = pin!(cancel.notify.notified());
    // Register before reading the flag, so a cancel between the two is not missed.
    notified.as_mut().enable();
    if cancel.is_cancelled() {
        return;
    }
    notified.await;
}

/// Resolves once any of `cancels` is cancelled (at once if one already is); never, if there
/// are none.
async fn cancelled(cancels: Vec<Arc<Cancel>>) {
    let mut notified: Vec<_> = cancels
        .iter()
        .map(|cancel| Box::pin(cancel.notify.notified()))
        .collect();
    // Register before reading the flags, so a cancel between the two is not missed.
    for waiter in &mut notified {
        waiter.as_mut().enable();
    }
    if cancels.iter().any(|cancel| cancel.is_cancelled()) {
        return;
    }
    poll_fn(|cx| {
        if notified
            .iter_mut()
            .any(|waiter| waiter.as_mut().poll(cx).is_ready())
        {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}
