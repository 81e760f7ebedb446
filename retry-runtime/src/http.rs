//! HTTP and model APIs: one classification table for a failed response, the hints it carries,
//! and the error that keeps them (features `http` and `reqwest`).
//!
//! The rules apply in this order; the first that matches decides:
//!
//! | what the response says | class |
//! |---|---|
//! | `x-should-retry: true` | `Unavailable` (with its hint), whatever the status |
//! | `x-should-retry: false` | `Definitive`: the server says the same request gets the same answer |
//! | body error type `overloaded_error` | `Unavailable` (with its hint), whatever the status |
//! | body type or code `insufficient_quota`, `billing_hard_limit_reached`, `billing_not_active` | `QuotaExhausted`: no wait clears it |
//! | 400 or 413 whose body is `context_length_exceeded` or "prompt is too long" | `Definitive`, and [`HttpError::is_context_overflow`] says so |
//! | a Google `QuotaFailure` or `ErrorInfo` naming a per-day quota (`...PerDay...`) | `QuotaExhausted`: it resets at midnight Pacific time, and no ladder outlasts it, whatever `retryDelay` says |
//! | 502, 503, 504, 529 | `Unavailable`, with the hint |
//! | 429 | `RateLimited`, with the hint (Vertex's shared-capacity 429, with no details, too) |
//! | 403 with `x-ratelimit-remaining: 0` | `QuotaExhausted`: its reset outlives any backoff |
//! | 408 | `Timeout` |
//! | 500 and other 5xx but 501 and 505 | `ServerError`: may be the request's fault |
//! | 501, 505 | `Definitive`: the server will never do this |
//! | every other status (400, 401, 403, 404, 409, 413, 422, ...) | `Definitive`: an answer |
//!
//! A hint is `retry-after-ms` (milliseconds), else `Retry-After` (seconds, or an HTTP date),
//! else Google's `RetryInfo.retryDelay` in the body (a protobuf duration, `"36s"`); a hint of
//! zero, or a date now or past, is no hint. [`HttpError::hint_source`] says which it was. A
//! Google envelope wrapped in a one-element array (`[{"error": {...}}]`) is read the same.
//!
//! ## Inside a stream
//!
//! A model's stream can fail after its `200` head, with an error event: one named `error`, one
//! whose data is a JSON object with a top-level `error` object or `"type": "error"`, or OpenAI
//! Responses' `response.failed` (its error is under `response.error`). Its
//! [`HttpError::in_stream`] keeps the head's status and headers to read, but is classified by
//! the event alone: the head's `x-should-retry` and `Retry-After` belonged to the `200`, and
//! the `200` is no row. The first row that matches the event's error type or code decides:
//!
//! | what the error event says | class |
//! |---|---|
//! | a JSON-RPC 2.0 error response (`"jsonrpc": "2.0"`, an `id`, an `error` object, no `result` or `method`): an MCP server's answer | `Definitive`: an answer, never sent again |
//! | `overloaded_error`, Google's `UNAVAILABLE` | `Unavailable`, with no hint but `RetryInfo`'s |
//! | `insufficient_quota`, `billing_hard_limit_reached`, `billing_not_active`, `enforced_spend_limit_reached` | `QuotaExhausted`: no wait clears it |
//! | a Google per-day `QuotaFailure` or `ErrorInfo` | `QuotaExhausted` |
//! | `context_length_exceeded` or "prompt is too long" | `Definitive`, and [`HttpError::is_context_overflow`] says so |
//! | `rate_limit_error`, `rate_limit_exceeded`, Google's `RESOURCE_EXHAUSTED` | `RateLimited`, with `RetryInfo`'s hint if any (Gemini's `streamGenerateContent?alt=sse` sends the envelope as `data:`) |
//! | `api_error`, `server_error`, Google's `INTERNAL` | `ServerError`: may be the request's fault |
//! | `invalid_request_error`, Google's `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `PERMISSION_DENIED`, `NOT_FOUND` | `Definitive`: an answer |
//! | any other type or code, or none | `ServerError`: the far side failed mid-answer |
//!
//! ```
//! use http::{HeaderMap, HeaderValue, StatusCode};
//! use retry_runtime::http::HttpError;
//! use retry_runtime::{Class, Classify};
//! use std::time::Duration;
//!
//! let mut headers = HeaderMap::new();
//! headers.insert("retry-after", HeaderValue::from_static("3"));
//! let overloaded = HttpError::new(StatusCode::SERVICE_UNAVAILABLE, &headers, b"");
//! assert_eq!(overloaded.classify(), Class::Unavailable { retry_after: Some(Duration::from_secs(3)) });
//!
//! let billing = br#"{"error": {"type": "insufficient_quota", "message": "You exceeded your current quota"}}"#;
//! let refused = HttpError::new(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), billing);
//! assert_eq!(refused.classify(), Class::QuotaExhausted);
//! ```

