//! What a provider's answer says of its key's limits: OpenAI's and Azure's
//! `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (the reset a duration such as
//! `6m0s`), Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-*`
//! (the reset an RFC 3339 instant); and what a request costs in tokens, read from its body
//! before it is sent. Every parser takes any bytes; what is not a valid value is ignored.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderMap;

use crate::pace::{RateLeft, RateSaid};

/// What `headers` say of the key's limits, at `now`; `None` where they say nothing (the
/// common case costs two header lookups).
///
/// ```
/// use http::{HeaderMap, HeaderValue};
/// use retry_runtime::http::rate_limits;
/// use std::time::{Duration, SystemTime};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-ratelimit-limit-requests", HeaderValue::from_static("60"));
/// headers.insert("x-ratelimit-remaining-requests", HeaderValue::from_static("59"));
/// headers.insert("x-ratelimit-reset-requests", HeaderValue::from_static("1s"));
/// headers.insert("x-ratelimit-remaining-tokens", HeaderValue::from_static("149984"));
/// headers.insert("x-ratelimit-reset-tokens", HeaderValue::from_static("6m0s"));
/// let said = rate_limits(&headers, SystemTime::now()).unwrap();
/// assert_eq!(said.requests.unwrap().rate_per_second(), Some(1.0));
/// assert_eq!(said.tokens.unwrap().reset, Some(Duration::from_secs(360)));
/// assert_eq!(rate_limits(&HeaderMap::new(), SystemTime::now()), None);
/// ```
pub fn rate_limits(headers: &HeaderMap, now: SystemTime) -> Option<RateSaid> {
    let openai = headers.contains_key("x-ratelimit-remaining-requests")
        || headers.contains_key("x-ratelimit-remaining-tokens");
    let anthropic = headers.contains_key("anthropic-ratelimit-requests-remaining")
        || headers.contains_key("anthropic-ratelimit-tokens-remaining")
        || headers.contains_key("anthropic-ratelimit-input-tokens-remaining")
        || headers.contains_key("anthropic-ratelimit-output-tokens-remaining");
    if !openai && !anthropic {
        return None;
    }
    let mut said = RateSaid::default();
    if anthropic {
        said.requests = anthropic_left(headers, "requests", now);
        said.tokens = ["tokens", "input-tokens", "output-tokens"]
            .into_iter()
            .filter_map(|kind| anthropic_left(headers, kind, now))
            .min_by_key(|left| left.remaining);
    }
    // OpenAI's form, where present, is read first.
    if let Some(requests) = openai_left(headers, "requests") {
        said.requests = Some(requests);
    }
    if let Some(tokens) = openai_left(headers, "tokens") {
        said.tokens = Some(tokens);
    }
    (!said.is_empty()).then_some(said)
}

fn number(headers: &HeaderMap, name: &str) -> Option<u64> {
    let value = headers.get(name)?.to_str().ok()?.trim();
    // Some send a float; what is left is counted whole.
    value.parse::<u64>().ok().or_else(|| {
        value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| v as u64)
    })
}

fn openai_left(headers: &HeaderMap, kind: &str) -> Option<RateLeft> {
    Some(RateLeft {
        remaining: number(headers, &format!("x-ratelimit-remaining-{kind}"))?,
        limit: number(headers, &format!("x-ratelimit-limit-{kind}")),
        reset: headers
            .get(format!("x-ratelimit-reset-{kind}"))
            .and_then(|value| go_duration(value.as_bytes())),
    })
}

fn anthropic_left(headers: &HeaderMap, kind: &str, now: SystemTime) -> Option<RateLeft> {
    let name = |field: &str| format!("anthropic-ratelimit-{kind}-{field}");
    Some(RateLeft {
        remaining: number(headers, &name("remaining"))?,
        limit: number(headers, &name("limit")),
        reset: headers
            .get(name("reset"))
            .and_then(|value| rfc3339(value.as_bytes()))
            .map(|at| at.duration_since(now).unwrap_or(Duration::ZERO)),
    })
}

