//! The verdict of a ladder that stopped: [`GaveUp`] and its [`StopReason`].

use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::class::{Class, Classify};
use crate::redact::Redacted;

/// Why a ladder stopped without a success.
///
/// ```
/// use retry_runtime::StopReason;
/// use std::time::Duration;
///
/// let reason = StopReason::Budget { wanted: Duration::from_secs(45), remaining: Duration::from_secs(20) };
/// assert_eq!(
///     reason.to_string(),
///     "the next wait (45000 ms) would outlive the budget (20000 ms left)",
/// );
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The failure was an answer (`Class::Definitive`): the same request gets the same one.
    Definitive,
    /// The failure's class is one this policy does not retry.
    NotRetried {
        /// The class of the failure.
        class: Class,
    },
    /// Every attempt the policy allows was made (or its one rate-limit retry was spent).
    Exhausted {
        /// The attempts made.
        attempts: u32,
    },
    /// The next wait would cross the deadline of the work this call serves.
    Budget {
        /// The wait the ladder would have taken.
        wanted: Duration,
        /// The time left before the deadline.
        remaining: Duration,
    },
    /// The far side asked for a longer wait than the policy honours: longer than its
    /// `max_retry_after`, or than what its `max_total_wait` has left.
    RetryAfterTooLong {
        /// The wait the far side asked for.
        wanted: Duration,
        /// The longest wait the policy would have taken.
        max: Duration,
    },
    /// The cross-call retry quota is spent: the call made its attempt but may not retry.
    Quota,
    /// The work was cancelled, or its turn expired. (A call's own literal budget running out
    /// is [`StopReason::Budget`].)
    Cancelled,
    /// An inner retried call already gave up on this failure; retrying at two layers would
    /// multiply the attempts.
    Nested,
    /// A stream failed after its commit point: it had delivered output, and a retry would
    /// repeat it (see [`Retry::stream`](crate::Retry::stream)).
    Committed,
}

impl StopReason {
    /// The reason's name in `snake_case`, as notices print it.
    pub const fn name(&self) -> &'static str {
        match self {
            StopReason::Definitive => "definitive",
            StopReason::NotRetried { .. } => "not_retried",
            StopReason::Exhausted { .. } => "exhausted",
            StopReason::Budget { .. } => "budget",
            StopReason::RetryAfterTooLong { .. } => "retry_after_too_long",
            StopReason::Quota => "quota",
            StopReason::Cancelled => "cancelled",
            StopReason::Nested => "nested",
            StopReason::Committed => "committed",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Definitive => {
                f.write_str("the failure is an answer; retrying would repeat it")
            }
            StopReason::NotRetried { class } => {
                write!(f, "the policy does not retry a `{}` failure", class.name())
            }
            StopReason::Exhausted { attempts } => write!(f, "all {attempts} attempts failed"),
            StopReason::Budget { wanted, remaining } => write!(
                f,
                "the next wait ({} ms) would outlive the budget ({} ms left)",
                wanted.as_millis(),
                remaining.as_millis()
            ),
            StopReason::RetryAfterTooLong { wanted, max } => write!(
                f,
                "the far side asked to wait {} ms, longer than the policy allows ({} ms)",
                wanted.as_millis(),
                max.as_millis()
            ),
            StopReason::Quota => {
                f.write_str("the retry quota is spent; not retrying during an outage")
            }
            StopReason::Cancelled => f.write_str("the work was cancelled or its turn expired"),
            StopReason::Nested => {
                f.write_str("an inner retried call already gave up on this failure")
            }
            StopReason::Committed => {
                f.write_str("the stream had delivered output; a retry would repeat it")
            }
        }
    }
}

/// A call that did not succeed: the last error, unchanged, and why the ladder stopped.
///
/// Giving up never changes the verdict: a transient failure that persisted is still
/// undetermined ([`is_undetermined`](Self::is_undetermined)), never a pass and never a
/// definitive failure.
///
/// ```
/// use retry_runtime::{Class, Policy, Retry, StopReason};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let gave_up = Retry::new(&Policy::AVAILABILITY)
///     .run(async |_attempt| Err::<(), _>(Class::Unavailable { retry_after: None }))
///     .await
///     .unwrap_err();
/// assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
/// assert_eq!(gave_up.attempts(), 4);
/// assert!(gave_up.is_undetermined());
/// assert_eq!(gave_up.into_error(), Class::Unavailable { retry_after: None });
/// # }
/// ```
pub struct GaveUp<E> {
    error: E,
    reason: StopReason,
    attempts: u32,
    waited: Duration,
}

impl<E> GaveUp<E> {
    pub(crate) fn new(error: E, reason: StopReason, attempts: u32, waited: Duration) -> Self {
        GaveUp {
            error,
            reason,
            attempts,
            waited,
        }
    }

    /// The last attempt's error.
    pub fn error(&self) -> &E {
        &self.error
    }

    /// The last attempt's error, unchanged.
    pub fn into_error(self) -> E {
        self.error
    }

    /// Why the ladder stopped.
    pub fn reason(&self) -> StopReason {
        self.reason
    }

    /// How many attempts were made.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// How long the ladder waited between attempts in all.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

impl<E: Classify> GaveUp<E> {
    /// The class of the last error.
    pub fn class(&self) -> Class {
        self.error.classify()
    }

    /// Whether the answer is still unknown: the last failure was transient (availability,
    /// a rate limit, a timeout, a cancelled turn), not an answer. Retries that ran out leave
    /// it undetermined.
    pub fn is_undetermined(&self) -> bool {
        self.class().is_transient()
    }
}

/// A give-up classifies as its last error: giving up never changes the verdict, so a
/// function that returns a `GaveUp` can itself be retried, and the nesting rule keeps the
/// outer ladder from repeating what the inner one gave up on.
///
/// ```
/// use retry_runtime::{Class, Classify, Policy, Retry};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let gave_up = Retry::new(&Policy::AVAILABILITY)
///     .run(async |_| Err::<(), _>(Class::Transport))
///     .await
///     .unwrap_err();
/// assert_eq!(gave_up.classify(), Class::Transport);
/// # }
/// ```
impl<E: Classify> Classify for GaveUp<E> {
    fn classify(&self) -> Class {
        self.error.classify()
    }
}

/// The error's text redacted (see [`redact`](crate::redact)), then why the ladder stopped.
impl<E: fmt::Display> fmt::Display for GaveUp<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (gave up: {}; {} attempt{}, {} ms waiting)",
            Redacted::new(&self.error),
            self.reason,
            self.attempts,
            if self.attempts == 1 { "" } else { "s" },
            self.waited.as_millis()
        )
    }
}

/// The error's `Debug` text redacted; [`GaveUp::error`] gives the error itself, untouched.
impl<E: fmt::Debug> fmt::Debug for GaveUp<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GaveUp")
            .field("error", &Redacted::debug(&self.error))
            .field("reason", &self.reason)
            .field("attempts", &self.attempts)
            .field("waited", &self.waited)
            .finish()
    }
}

impl<E: Error + 'static> Error for GaveUp<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.error)
    }
}