#[cfg(feature = "reqwest")]
mod call_error;
mod error;
mod google;
mod headers;
#[cfg(feature = "sse")]
mod mcp;
#[cfg(all(feature = "sse", feature = "reqwest"))]
mod model_events;
#[cfg(all(feature = "sse", feature = "reqwest"))]
mod peek;
mod rate_limits;
#[cfg(feature = "reqwest")]
mod reqwest;
mod resend;
mod service;
#[cfg(all(feature = "sse", feature = "reqwest"))]
mod stream_error;
mod stream_peek;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod upstream_for;

use std::time::SystemTime;

use ::http::{HeaderMap, StatusCode};

use crate::class::{Class, Classify};

#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use call_error::CallError;
pub use error::HttpError;
pub use headers::{parse_retry_after, retry_after};
#[cfg(feature = "sse")]
#[cfg_attr(docsrs, doc(cfg(feature = "sse")))]
pub use mcp::is_jsonrpc_response;
#[cfg(all(feature = "sse", feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "sse", feature = "reqwest"))))]
pub use model_events::ModelEvents;
#[cfg(all(feature = "sse", feature = "reqwest"))]
pub(crate) use model_events::provider_error;
pub use rate_limits::{rate_limits, tokens_of};
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use reqwest::ResponseExt;
pub use resend::ResendCount;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) use service::Inspecting;
pub use service::{AsTransport, ClassifyError, Reply};
#[cfg(all(feature = "sse", feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "sse", feature = "reqwest"))))]
pub use stream_error::StreamError;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) use stream_peek::{Fault, Refusal, StreamPeek};
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "tower", feature = "reqwest-middleware")))
)]
pub use upstream_for::{Across, AcrossChoice, UpstreamChoice, UpstreamFor};

/// What an error body said, in the terms the table reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum BodySays {
    /// Nothing the table reads.
    #[default]
    Nothing,
    /// The far side is overloaded (`overloaded_error`).
    Overloaded,
    /// A billing or hard-limit refusal (`insufficient_quota`, ...).
    QuotaRefused,
    /// The prompt does not fit the model's context.
    ContextOverflow,
    /// A Google quota counted per day is spent.
    DailyQuota,
    /// An error event inside a stream: rate limited (`rate_limit_error`, `rate_limit_exceeded`).
    StreamRateLimited,
    /// An error event inside a stream: the far side failed (`api_error`, `server_error`).
    StreamServerError,
    /// An error event inside a stream: the request is refused (`invalid_request_error`).
    StreamInvalidRequest,
    /// An error event inside a stream whose type the table does not know, or that has none.
    StreamUnknown,
    /// An event inside a stream that is a JSON-RPC 2.0 error response: an MCP server's answer.
    JsonRpcError,
}

/// Where an [`HttpError`]'s hint came from ([`HttpError::hint_source`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HintSource {
    /// The `retry-after-ms` header (OpenAI's and Anthropic's), in milliseconds.
    RetryAfterMs,
    /// The `Retry-After` header: seconds, or an HTTP date.
    RetryAfter,
    /// Google's `google.rpc.RetryInfo.retryDelay`, in the body.
    RetryInfo,
}

