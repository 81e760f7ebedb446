//! gRPC's status codes through one table (feature `grpc`), with A6's server pushback and a
//! per-day quota in the details; with feature `tonic`, `Classify` for `tonic::Status` and
//! `tonic::transport::Error` reads it.
//!
//! | code | class | why |
//! |---|---|---|
//! | `UNAVAILABLE` (14) | `Unavailable`, with the hint | the gRPC status-code doc: "most likely a transient condition", the code A6's examples retry |
//! | `RESOURCE_EXHAUSTED` (8) | `RateLimited`, with the hint; `QuotaExhausted` for a per-day `QuotaFailure` or `ErrorInfo` | a quota or a rate limit; a daily one resets at midnight, past any ladder (the Gemini rate-limit docs) |
//! | `DEADLINE_EXCEEDED` (4) | `Timeout` | the policy decides: `transient` retries it, `availability` does not (the call may have run) |
//! | `INTERNAL` (13), `UNKNOWN` (2) | `ServerError` | the far side failed; `UNKNOWN` with a transport error as its source is `Transport` (grpc-rust#628) |
//! | `CANCELLED` (1) | `Cancelled`, never retried | the caller (or its deadline) gave up |
//! | `ABORTED` (10) | `Definitive` | a concurrency conflict: the status-code doc says to retry "at a higher level", the whole read-modify-write, not the call |
//! | every other code: `INVALID_ARGUMENT`, `NOT_FOUND`, `ALREADY_EXISTS`, `PERMISSION_DENIED`, `FAILED_PRECONDITION`, `OUT_OF_RANGE`, `UNIMPLEMENTED`, `DATA_LOSS`, `UNAUTHENTICATED`, `OK` | `Definitive`: an answer | the same request gets the same answer |
//!
//! **Hints**, first that applies: A6's `grpc-retry-pushback-ms` (whole milliseconds; a
//! negative or malformed value means "do not retry", a hint of forever, which the ladder stops
//! on with `RetryAfterTooLong`), then `google.rpc.RetryInfo.retryDelay` in the details. Both
//! are floors under the ladder's wait, as `Retry-After` is. A6's commit rule for streaming
//! calls, retry only before the first response message, is [`Retry::stream`](crate::Retry::stream)'s
//! default rule: the first message commits.
//!
//! ```
//! use retry_runtime::grpc::{self, Pushback};
//! use retry_runtime::Class;
//! use std::time::Duration;
//!
//! assert_eq!(grpc::classify_code(14, None, false), Class::Unavailable { retry_after: None });
//! assert_eq!(grpc::classify_code(8, None, true), Class::QuotaExhausted);
//! assert_eq!(grpc::parse_pushback(b"1500"), Pushback::Wait(Duration::from_millis(1500)));
//! assert_eq!(grpc::parse_pushback(b"-1"), Pushback::Stop);
//! ```

#[cfg(feature = "tonic")]
mod tonic;

use std::time::Duration;

use crate::class::Class;

/// The metadata key of A6's server pushback.
pub const PUSHBACK: &str = "grpc-retry-pushback-ms";

/// What a `grpc-retry-pushback-ms` value says (A6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushback {
    /// Wait this long before the next attempt.
    Wait(Duration),
    /// Do not retry: a negative or malformed value.
    Stop,
}

impl Pushback {
    /// The hint it gives: its wait, or (to stop) a hint of forever.
    pub const fn hint(self) -> Duration {
        match self {
            Pushback::Wait(wait) => wait,
            Pushback::Stop => Duration::MAX,
        }
    }
}

/// Read a `grpc-retry-pushback-ms` value: ASCII digits of milliseconds, else [`Pushback::Stop`].
pub fn parse_pushback(value: &[u8]) -> Pushback {
    let text = value.trim_ascii();
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return Pushback::Stop;
    }
    let millis = text.iter().fold(0u64, |millis, digit| {
        millis
            .saturating_mul(10)
            .saturating_add(u64::from(digit - b'0'))
    });
    Pushback::Wait(Duration::from_millis(millis))
}

