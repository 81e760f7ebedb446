//! The timer of a stream's attempt: up to the commit point, the sooner of its own bounds (the
//! attempt timeout, `commit_timeout`, the turn and a literal budget); and the idle bound since
//! the last item, before the commit point and after it. One tokio sleep serves the whole
//! stream: made at the first attempt that needs one, and reset after.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::timeout::{TimedOut, TimeoutBound};

pin_project_lite::pin_project! {
    /// A stream's timer. Disarmed, it costs nothing and fires never.
    #[derive(Debug)]
    pub(crate) struct Timer {
        #[pin]
        sleep: Option<Sleep>,
        armed: Option<Armed>,
    }
}

/// What an armed timer bounds.
#[derive(Debug, Clone, Copy)]
struct Armed {
    /// A bound that does not move: the attempt's, until the commit point; the turn's, after.
    fixed: Option<(Instant, TimeoutBound)>,
    /// The longest wait between two items.
    idle: Option<Duration>,
    /// When the last item came (or the timer was armed).
    last: Instant,
    /// When the timer was armed: what a [`TimedOut`] says it ran.
    started: Instant,
}

impl Armed {
    /// The sooner bound, and which it is.
    fn due(&self) -> Option<(Instant, TimeoutBound)> {
        let idle = self
            .idle
            .and_then(|idle| self.last.checked_add(idle))
            .map(|at| (at, TimeoutBound::Idle));
        match (self.fixed, idle) {
            (Some(fixed), Some(idle)) if idle.0 < fixed.0 => Some(idle),
            (Some(fixed), _) => Some(fixed),
            (None, idle) => idle,
        }
    }
}

impl Timer {
    /// A disarmed timer: no sleep made yet.
    pub(crate) const fn new() -> Timer {
        Timer {
            sleep: None,
            armed: None,
        }
    }

    /// Bound what follows by `fixed` and by `idle` between items; disarmed if neither.
    pub(crate) fn arm(
        self: Pin<&mut Self>,
        fixed: Option<(Instant, TimeoutBound)>,
        idle: Option<Duration>,
    ) {
        let mut this = self.project();
        if fixed.is_none() && idle.is_none() {
            *this.armed = None;
            return;
        }
        let now = Instant::now();
        let armed = Armed {
            fixed,
            idle,
            last: now,
            started: now,
        };
        *this.armed = Some(armed);
        let Some((due, _)) = armed.due() else {
            *this.armed = None;
            return;
        };
        match this.sleep.as_mut().as_pin_mut() {
            Some(sleep) => sleep.reset(due),
            None => this.sleep.set(Some(tokio::time::sleep_until(due))),
        }
    }

    /// Whether the timer is armed: the hot path skips it when it is not.
    #[inline]
    pub(crate) fn is_armed(&self) -> bool {
        self.armed.is_some()
    }

    /// An item came: the idle bound starts again. Reads the clock only under an idle bound,
    /// and never resets the sleep: that waits until it fires early.
    #[inline]
    pub(crate) fn item(self: Pin<&mut Self>) {
        if let Some(armed) = self.project().armed
            && armed.idle.is_some()
        {
            armed.last = Instant::now();
        }
    }

    /// The bound that fired, if one has; it disarms the timer.
    pub(crate) fn expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Option<TimedOut> {
        let mut this = self.project();
        let armed = (*this.armed)?;
        let mut sleep = this.sleep.as_mut().as_pin_mut()?;
        loop {
            if sleep.as_mut().poll(cx) == Poll::Pending {
                return None;
            }
            let (due, bound) = armed.due()?;
            let now = Instant::now();
            if now >= due {
                *this.armed = None;
                return Some(TimedOut::new(
                    bound,
                    now.saturating_duration_since(armed.started),
                ));
            }
            // An item came since the sleep was set: wait on for the idle bound's new end.
            sleep.as_mut().reset(due);
        }
    }
}