/// A Go duration as OpenAI writes it: `1s`, `6m0s`, `12ms`, `1h2m3.5s`, `20µs`; a bare
/// number is seconds.
fn go_duration(text: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(text).ok()?.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let mut total = 0.0_f64;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|at| *at > 0)?;
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit] {
            "h" => 3_600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit..];
    }
    (total.is_finite() && total < 1e12).then(|| Duration::from_secs_f64(total))
}

/// An RFC 3339 instant: `2026-12-05T04:10:31Z`, with a fraction (`.250`) or an offset
/// (`+01:00`).
fn rfc3339(text: &[u8]) -> Option<SystemTime> {
    let text = std::str::from_utf8(text).ok()?.trim();
    let field = |from: usize, to: usize| text.get(from..to)?.parse::<i64>().ok();
    let (year, month, day) = (field(0, 4)?, field(5, 7)?, field(8, 10)?);
    let (hour, minute, second) = (field(11, 13)?, field(14, 16)?, field(17, 19)?);
    let valid = text.get(4..5) == Some("-")
        && text.get(7..8) == Some("-")
        && matches!(text.get(10..11), Some("T" | "t" | " "))
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !valid {
        return None;
    }
    let mut rest = text.get(19..)?;
    let mut nanos = 0_u64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        let kept = &fraction[..digits.min(9)];
        nanos = kept.parse::<u64>().ok()? * 10_u64.pow(9 - kept.len() as u32);
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.get(..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hours * 3_600 + minutes * 60)
        }
    };
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second - offset;
    let seconds = u64::try_from(seconds).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(seconds, u32::try_from(nanos).ok()?))
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let of_era = year - era * 400;
    let month = (month + 9) % 12;
    let of_year = (153 * month + 2) / 5 + day - 1;
    let of_era_day = of_era * 365 + of_era / 4 - of_era / 100 + of_year;
    era * 146_097 + of_era_day - 719_468
}

/// What a request costs in tokens, from its OpenAI or Anthropic JSON `body`, before it is
/// sent: its output cap (`max_tokens`, `max_completion_tokens` or `max_output_tokens`) and its
/// prompt's text (`messages`, `input`, `prompt`, `system`) at four bytes a token. `None` where
/// the body is no such request.
///
/// ```
/// use retry_runtime::http::tokens_of;
///
/// let body = br#"{"model":"gpt","max_tokens":500,"messages":[{"role":"user","content":"What is 2 + 2?"}]}"#;
/// assert_eq!(tokens_of(body), Some(504));
/// assert_eq!(tokens_of(b"not json"), None);
/// ```
pub fn tokens_of(body: &[u8]) -> Option<u64> {
    let request: serde_json::Value = serde_json::from_slice(body).ok()?;
    let request = request.as_object()?;
    let cap = ["max_tokens", "max_completion_tokens", "max_output_tokens"]
        .into_iter()
        .find_map(|name| request.get(name).and_then(serde_json::Value::as_u64));
    let mut prompt = 0_usize;
    let mut any = false;
    for name in ["messages", "input", "prompt", "system"] {
        if let Some(value) = request.get(name) {
            any = true;
            prompt += text_length(value);
        }
    }
    if cap.is_none() && !any {
        return None;
    }
    let prompt = u64::try_from(prompt.div_ceil(4)).unwrap_or(u64::MAX);
    Some(cap.unwrap_or(0).saturating_add(prompt))
}

