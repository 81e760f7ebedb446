//! One attempt: its future, marked as running inside a retried call (so a retried call nested
//! in it knows, [`crate::nesting`]), and, for a call with a timeout, the timer that drops it.
//! It owns the attempt's future and its timer; it must not decide when the attempt ends (the
//! run computes the instant, the sooner of its bounds) or what follows it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use crate::nesting;
use crate::span::AttemptSpan;
use crate::timeout::{TimedOut, TimeoutBound};

pin_project_lite::pin_project! {
    /// One attempt's future, marked as running inside a retried call. Not public API.
    #[doc(hidden)]
    pub struct Attempt<F> {
        frame: nesting::Frame,
        // Empty without the `spans` feature.
        span: AttemptSpan,
        #[pin]
        future: F,
    }
}

impl<F> Attempt<F> {
    /// `future` as one attempt, polled inside `span`, with a fresh frame for the calls nested
    /// in it.
    pub(crate) fn new(future: F, span: AttemptSpan) -> Self {
        Attempt {
            frame: nesting::Frame::default(),
            span,
            future,
        }
    }
}

/// One attempt's output, and what the retried calls nested in it did. Not public API.
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempted<T> {
    output: T,
    frame: nesting::Frame,
}

impl<T> Attempted<T> {
    /// The output, and what the nested calls did.
    pub(crate) fn into_parts(self) -> (T, nesting::Frame) {
        (self.output, self.frame)
    }
}

impl<F: Future> Future for Attempt<F> {
    type Output = Attempted<F::Output>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let frame = this.frame;
        let future = this.future;
        let polled = this
            .span
            .in_scope(|| nesting::enter(frame, || future.poll(cx)));
        polled.map(|output| Attempted {
            output,
            frame: *frame,
        })
    }
}

pin_project_lite::pin_project! {
    /// An attempt's future under its timer: dropped as soon as the timer fires. Not public
    /// API.
    #[doc(hidden)]
    pub struct Timed<F> {
        #[pin]
        future: Option<F>,
        #[pin]
        timer: Sleep,
        bound: TimeoutBound,
        started: Instant,
    }
}

impl<F> Timed<F> {
    /// `future`, dropped at `end` (on tokio's time), with `bound` named as the cause.
    pub(crate) fn new(future: F, end: Instant, bound: TimeoutBound) -> Timed<F> {
        Timed {
            future: Some(future),
            timer: tokio::time::sleep_until(end),
            bound,
            started: Instant::now(),
        }
    }
}

impl<F: Future> Future for Timed<F> {
    type Output = Result<F::Output, TimedOut>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Some(future) = this.future.as_mut().as_pin_mut()
            && let Poll::Ready(output) = future.poll(cx)
        {
            return Poll::Ready(Ok(output));
        }
        // Polled outside tokio's cooperative budget, as tokio's own `timeout` polls its delay
        // once the attempt has used the budget up: an attempt that is always ready (a channel
        // that never empties) must not keep its timer from firing.
        let timer = std::pin::pin!(tokio::task::coop::unconstrained(this.timer.as_mut()));
        if timer.poll(cx).is_ready() {
            // Drop the attempt now, before the ladder decides and waits: its connection
            // closes at once.
            this.future.set(None);
            return Poll::Ready(Err(TimedOut::new(*this.bound, this.started.elapsed())));
        }
        Poll::Pending
    }
}