/// Which row of [the one table](crate::http) decided a class, so a person can be told why a
/// response was (or was not) retried: see [`HttpError::rule`].
///
/// ```
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use retry_runtime::http::{HttpError, Rule};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-should-retry", HeaderValue::from_static("false"));
/// let refused = HttpError::new(StatusCode::SERVICE_UNAVAILABLE, &headers, b"");
/// assert_eq!(refused.rule(), Rule::ShouldRetry);
/// assert_eq!(refused.rule().name(), "x_should_retry");
/// assert_eq!(HttpError::new(StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"").rule(), Rule::Status);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The server said `x-should-retry: true` or `false`, which outranks everything else.
    ShouldRetry,
    /// The body's error type or code is `overloaded_error`.
    Overloaded,
    /// The body's error type or code is a billing or hard-limit refusal (`insufficient_quota`, ...).
    QuotaRefused,
    /// The body says the prompt does not fit the model's context.
    ContextOverflow,
    /// A 403 with `x-ratelimit-remaining: 0`.
    QuotaSpent,
    /// A Google `QuotaFailure` or `ErrorInfo` names a per-day quota.
    DailyQuota,
    /// The status alone.
    Status,
    /// An error event inside a stream says `rate_limit_error` or `rate_limit_exceeded`.
    StreamRateLimited,
    /// An error event inside a stream says `api_error` or `server_error`.
    StreamServerError,
    /// An error event inside a stream says `invalid_request_error`.
    StreamInvalidRequest,
    /// An error event inside a stream names a type the table does not know, or none.
    StreamUnknown,
    /// An event inside a stream is a JSON-RPC 2.0 error response (`"jsonrpc": "2.0"`, an `id`,
    /// an `error` object): the server's answer to the request, as an MCP server sends it.
    JsonRpcError,
}

impl Rule {
    /// The rule's name in `snake_case`, as the `backoff explain` CLI prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::ShouldRetry => "x_should_retry",
            Rule::Overloaded => "provider_overloaded",
            Rule::QuotaRefused => "provider_quota_refused",
            Rule::ContextOverflow => "provider_context_overflow",
            Rule::QuotaSpent => "x_ratelimit_remaining",
            Rule::DailyQuota => "google_daily_quota",
            Rule::Status => "status",
            Rule::StreamRateLimited => "stream_rate_limited",
            Rule::StreamServerError => "stream_server_error",
            Rule::StreamInvalidRequest => "stream_invalid_request",
            Rule::StreamUnknown => "stream_unknown",
            Rule::JsonRpcError => "jsonrpc_error",
        }
    }
}

/// The one table: the class of a failed response from its status, its headers (read through
/// `should_retry`, `hint` and `quota_spent`) and what its body said.
pub(crate) const fn classify_parts(
    status: u16,
    should_retry: Option<bool>,
    hint: Option<std::time::Duration>,
    quota_spent: bool,
    body: BodySays,
) -> Class {
    decide(status, should_retry, hint, quota_spent, body).0
}