/// The class of a gRPC status `code` (its number), with `hint` (the pushback's or `RetryInfo`'s)
/// and whether its details name a per-day quota, by the table above.
pub const fn classify_code(code: i32, hint: Option<Duration>, per_day_quota: bool) -> Class {
    match code {
        14 => Class::Unavailable { retry_after: hint },
        8 if per_day_quota => Class::QuotaExhausted,
        8 => Class::RateLimited { retry_after: hint },
        4 => Class::Timeout,
        2 | 13 => Class::ServerError,
        1 => Class::Cancelled,
        _ => Class::Definitive,
    }
}

/// The class of a gRPC status: its `code`, A6's `pushback` if the server sent one, the
/// `RetryInfo` delay in its details, and whether they name a per-day quota. The pushback comes
/// first; a "do not retry" one (negative or malformed) stops any code the table would retry:
/// one without a hint of its own (`INTERNAL`, `UNKNOWN`, `DEADLINE_EXCEEDED`) then reads as
/// `Unavailable` with a hint of forever, so every policy stops, the verdict undetermined.
///
/// ```
/// use retry_runtime::grpc::{self, Pushback};
/// use retry_runtime::Class;
/// use std::time::Duration;
///
/// assert_eq!(grpc::classify_status(13, Some(Pushback::Stop), None, false), Class::Unavailable { retry_after: Some(Duration::MAX) });
/// assert_eq!(grpc::classify_status(3, Some(Pushback::Stop), None, false), Class::Definitive);
/// let hinted = grpc::classify_status(8, None, Some(Duration::from_secs(2)), false);
/// assert_eq!(hinted, Class::RateLimited { retry_after: Some(Duration::from_secs(2)) });
/// ```
pub const fn classify_status(
    code: i32,
    pushback: Option<Pushback>,
    retry_info: Option<Duration>,
    per_day_quota: bool,
) -> Class {
    let hint = match pushback {
        Some(pushback) => Some(pushback.hint()),
        None => retry_info,
    };
    let class = classify_code(code, hint, per_day_quota);
    match (pushback, class) {
        (
            Some(Pushback::Stop),
            Class::ServerError | Class::Timeout | Class::Transport | Class::InvalidOutput,
        ) => Class::Unavailable {
            retry_after: Some(Duration::MAX),
        },
        _ => class,
    }
}

/// A code's name, as the status-code doc spells it: `UNAVAILABLE`; `None` past 16.
///
/// ```
/// assert_eq!(retry_runtime::grpc::code_name(14), Some("UNAVAILABLE"));
/// ```
pub const fn code_name(code: i32) -> Option<&'static str> {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    if code < 0 || code as usize >= NAMES.len() {
        return None;
    }
    Some(NAMES[code as usize])
}

/// A code from its name (`UNAVAILABLE`, any case) or its number (`14`).
///
/// ```
/// assert_eq!(retry_runtime::grpc::parse_code("unavailable"), Some(14));
/// assert_eq!(retry_runtime::grpc::parse_code("8"), Some(8));
/// ```
pub fn parse_code(text: &str) -> Option<i32> {
    let text = text.trim();
    if let Ok(number) = text.parse::<i32>() {
        return code_name(number).map(|_| number);
    }
    (0..=16).find(|&code| code_name(code).is_some_and(|name| name.eq_ignore_ascii_case(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_class() {
        let classes: Vec<Class> = (0..=16)
            .map(|code| classify_code(code, None, false))
            .collect();
        let retried: Vec<i32> = (0..=16)
            .filter(|&code| classify_code(code, None, false).is_transient())
            .collect();
        assert_eq!(retried, [1, 2, 4, 8, 13, 14]);
        assert_eq!(classes[10], Class::Definitive, "ABORTED is an answer");
    }

    #[test]
    fn a_pushback_of_digits_waits_and_anything_else_stops() {
        assert_eq!(
            parse_pushback(b" 250 "),
            Pushback::Wait(Duration::from_millis(250))
        );
        for stop in [&b"-1"[..], b"", b"1.5", b"soon", b"-0"] {
            assert_eq!(parse_pushback(stop), Pushback::Stop, "{stop:?}");
        }
        assert_eq!(Pushback::Stop.hint(), Duration::MAX);
    }

    #[test]
    fn codes_parse_by_name_or_number() {
        assert_eq!(parse_code("RESOURCE_EXHAUSTED"), Some(8));
        assert_eq!(parse_code("17"), None);
        assert_eq!(parse_code("busy"), None);
    }
}
