//! The attempt timeout: [`TimedOut`], the error an attempt ends with when its time runs out,
//! and which bound ended it. The timer itself is the attempt's (`attempt.rs`).
//!
//! An attempt runs for at most the sooner of the call's `timeout`, what is left of the
//! enclosing [`Turn`](crate::Turn) and what is left of a literal budget. The timer runs on
//! tokio's time, not through the injectable [`Clock`](crate::Clock): a
//! [`testing::scope`](crate::testing::scope), which skips the ladder's waits, does not fire it.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::class::{Class, Classify};

/// Which bound ended an attempt.
///
/// ```
/// use retry_runtime::TimeoutBound;
/// assert_eq!(TimeoutBound::Timeout.to_string(), "its `timeout`");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeoutBound {
    /// The call's own per-attempt `timeout`.
    Timeout,
    /// What was left of the enclosing turn.
    Turn,
    /// What was left of the call's literal `budget`.
    Budget,
    /// A stream's `commit_timeout`: it had not reached its commit point in time.
    Commit,
    /// A stream's `idle_timeout`: no item came in time.
    Idle,
}

impl fmt::Display for TimeoutBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutBound::Timeout => "its `timeout`",
            TimeoutBound::Turn => "the rest of its turn",
            TimeoutBound::Budget => "the rest of its budget",
            TimeoutBound::Commit => "its `commit_timeout`",
            TimeoutBound::Idle => "its `idle_timeout`",
        })
    }
}

/// An attempt that used up its time and was dropped.
///
/// A call with a `timeout` gets this as its error, converted with `From`: the error type of
/// `#[retry(timeout = "30s")]`, or of [`Retry::timeout`](crate::Retry::timeout)'s `run`, must
/// implement `From<TimedOut>` (with `thiserror`, a variant `#[error(transparent)]
/// TimedOut(#[from] retry_runtime::TimedOut)`). It classifies as [`Class::Timeout`], so the
/// policy decides whether to retry it: `transient` does; `availability` and `outage` do not.
///
/// ```
/// use retry_runtime::{TimeoutBound, Class, Classify, TimedOut};
/// use std::time::Duration;
///
/// let timed_out = TimedOut::new(TimeoutBound::Timeout, Duration::from_millis(300));
/// assert_eq!(timed_out.classify(), Class::Timeout);
/// assert_eq!(timed_out.bound(), TimeoutBound::Timeout);
/// assert_eq!(timed_out.to_string(), "the attempt was dropped after 300 ms, at its `timeout`");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimedOut {
    bound: TimeoutBound,
    ran: Duration,
}

impl TimedOut {
    /// An attempt ended by `bound` after running for `ran`.
    pub const fn new(bound: TimeoutBound, ran: Duration) -> TimedOut {
        TimedOut { bound, ran }
    }

    /// Which bound ended the attempt.
    pub const fn bound(&self) -> TimeoutBound {
        self.bound
    }

    /// How long the attempt ran before it was dropped.
    pub const fn ran(&self) -> Duration {
        self.ran
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the attempt was dropped after {} ms, at {}",
            self.ran.as_millis(),
            self.bound
        )
    }
}

impl Error for TimedOut {}

impl Classify for TimedOut {
    fn classify(&self) -> Class {
        Class::Timeout
    }
}

/// An error type that can hold a [`TimedOut`]: every type that implements `From<TimedOut>`.
/// `#[retry(timeout = ...)]` asks for it at the key, so a missing `From` is reported there.
/// Used by the expansion, not public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`timeout` needs an error type that can hold a `retry_runtime::TimedOut`, and `{Self}` cannot",
    label = "`{Self}` does not implement `From<retry_runtime::TimedOut>`",
    note = "add a variant for it to `{Self}` (with thiserror: `#[error(transparent)] TimedOut(#[from] retry_runtime::TimedOut)`), or `impl From<retry_runtime::TimedOut> for {Self}`"
)]
pub trait HoldsTimedOut {
    /// The error of an attempt ended by `timed_out`.
    fn hold(timed_out: TimedOut) -> Self;
}

impl<E: From<TimedOut>> HoldsTimedOut for E {
    fn hold(timed_out: TimedOut) -> Self {
        E::from(timed_out)
    }
}

/// An error type that can hold a [`TimedOut`], asked for by a stream's `commit_timeout` and
/// `idle_timeout`, so a missing `From` is reported there, with the fix. Not public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`commit_timeout` and `idle_timeout` need an error type that can hold a `retry_runtime::TimedOut`, and `{Self}` cannot",
    label = "`{Self}` does not implement `From<retry_runtime::TimedOut>`",
    note = "add a variant for it to `{Self}` (with thiserror: `#[error(transparent)] TimedOut(#[from] retry_runtime::TimedOut)`), or use `retry_runtime::http::CallError` (feature `reqwest`), which holds it"
)]
pub trait HoldsStreamTimeout {
    /// The error of a stream that ran out of time.
    fn hold(timed_out: TimedOut) -> Self;
}

impl<E: From<TimedOut>> HoldsStreamTimeout for E {
    fn hold(timed_out: TimedOut) -> Self {
        E::from(timed_out)
    }
}

/// An attempt that timed out is an `std::io::Error` of kind `TimedOut`, holding the
/// [`TimedOut`]: a function returning `std::io::Result<T>` can take a `timeout`.
///
/// ```
/// use retry_runtime::{TimeoutBound, Class, Classify, TimedOut};
/// use std::time::Duration;
///
/// let error = std::io::Error::from(TimedOut::new(TimeoutBound::Timeout, Duration::from_secs(1)));
/// assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
/// assert_eq!(error.classify(), Class::Timeout);
/// ```
impl From<TimedOut> for std::io::Error {
    fn from(timed_out: TimedOut) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, timed_out)
    }
}

/// An attempt that timed out is a [`Class::Timeout`], for functions whose error is a bare
/// `Class`.
///
/// ```
/// use retry_runtime::{TimeoutBound, Class, TimedOut};
/// use std::time::Duration;
///
/// assert_eq!(Class::from(TimedOut::new(TimeoutBound::Turn, Duration::ZERO)), Class::Timeout);
/// ```
impl From<TimedOut> for Class {
    fn from(_: TimedOut) -> Self {
        Class::Timeout
    }
}