/// The table itself: the class, and the row that decided it.
pub(crate) const fn decide(
    status: u16,
    should_retry: Option<bool>,
    hint: Option<std::time::Duration>,
    quota_spent: bool,
    body: BodySays,
) -> (Class, Rule) {
    match should_retry {
        Some(true) => return (Class::Unavailable { retry_after: hint }, Rule::ShouldRetry),
        Some(false) => return (Class::Definitive, Rule::ShouldRetry),
        None => {}
    }
    match body {
        BodySays::Overloaded => {
            return (Class::Unavailable { retry_after: hint }, Rule::Overloaded);
        }
        BodySays::QuotaRefused => return (Class::QuotaExhausted, Rule::QuotaRefused),
        BodySays::DailyQuota => return (Class::QuotaExhausted, Rule::DailyQuota),
        BodySays::ContextOverflow => return (Class::Definitive, Rule::ContextOverflow),
        // An error inside a stream always says one of these, so its 200 is never a row.
        BodySays::StreamRateLimited => {
            return (
                Class::RateLimited { retry_after: hint },
                Rule::StreamRateLimited,
            );
        }
        BodySays::StreamServerError => return (Class::ServerError, Rule::StreamServerError),
        BodySays::StreamInvalidRequest => {
            return (Class::Definitive, Rule::StreamInvalidRequest);
        }
        BodySays::StreamUnknown => return (Class::ServerError, Rule::StreamUnknown),
        BodySays::JsonRpcError => return (Class::Definitive, Rule::JsonRpcError),
        BodySays::Nothing => {}
    }
    let class = match status {
        502..=504 | 529 => Class::Unavailable { retry_after: hint },
        429 => Class::RateLimited { retry_after: hint },
        403 if quota_spent => return (Class::QuotaExhausted, Rule::QuotaSpent),
        408 => Class::Timeout,
        // 501 and 505 say the server will never do this: answers.
        501 | 505 => Class::Definitive,
        500..=599 => Class::ServerError,
        _ => Class::Definitive,
    };
    (class, Rule::Status)
}

/// The class of a failed response with this status and these headers (the body unread); `now`
/// dates an HTTP-date `Retry-After`. [`HttpError`] applies the same table with the body.
///
/// ```
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use retry_runtime::{http::classify_response, Class};
/// use std::time::{Duration, SystemTime};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", HeaderValue::from_static("7"));
/// assert_eq!(
///     classify_response(StatusCode::TOO_MANY_REQUESTS, &headers, SystemTime::now()),
///     Class::RateLimited { retry_after: Some(Duration::from_secs(7)) },
/// );
///
/// let mut spent = HeaderMap::new();
/// spent.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
/// assert_eq!(classify_response(StatusCode::FORBIDDEN, &spent, SystemTime::now()), Class::QuotaExhausted);
/// assert_eq!(classify_response(StatusCode::FORBIDDEN, &HeaderMap::new(), SystemTime::now()), Class::Definitive);
/// ```
pub fn classify_response(status: StatusCode, headers: &HeaderMap, now: SystemTime) -> Class {
    classify_parts(
        status.as_u16(),
        headers::should_retry(headers),
        retry_after(headers, now),
        headers::quota_spent(headers),
        BodySays::Nothing,
    )
}

/// The class of a status alone (no hint, no header, no body).
///
/// ```
/// use http::StatusCode;
/// use retry_runtime::{http::classify_status, Class};
/// assert_eq!(classify_status(StatusCode::BAD_GATEWAY), Class::Unavailable { retry_after: None });
/// assert_eq!(classify_status(StatusCode::from_u16(529).unwrap()), Class::Unavailable { retry_after: None });
/// assert_eq!(classify_status(StatusCode::UNPROCESSABLE_ENTITY), Class::Definitive);
/// ```
pub const fn classify_status(status: StatusCode) -> Class {
    classify_parts(status.as_u16(), None, None, false, BodySays::Nothing)
}

/// A status says its class; see [`classify_status`].
impl Classify for StatusCode {
    fn classify(&self) -> Class {
        classify_status(*self)
    }
}

/// A response says its class by its status and headers; see [`classify_response`].
impl<B> Classify for ::http::Response<B> {
    fn classify(&self) -> Class {
        classify_response(self.status(), self.headers(), SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_a_class_and_only_availability_statuses_are_unavailable() {
        for code in 100..=999 {
            let status = StatusCode::from_u16(code).unwrap();
            let class = classify_status(status);
            assert_eq!(
                matches!(class, Class::Unavailable { .. }),
                matches!(code, 502..=504 | 529),
                "{code}"
            );
        }
    }

    #[test]
    fn x_should_retry_overrides_the_status_both_ways() {
        let retry = classify_parts(400, Some(true), None, false, BodySays::Nothing);
        assert_eq!(retry, Class::Unavailable { retry_after: None });
        let stop = classify_parts(503, Some(false), None, false, BodySays::Nothing);
        assert_eq!(stop, Class::Definitive);
    }
}
