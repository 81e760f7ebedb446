//! HTTP: a status and its headers say what a failure means (features `http` and `reqwest`).
//!
//! | status | class |
//! |---|---|
//! | 429 | `RateLimited`, with the `Retry-After` / `retry-after-ms` hint |
//! | 403 with `x-ratelimit-remaining: 0` | `QuotaExhausted`: the reset outlives any backoff |
//! | 502, 503, 504 | `Unavailable` |
//! | 500 and other 5xx but 501, 505 | `ServerError` |
//! | 408 | `Timeout` |
//! | everything else, 501 and 505 included | `Definitive`: an answer |

use std::time::{Duration, SystemTime};

use http::{HeaderMap, StatusCode};

use crate::class::{Class, Classify};

/// The class of a failed response with this status and these headers; `now` dates an
/// HTTP-date `Retry-After`.
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
    match status.as_u16() {
        429 => Class::RateLimited {
            retry_after: retry_after(headers, now),
        },
        403 if quota_spent(headers) => Class::QuotaExhausted,
        _ => classify_status(status),
    }
}

/// The class of a status alone (a 429 without its headers carries no hint).
///
/// ```
/// use http::StatusCode;
/// use retry_runtime::{http::classify_status, Class};
/// assert_eq!(classify_status(StatusCode::BAD_GATEWAY), Class::Unavailable { retry_after: None });
/// assert_eq!(classify_status(StatusCode::UNPROCESSABLE_ENTITY), Class::Definitive);
/// ```
pub const fn classify_status(status: StatusCode) -> Class {
    match status.as_u16() {
        429 => Class::RateLimited { retry_after: None },
        502..=504 => Class::Unavailable { retry_after: None },
        408 => Class::Timeout,
        // 501 and 505 say the server will never do this: answers.
        501 | 505 => Class::Definitive,
        500..=599 => Class::ServerError,
        _ => Class::Definitive,
    }
}

/// The wait the far side asked for: `retry-after-ms` (milliseconds), else `Retry-After` in
/// seconds or as an HTTP date (a date in the past asks for no wait). Malformed values are
/// ignored; the ladder's own wait applies then.
///
/// ```
/// use http::{HeaderMap, HeaderValue};
/// use retry_runtime::http::retry_after;
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
///
/// let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:30 GMT"));
/// assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(30)));
/// headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
/// assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(1500)));
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| parse_millis(v.as_bytes()))
    {
        return Some(ms);
    }
    headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| parse_retry_after(v.as_bytes(), now))
}

/// Parse one `Retry-After` value: delay-seconds or an HTTP date. Any bytes are accepted; what
/// is not a valid value gives `None`.
///
/// ```
/// use retry_runtime::http::parse_retry_after;
/// use std::time::{Duration, SystemTime};
/// assert_eq!(parse_retry_after(b"120", SystemTime::now()), Some(Duration::from_secs(120)));
/// assert_eq!(parse_retry_after(b"soon", SystemTime::now()), None);
/// assert_eq!(parse_retry_after(b"99999999999999999999999", SystemTime::now()), Some(Duration::MAX));
/// ```
pub fn parse_retry_after(value: &[u8], now: SystemTime) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        // A huge number is a very long wait, not an error: the policy's maximum rejects it.
        return Some(
            text.parse::<u64>()
                .map_or(Duration::MAX, Duration::from_secs),
        );
    }
    let date = httpdate::parse_http_date(text).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

fn parse_millis(value: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?.trim();
    let millis: f64 = text.parse().ok()?;
    if !millis.is_finite() || millis < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(millis / 1000.0).unwrap_or(Duration::MAX))
}

fn quota_spent(headers: &HeaderMap) -> bool {
    headers
        .get("x-ratelimit-remaining")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "0")
}

/// A status says its class; see [`classify_status`].
impl Classify for StatusCode {
    fn classify(&self) -> Class {
        classify_status(*self)
    }
}

/// A response says its class by its status and headers; see [`classify_response`].
impl<B> Classify for http::Response<B> {
    fn classify(&self) -> Class {
        classify_response(self.status(), self.headers(), SystemTime::now())
    }
}

/// `reqwest` errors by what failed: a timeout is `Timeout`; a connection that could not be made
/// or broke mid-request or mid-body is `Transport`; a status from `error_for_status` is
/// classified by [`classify_status`] (the headers are gone by then: classify the response
/// before `error_for_status` to keep a `Retry-After`); a body that does not decode is
/// `InvalidOutput`; a request that cannot be built or redirected is `Definitive`.
#[cfg(feature = "reqwest")]
impl Classify for reqwest::Error {
    fn classify(&self) -> Class {
        if self.is_timeout() {
            Class::Timeout
        } else if let Some(status) = self.status() {
            classify_status(status)
        } else if self.is_decode() {
            Class::InvalidOutput
        } else if self.is_builder() || self.is_redirect() {
            Class::Definitive
        } else {
            // Connect, request and body errors: no status was read.
            Class::Transport
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn retry_after_takes_any_bytes_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_retry_after(&bytes, SystemTime::now());
            let _ = parse_millis(&bytes);
        }

        #[test]
        fn delay_seconds_round_trip(seconds in any::<u64>()) {
            let text = seconds.to_string();
            prop_assert_eq!(parse_retry_after(text.as_bytes(), SystemTime::now()), Some(Duration::from_secs(seconds)));
        }
    }

    #[test]
    fn a_date_in_the_past_asks_for_no_wait() {
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after(b"Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn negative_or_nan_milliseconds_are_ignored() {
        assert_eq!(parse_millis(b"-5"), None);
        assert_eq!(parse_millis(b"NaN"), None);
        assert_eq!(parse_millis(b"250.5"), Some(Duration::from_micros(250_500)));
    }

    #[test]
    fn every_status_has_a_class_and_only_availability_statuses_are_unavailable() {
        for code in 100..=999 {
            let status = StatusCode::from_u16(code).unwrap();
            let class = classify_status(status);
            assert_eq!(
                class == Class::Unavailable { retry_after: None },
                matches!(code, 502..=504),
                "{code}"
            );
        }
    }
}
