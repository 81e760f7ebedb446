//! [`UpstreamPaused`]: the error of an attempt an upstream's pause or gate held back past the
//! call's end, in the caller's error type through `From`.

use std::fmt;
use std::time::Duration;

use crate::class::{Class, Classify};

/// An attempt that was never sent: its upstream was paused by a provider's hint, or its
/// outage gate was open, past the end of the call's turn, budget or ladder. It classifies as
/// what the upstream was told (a `RateLimited` or `Unavailable` with its hint, or the outage's
/// `Unavailable`), so the verdict is the one the call would have had: undetermined.
///
/// A call on an upstream needs an error type that can hold one, as a timed call needs one that
/// holds a [`TimedOut`](crate::TimedOut).
///
/// ```
/// use retry_runtime::{Class, Classify, UpstreamPaused};
/// use std::time::Duration;
///
/// let paused = UpstreamPaused::new("model", Class::RateLimited { retry_after: Some(Duration::from_secs(20)) }, false);
/// assert_eq!(paused.classify(), Class::RateLimited { retry_after: Some(Duration::from_secs(20)) });
/// assert_eq!(paused.to_string(), "model is rate-limited for every call");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamPaused {
    upstream: &'static str,
    class: Class,
    reason: PausedBy,
}

/// What held an attempt back ([`UpstreamPaused::reason`]).
///
/// ```
/// use retry_runtime::{Class, PausedBy, UpstreamPaused};
///
/// let gated = UpstreamPaused::new("model", Class::Unavailable { retry_after: None }, true);
/// assert_eq!(gated.reason(), PausedBy::Gate);
/// assert_eq!(UpstreamPaused::budget_spent("model").reason(), PausedBy::BudgetSpent);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PausedBy {
    /// A provider's pause: its hint of when to come back.
    Pause,
    /// The outage gate: another call probes the upstream.
    Gate,
    /// The fleet's retry budget for the upstream is spent.
    BudgetSpent,
    /// The upstream's pacer: the key has not what the attempt costs, as its provider last
    /// said, and the wait for it does not fit the call.
    Paced,
    /// The attempt costs more than the key's whole limit: an answer, never waited for.
    OverLimit,
}

impl UpstreamPaused {
    /// Held back by `upstream`, paused with `class` (its hint included), or by its outage gate
    /// (`gated`).
    pub const fn new(upstream: &'static str, class: Class, gated: bool) -> UpstreamPaused {
        UpstreamPaused {
            upstream,
            class,
            reason: if gated {
                PausedBy::Gate
            } else {
                PausedBy::Pause
            },
        }
    }

    /// An attempt held by `by`, with `class`: what a hold that ends the call says.
    ///
    /// ```
    /// use retry_runtime::{Class, Classify, PausedBy, UpstreamPaused};
    ///
    /// let paced = UpstreamPaused::by("model", Class::RateLimited { retry_after: None }, PausedBy::Paced);
    /// assert_eq!(paced.to_string(), "model's rate limit leaves nothing for this call in time");
    /// ```
    pub const fn by(upstream: &'static str, class: Class, by: PausedBy) -> UpstreamPaused {
        UpstreamPaused {
            upstream,
            class,
            reason: by,
        }
    }

    /// Held back by the fleet's retry budget for `upstream`: the fleet has made as many
    /// retries on it as its requests allow (an outage's class: undetermined).
    ///
    /// ```
    /// use retry_runtime::UpstreamPaused;
    ///
    /// let spent = UpstreamPaused::budget_spent("model");
    /// assert!(spent.budget());
    /// assert_eq!(spent.to_string(), "model's retry budget across the fleet is spent");
    /// ```
    pub const fn budget_spent(upstream: &'static str) -> UpstreamPaused {
        UpstreamPaused {
            upstream,
            class: Class::Unavailable { retry_after: None },
            reason: PausedBy::BudgetSpent,
        }
    }

    /// What held the attempt back: a provider's pause, the outage gate, or the fleet's spent
    /// retry budget.
    pub const fn reason(&self) -> PausedBy {
        self.reason
    }

    /// Whether the fleet's retry budget held the attempt back.
    pub const fn budget(&self) -> bool {
        matches!(self.reason, PausedBy::BudgetSpent)
    }

    /// The upstream's name.
    pub const fn upstream(&self) -> &'static str {
        self.upstream
    }

    /// Whether the outage gate held the attempt back, rather than a provider's pause.
    pub const fn gated(&self) -> bool {
        matches!(self.reason, PausedBy::Gate)
    }

    /// The hint of the pause, if a provider's hint paused it.
    pub const fn retry_after(&self) -> Option<Duration> {
        self.class.retry_after()
    }
}

impl Classify for UpstreamPaused {
    fn classify(&self) -> Class {
        self.class
    }
}

impl fmt::Display for UpstreamPaused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.upstream;
        match (self.reason, self.class) {
            (PausedBy::BudgetSpent, _) => {
                write!(f, "{name}'s retry budget across the fleet is spent")
            }
            (PausedBy::Gate, _) => write!(f, "{name} is unavailable: another call is checking"),
            (PausedBy::Paced, _) => {
                write!(
                    f,
                    "{name}'s rate limit leaves nothing for this call in time"
                )
            }
            (PausedBy::OverLimit, _) => write!(
                f,
                "the call costs more than {name}'s whole rate limit: make it smaller or raise the limit"
            ),
            (PausedBy::Pause, Class::RateLimited { .. }) => {
                write!(f, "{name} is rate-limited for every call")
            }
            (PausedBy::Pause, _) => write!(f, "{name} is unavailable for every call"),
        }
    }
}

impl std::error::Error for UpstreamPaused {}

/// A bare `Class` can hold one too: the pause's class, for functions whose error is a `Class`.
impl From<UpstreamPaused> for Class {
    fn from(paused: UpstreamPaused) -> Self {
        paused.class
    }
}
