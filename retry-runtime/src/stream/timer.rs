//! The timer of a stream's attempt: up to the commit point, the sooner of its own bounds (the
//! attempt timeout, `commit_timeout`, the turn and a literal budget); and the idle bound since
//! the last item, before the commit point and after it. One tokio sleep serves the whole
//! stream: made at the first attempt that needs one, and reset after.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::engine::{Run, Source};
use crate::timeout::{TimedOut, TimeoutBound};
use crate::turn::scope;

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

/// Where a stream is, as its timer's bounds depend on it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Phase {
    /// An attempt begins: a fresh open, or a resume of a stream that had (or had not)
    /// delivered output.
    Begins { resumed: bool, was_committed: bool },
    /// A resume brought its first new content.
    Progress { was_committed: bool },
    /// The commit point, in an attempt that is (or is not) a resume still silent.
    Commit { silent_resume: bool },
}

/// The timeouts a stream was given: whether it has any (an error that holds a [`TimedOut`]),
/// `commit_timeout`, `idle_timeout`, and a resume's silence bound.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeouts {
    pub(super) timed: bool,
    pub(super) commit: Option<Duration>,
    pub(super) idle: Option<Duration>,
    pub(super) silence: Duration,
}

/// A timer's fixed bound and idle bound.
type Bounds = (Option<(Instant, TimeoutBound)>, Option<Duration>);

/// The timer's bounds in `phase`, or `None` to keep them: the one place its arming rules are
/// written. Up to the commit point, the attempt's own bound; after it (or resuming a stream
/// that was past it), the turn and the idle bound; a resume that has brought nothing yet is
/// bounded by the idle timeout, or the default for resumes, until its first new content.
pub(super) fn bounds<R: Source>(
    run: &Run<R, u32>,
    timeouts: Timeouts,
    phase: Phase,
) -> Option<Bounds> {
    let turn = || scope::expiry().map(|at| (at, TimeoutBound::Turn));
    let (timed, idle) = (timeouts.timed, timeouts.idle);
    Some(match phase {
        Phase::Begins {
            resumed,
            was_committed,
        } => {
            let fixed = match timed {
                true if resumed && was_committed => turn(),
                true => attempt_bound(run, timeouts.commit),
                false => None,
            };
            let idle = match (timed, resumed) {
                (_, true) => Some(idle.unwrap_or(timeouts.silence)),
                (true, false) => idle,
                (false, false) => None,
            };
            (fixed, idle)
        }
        Phase::Progress { was_committed } => match (timed, idle) {
            (true, idle) if !was_committed => (attempt_bound(run, timeouts.commit), idle),
            (true, Some(idle)) => (turn(), Some(idle)),
            _ => (None, None),
        },
        Phase::Commit { silent_resume } => match (timed, idle) {
            (true, Some(idle)) => (turn(), Some(idle)),
            // A resume still silent keeps its bound.
            _ if silent_resume => return None,
            _ => (None, None),
        },
    })
}

/// When an attempt must have committed: the sooner of the attempt timeout and
/// `commit_timeout`, bounded by the turn and a literal budget.
fn attempt_bound<R: Source>(
    run: &Run<R, u32>,
    commit_timeout: Option<Duration>,
) -> Option<(Instant, TimeoutBound)> {
    let own = match (run.attempt_timeout(), commit_timeout) {
        (Some(attempt), Some(commit)) if commit <= attempt => (commit, TimeoutBound::Commit),
        (Some(attempt), _) => (attempt, TimeoutBound::Timeout),
        (None, Some(commit)) => (commit, TimeoutBound::Commit),
        (None, None) => return None,
    };
    match run.bound(Some(own), true) {
        (Some(at), bound) => Some((at, bound)),
        (None, _) => None,
    }
}