/// The bytes of text in a prompt's value: a string, the `content` or `text` of its parts.
fn text_length(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(text) => text.len(),
        serde_json::Value::Array(parts) => parts.iter().map(text_length).sum(),
        serde_json::Value::Object(part) => ["content", "text"]
            .into_iter()
            .filter_map(|name| part.get(name))
            .map(text_length)
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let ms = Duration::from_millis;
        assert_eq!(go_duration(b"1s"), Some(ms(1_000)));
        assert_eq!(go_duration(b"6m0s"), Some(ms(360_000)));
        assert_eq!(go_duration(b"12ms"), Some(ms(12)));
        assert_eq!(go_duration(b"0.5s"), Some(ms(500)));
        assert_eq!(go_duration(b"1h2m3.5s"), Some(ms(3_723_500)));
        assert_eq!(go_duration(b"20\xc2\xb5s"), Some(Duration::from_micros(20)));
        assert_eq!(go_duration(b"2"), Some(ms(2_000)));
        assert_eq!(go_duration(b"soon"), None);
        assert_eq!(go_duration(b"5x"), None);
        assert_eq!(go_duration(b""), None);
        assert_eq!(go_duration(b"\xff"), None);
    }

    #[test]
    fn rfc3339_instants() {
        let at = |secs: u64, nanos: u32| Some(UNIX_EPOCH + Duration::new(secs, nanos));
        assert_eq!(rfc3339(b"1970-01-01T00:00:00Z"), at(0, 0));
        assert_eq!(rfc3339(b"2026-12-05T04:10:31Z"), at(1_796_443_831, 0));
        assert_eq!(
            rfc3339(b"2026-12-05T04:10:31.25Z"),
            at(1_796_443_831, 250_000_000)
        );
        assert_eq!(rfc3339(b"2026-12-05T05:10:31+01:00"), at(1_796_443_831, 0));
        assert_eq!(rfc3339(b"2026-13-05T04:10:31Z"), None);
        assert_eq!(rfc3339(b"yesterday"), None);
        assert_eq!(rfc3339(b"2026-12-05T04:10:31"), None);
    }

    #[test]
    fn anthropic_form_is_relative_to_now_and_a_past_reset_is_zero() {
        let now = UNIX_EPOCH + Duration::from_secs(1_796_443_830);
        let mut headers = HeaderMap::new();
        let mut put = |name: &'static str, value: &'static str| {
            headers.insert(name, http::HeaderValue::from_static(value));
        };
        put("anthropic-ratelimit-requests-limit", "50");
        put("anthropic-ratelimit-requests-remaining", "49");
        put(
            "anthropic-ratelimit-requests-reset",
            "2026-12-05T04:10:31.200Z",
        );
        put("anthropic-ratelimit-input-tokens-remaining", "900");
        put("anthropic-ratelimit-output-tokens-remaining", "300");
        put(
            "anthropic-ratelimit-output-tokens-reset",
            "2020-01-01T00:00:00Z",
        );
        let said = rate_limits(&headers, now).unwrap();
        let requests = said.requests.unwrap();
        assert_eq!(requests.reset, Some(Duration::from_millis(1_200)));
        assert_eq!((requests.limit, requests.remaining), (Some(50), 49));
        // The tightest of the token limits, its reset past: zero.
        let tokens = said.tokens.unwrap();
        assert_eq!(
            (tokens.remaining, tokens.reset),
            (300, Some(Duration::ZERO))
        );
    }

    #[test]
    fn garbage_is_ignored() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-ratelimit-remaining-requests",
            http::HeaderValue::from_static("many"),
        );
        headers.insert(
            "x-ratelimit-limit-tokens",
            http::HeaderValue::from_static("10"),
        );
        assert_eq!(rate_limits(&headers, SystemTime::now()), None);
    }

    #[test]
    fn tokens_of_each_form() {
        let anthropic = br#"{"max_tokens":100,"system":[{"type":"text","text":"12345678"}],"messages":[{"role":"user","content":[{"type":"text","text":"abcd"}]}]}"#;
        assert_eq!(tokens_of(anthropic), Some(103));
        let responses = br#"{"input":"abcdefgh","max_output_tokens":50}"#;
        assert_eq!(tokens_of(responses), Some(52));
        assert_eq!(tokens_of(br#"{"max_completion_tokens":7}"#), Some(7));
        assert_eq!(tokens_of(br#"{"model":"x"}"#), None);
        assert_eq!(tokens_of(b"[1,2]"), None);
    }
}
