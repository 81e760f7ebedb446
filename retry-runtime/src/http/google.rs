//! Google's error details (`google.rpc`), as Gemini and Vertex send them in a JSON error body:
//! `RetryInfo.retryDelay`, a hint with the standing of `Retry-After`, and the quota a
//! `QuotaFailure` or an `ErrorInfo` names, which is spent for the day when it is a per-day one.
//! Read from the at most 4 KiB of body an [`HttpError`](super::HttpError) keeps; nothing here
//! reads a clock.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::class::is_per_day;

/// What a Google error object's `details` say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Details {
    /// `RetryInfo.retryDelay`.
    pub(super) retry_delay: Option<Duration>,
    /// The quota a `QuotaFailure` violation or an `ErrorInfo` names: a per-day one if any is.
    pub(super) quota_id: Option<String>,
    /// The quota named resets with the day (`...PerDay...`): no ladder outlasts it.
    pub(super) per_day: bool,
}

/// The details of a Google error object (`{"code", "status", "message", "details": [...]}`).
pub(super) fn read(error: &Map<String, Value>) -> Details {
    let mut details = Details::default();
    let Some(Value::Array(entries)) = error.get("details") else {
        return details;
    };
    for entry in entries {
        let Some(kind) = entry.get("@type").and_then(Value::as_str) else {
            continue;
        };
        let quotas: Vec<&str> = if kind.ends_with("google.rpc.RetryInfo") {
            details.retry_delay = entry
                .get("retryDelay")
                .and_then(Value::as_str)
                .and_then(parse_duration);
            Vec::new()
        } else if kind.ends_with("google.rpc.QuotaFailure") {
            let violations = entry.get("violations").and_then(Value::as_array);
            violations
                .into_iter()
                .flatten()
                .filter_map(|violation| {
                    violation
                        .get("quotaId")
                        .or_else(|| violation.get("quotaMetric"))
                        .or_else(|| violation.get("subject"))
                        .and_then(Value::as_str)
                })
                .collect()
        } else if kind.ends_with("google.rpc.ErrorInfo") {
            let metadata = entry.get("metadata");
            ["quota_limit", "quotaLimit"]
                .iter()
                .filter_map(|key| metadata.and_then(|m| m.get(*key)).and_then(Value::as_str))
                .collect()
        } else {
            Vec::new()
        };
        for quota in quotas {
            let per_day = is_per_day(quota);
            if details.quota_id.is_none() || (per_day && !details.per_day) {
                details.quota_id = Some(quota.to_owned());
            }
            details.per_day |= per_day;
        }
    }
    details
}

/// A protobuf JSON duration: seconds with up to nine fractional digits and an `s`, `"36s"` or
/// `"36.429760048s"`. A negative or malformed one is none (the tests below show each).
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let seconds = text.trim().strip_suffix('s')?;
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    let nanos = if fraction.is_empty() {
        0
    } else {
        let digits: u32 = fraction.parse().ok()?;
        digits * 10u32.pow(9 - u32::try_from(fraction.len()).ok()?)
    };
    Some(Duration::new(whole, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn details(body: &str) -> Details {
        let Value::Object(top) = serde_json::from_str::<Value>(body).unwrap() else {
            panic!("an object")
        };
        let Some(Value::Object(error)) = top.get("error") else {
            panic!("an error object")
        };
        read(error)
    }

    #[test]
    fn a_protobuf_duration_is_read_to_the_nanosecond() {
        assert_eq!(parse_duration("36s"), Some(Duration::from_secs(36)));
        assert_eq!(
            parse_duration("36.429760048s"),
            Some(Duration::new(36, 429_760_048))
        );
        assert_eq!(parse_duration("0.5s"), Some(Duration::from_millis(500)));
        for malformed in ["36", "-1s", "s", ".5s", "1.0000000001s", "1e3s", "ten s"] {
            assert_eq!(parse_duration(malformed), None, "{malformed:?}");
        }
    }

    #[test]
    fn a_per_day_quota_failure_is_per_day_and_named() {
        let read = details(
            r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[
            {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[
              {"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"20"}]},
            {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"36s"}]}}"#,
        );
        assert!(read.per_day);
        assert_eq!(
            read.quota_id.as_deref(),
            Some("GenerateRequestsPerDayPerProjectPerModel-FreeTier")
        );
        assert_eq!(read.retry_delay, Some(Duration::from_secs(36)));
    }

    #[test]
    fn a_per_minute_quota_is_not_per_day() {
        let read = details(
            r#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure",
            "violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]}]}}"#,
        );
        assert!(!read.per_day);
        assert!(read.quota_id.is_some());
    }

    #[test]
    fn an_error_info_quota_limit_names_the_quota() {
        let read = details(
            r#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
            "reason":"RATE_LIMIT_EXCEEDED","metadata":{"quota_limit":"GenerateContentInputTokensPerModelPerDay"}}]}}"#,
        );
        assert!(read.per_day);
    }

    #[test]
    fn no_details_say_nothing() {
        assert_eq!(
            details(
                r#"{"error":{"code":429,"message":"Resource exhausted. Please try again later."}}"#
            ),
            Details::default()
        );
    }
}
