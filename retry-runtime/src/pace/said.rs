//! What a provider says of a key's limits in an answer, as plain values: what
//! [`http::rate_limits`](crate::http::rate_limits) reads from OpenAI's, Azure's and Anthropic's
//! headers, and what an upstream's pacer is told.

use std::time::Duration;

/// What one response said of the key it was made with: how many requests and how many tokens
/// are left, as the provider counts them when it answers. Either may be missing.
///
/// ```
/// use retry_runtime::{RateLeft, RateSaid};
/// use std::time::Duration;
///
/// let said = RateSaid {
///     requests: Some(RateLeft { limit: Some(10), remaining: 3, reset: Some(Duration::from_millis(700)) }),
///     tokens: None,
/// };
/// assert_eq!(said.requests.unwrap().rate_per_second(), Some(10.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateSaid {
    /// The key's requests.
    pub requests: Option<RateLeft>,
    /// The key's tokens (for Anthropic, the tightest of its token limits).
    pub tokens: Option<RateLeft>,
}

impl RateSaid {
    /// Whether the response said anything of the key's limits.
    pub const fn is_empty(&self) -> bool {
        self.requests.is_none() && self.tokens.is_none()
    }
}

/// One of a key's limits, as one response said it.
///
/// ```
/// use retry_runtime::RateLeft;
/// use std::time::Duration;
///
/// // 600 a minute, 590 left, full again in 1 s: it refills at 10 a second.
/// let left = RateLeft { limit: Some(600), remaining: 590, reset: Some(Duration::from_secs(1)) };
/// assert_eq!(left.rate_per_second(), Some(10.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLeft {
    /// The limit (`x-ratelimit-limit-*`, `anthropic-ratelimit-*-limit`), if said.
    pub limit: Option<u64>,
    /// What is left of it now (`x-ratelimit-remaining-*`, `anthropic-ratelimit-*-remaining`).
    pub remaining: u64,
    /// How long until it is whole again (`x-ratelimit-reset-*`, a duration such as `6m0s`;
    /// `anthropic-ratelimit-*-reset`, an RFC 3339 instant, made relative to now).
    pub reset: Option<Duration>,
}

impl RateLeft {
    /// The rate it refills at, per second, where the response says enough to tell: what is
    /// missing of the limit, over the time until it is whole again (a bucket refills evenly).
    pub fn rate_per_second(&self) -> Option<f64> {
        let limit = self.limit?;
        let reset = self.reset?.as_secs_f64();
        let missing = limit.checked_sub(self.remaining)?;
        (missing > 0 && reset > 0.0).then(|| missing as f64 / reset)
    }
}
