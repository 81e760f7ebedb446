//! [`Why`]: which rule of the one decision set a step, as `backoff explain` names it.

/// Which rule of [`decide`](super::decide) set a step: the term the wait is, or the check that stopped.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Why {
    /// The wait is the ladder's rung, jittered.
    Ladder,
    /// The wait is the policy's cap, jittered: the rung would have been longer.
    Cap,
    /// The wait is the server's hint (with its spread): longer than the ladder's own.
    Hint,
    /// The wait is a rate limit's single wait (`RateLimit::Once`), or its one retry is spent.
    RateLimitOnce,
    /// A retried call nested in the attempt already gave up.
    Nested,
    /// The failure's class stops it: cancelled, an answer, or a class the policy does not retry.
    Declined,
    /// The attempt had delivered output, and the caller did not opt in to restarts.
    Committed,
    /// Every attempt the policy allows was made.
    Attempts,
    /// The turn was cancelled or its deadline passed.
    TurnOver,
    /// The hint is longer than the policy's `max_retry_after`.
    MaxHint,
    /// The wait would go past the policy's total allowance.
    MaxTotal,
    /// The wait would go past the budget's remaining time.
    Remaining,
    /// The failure would be retried, but its request cannot be sent again.
    NotResendable,
    /// Another upstream of the call's set is ready: the next attempt goes there at once.
    Moved,
}

impl Why {
    /// The rule's name in `snake_case`, as `backoff explain` prints it.
    ///
    /// ```
    /// assert_eq!(retry_runtime::ladder::Why::Declined.name(), "policy");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Why::Ladder => "ladder",
            Why::Cap => "cap",
            Why::Hint => "hint",
            Why::RateLimitOnce => "rate_limit_once",
            Why::Nested => "nested",
            Why::Declined => "policy",
            Why::Committed => "committed",
            Why::Attempts => "attempts",
            Why::TurnOver => "cancelled",
            Why::MaxHint => "max_hint",
            Why::MaxTotal => "max_total",
            Why::Remaining => "budget",
            Why::NotResendable => "not_resendable",
            Why::Moved => "moved",
        }
    }
}
