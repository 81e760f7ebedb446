//! The headers the table reads: `Retry-After`, `retry-after-ms`, `x-should-retry` and
//! `x-ratelimit-remaining`. Every parser takes any bytes; what is not a valid value is ignored.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderName};

/// The wait the far side asked for: `retry-after-ms` (milliseconds), else `Retry-After` in
/// seconds or as an HTTP date. A hint of zero or less, or a date now or past, is no hint (as
/// the official OpenAI and Anthropic clients read it): the ladder's own wait applies.
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
/// headers.insert("retry-after-ms", HeaderValue::from_static("0"));
/// headers.insert("retry-after", HeaderValue::from_static("0"));
/// assert_eq!(retry_after(&headers, now), None);
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let millis = headers
        .get("retry-after-ms")
        .and_then(|v| parse_millis(v.as_bytes()));
    millis
        .or_else(|| {
            headers
                .get(http::header::RETRY_AFTER)
                .and_then(|v| parse_retry_after(v.as_bytes(), now))
        })
        .filter(|hint| !hint.is_zero())
}

/// Which header [`retry_after`] read a hint from: `retry-after-ms` if it gave one.
pub(super) fn hint_source(headers: &HeaderMap) -> super::HintSource {
    let millis = headers
        .get("retry-after-ms")
        .and_then(|v| parse_millis(v.as_bytes()))
        .filter(|hint| !hint.is_zero());
    match millis {
        Some(_) => super::HintSource::RetryAfterMs,
        None => super::HintSource::RetryAfter,
    }
}

/// Parse one `Retry-After` value: delay-seconds (a decimal fraction is read too, as the
/// official clients read it) or an HTTP date. Any bytes are accepted; what is not a valid
/// value gives `None`. A date in the past gives zero, which [`retry_after`] reads as no hint.
///
/// ```
/// use retry_runtime::http::parse_retry_after;
/// use std::time::{Duration, SystemTime};
/// assert_eq!(parse_retry_after(b"120", SystemTime::now()), Some(Duration::from_secs(120)));
/// assert_eq!(parse_retry_after(b"1.5", SystemTime::now()), Some(Duration::from_millis(1500)));
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
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return seconds_from_float(text.parse().ok()?);
    }
    let date = httpdate::parse_http_date(text).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

pub(super) fn parse_millis(value: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?.trim();
    let millis: f64 = text.parse().ok()?;
    seconds_from_float(millis / 1000.0)
}

fn seconds_from_float(seconds: f64) -> Option<Duration> {
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

/// `x-should-retry`: `Some(true)` or `Some(false)` when the server said, as the official
/// OpenAI and Anthropic clients read it.
pub(super) fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// `x-ratelimit-remaining: 0`: a quota spent.
pub(super) fn quota_spent(headers: &HeaderMap) -> bool {
    headers
        .get("x-ratelimit-remaining")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "0")
}

/// Whether an [`HttpError`](super::HttpError) keeps this header: the hints, `x-should-retry`
/// and the rate-limit headers (their resets are for people to read, never used as hints).
pub(super) fn is_kept(name: &HeaderName) -> bool {
    let name = name.as_str();
    matches!(name, "retry-after" | "retry-after-ms" | "x-should-retry")
        || name.starts_with("x-ratelimit-")
        || name.starts_with("anthropic-ratelimit-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

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
    fn a_date_in_the_past_is_no_hint() {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers, SystemTime::now()), None);
    }

    #[test]
    fn negative_or_nan_milliseconds_are_ignored() {
        assert_eq!(parse_millis(b"-5"), None);
        assert_eq!(parse_millis(b"NaN"), None);
        assert_eq!(parse_millis(b"250.5"), Some(Duration::from_micros(250_500)));
    }
}
