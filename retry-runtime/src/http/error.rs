//! [`HttpError`]: a failed response, kept with what the table reads (status, hint headers and
//! the provider's error type and code) and a bounded snippet of its body.

use std::fmt;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::google::{self, Details};
use super::{BodySays, HintSource, Rule, decide, headers};
use crate::class::{Class, Classify};

/// The most of an error body an [`HttpError`] keeps.
pub(super) const SNIPPET_LIMIT: usize = 4 * 1024;

/// Error codes and types that mean a billing or hard-limit refusal: no wait clears them.
const QUOTA_REFUSALS: [&str; 3] = [
    "insufficient_quota",
    "billing_hard_limit_reached",
    "billing_not_active",
];

/// A response whose status is not a success, with what it says about trying again.
///
/// It keeps the status, the headers the table reads (`Retry-After`, `retry-after-ms`,
/// `x-should-retry`, `x-ratelimit-*` and `anthropic-ratelimit-*`), a snippet of the body (at
/// most 4 KiB, lossy UTF-8), the provider's error type and code when the body is a JSON error
/// object, and the URL's scheme, host and path (never its query or userinfo). It classifies by
/// [the one table](crate::http); its `Display` and `Debug` never print the body.
///
/// Make one with [`ResponseExt::check_status`](crate::http::ResponseExt::check_status) from a
/// `reqwest::Response`, or with [`HttpError::new`] from any client's parts.
///
/// ```
/// use http::{HeaderMap, StatusCode};
/// use retry_runtime::http::HttpError;
/// use retry_runtime::{Class, Classify};
///
/// let body = br#"{"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 128000 tokens."}}"#;
/// let error = HttpError::new(StatusCode::BAD_REQUEST, &HeaderMap::new(), body)
///     .with_url("https://api.example.com/v1/chat/completions?key=secret");
/// assert_eq!(error.classify(), Class::Definitive);
/// assert!(error.is_context_overflow());
/// assert_eq!(error.error_code(), Some("context_length_exceeded"));
/// assert_eq!(
///     error.to_string(),
///     "HTTP 400 Bad Request from https://api.example.com/v1/chat/completions (code context_length_exceeded)",
/// );
/// ```
#[derive(Clone)]
pub struct HttpError(Box<Response>);

/// What an [`HttpError`] keeps, boxed: made only when a call fails, and it keeps the caller's
/// `Result` (and so the retried future) one word wide on the error side.
#[derive(Clone)]
struct Response {
    status: StatusCode,
    headers: HeaderMap,
    retry_after: Option<Duration>,
    body: String,
    error_type: Option<String>,
    error_code: Option<String>,
    says: BodySays,
    hint_source: Option<HintSource>,
    /// The quota a Google `QuotaFailure` or `ErrorInfo` named.
    quota_id: Option<String>,
    url: Option<String>,
    /// An error event inside a stream whose head was a success.
    in_stream: bool,
}

impl HttpError {
    /// A failed response from its status, its headers and (the start of) its body. Only the
    /// headers the table reads are kept, and at most 4 KiB of the body. A `Retry-After` date
    /// is read against the present moment: make the error when the response arrives.
    pub fn new(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> HttpError {
        let body = &body[..body.len().min(SNIPPET_LIMIT)];
        let body = String::from_utf8_lossy(body).into_owned();
        let provider = ProviderError::read(&body, BodyPlace::Response);
        let says = provider.says(status);
        // A header's hint first; Google's `RetryInfo` where there is none.
        let (retry_after, hint_source) = match headers::retry_after(headers, SystemTime::now()) {
            Some(hint) => (Some(hint), Some(headers::hint_source(headers))),
            None => provider.retry_info(),
        };
        let kept = HttpError::keep(status, headers, retry_after, body, provider, says, false);
        kept.with_hint_source(hint_source)
    }

    fn with_hint_source(mut self, source: Option<HintSource>) -> HttpError {
        self.0.hint_source = source;
        self
    }

    /// An error event inside a stream whose head (`status`, `headers`) was a success, from
    /// the event's data: Anthropic's `{"type": "error", "error": {...}}`, OpenAI's
    /// `{"error": {...}}` or flat `{"type": "error", "code": ...}`, or Responses'
    /// `response.failed`, whose error is under `response.error`.
    ///
    /// It keeps the head's status and headers to read, but is classified by the event alone
    /// ([the table's "inside a stream" part](crate::http#inside-a-stream)): the head's
    /// `x-should-retry` and `Retry-After` belonged to the success, so
    /// [`retry_after`](HttpError::retry_after) is `None`. At most 4 KiB of the data is kept.
    ///
    /// ```
    /// use http::{HeaderMap, HeaderValue, StatusCode};
    /// use retry_runtime::http::{HttpError, Rule};
    /// use retry_runtime::{Class, Classify};
    ///
    /// let mut head = HeaderMap::new();
    /// head.insert("x-should-retry", HeaderValue::from_static("false"));
    /// let event = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    /// let error = HttpError::in_stream(StatusCode::OK, &head, event).with_url("https://api.anthropic.com/v1/messages");
    /// assert_eq!(error.classify(), Class::Unavailable { retry_after: None });
    /// assert_eq!(error.rule(), Rule::Overloaded);
    /// assert!(error.is_in_stream());
    /// assert_eq!(error.headers()["x-should-retry"], "false");
    /// assert_eq!(
    ///     error.to_string(),
    ///     "HTTP 200 OK from https://api.anthropic.com/v1/messages: error event inside the stream (overloaded_error)",
    /// );
    /// ```
    pub fn in_stream(status: StatusCode, headers: &HeaderMap, event_data: &[u8]) -> HttpError {
        // Read whole (an event is capped by its decoder), so a long message does not cut
        // the JSON that says the error's type; keep a snippet.
        let provider = ProviderError::read(&String::from_utf8_lossy(event_data), BodyPlace::Stream);
        let says = provider.says_in_stream();
        let body = &event_data[..event_data.len().min(SNIPPET_LIMIT)];
        let body = String::from_utf8_lossy(body).into_owned();
        // The event's own hint: Google's `RetryInfo`, never the head's headers.
        let (retry_after, hint_source) = provider.retry_info();
        let kept = HttpError::keep(status, headers, retry_after, body, provider, says, true);
        kept.with_hint_source(hint_source)
    }

    fn keep(
        status: StatusCode,
        headers: &HeaderMap,
        retry_after: Option<Duration>,
        body: String,
        provider: ProviderError,
        says: BodySays,
        in_stream: bool,
    ) -> HttpError {
        HttpError(Box::new(Response {
            status,
            headers: headers
                .iter()
                .filter(|(name, _)| headers::is_kept(name))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
            retry_after,
            body,
            error_type: provider.error_type,
            error_code: provider.code,
            says,
            hint_source: None,
            quota_id: provider.google.quota_id,
            url: None,
            in_stream,
        }))
    }

    /// This error with the URL it came from, kept as scheme, host and path: a query string
    /// (which may carry a key) and userinfo are dropped here, so nothing prints them.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use retry_runtime::http::HttpError;
    /// let error = HttpError::new(StatusCode::NOT_FOUND, &HeaderMap::new(), b"")
    ///     .with_url("https://user:pass@example.com:8443/v1/models?key=AIzaSecret#top");
    /// assert_eq!(error.url(), Some("https://example.com:8443/v1/models"));
    /// ```
    pub fn with_url(mut self, url: &str) -> HttpError {
        self.0.url = Some(without_secrets(url));
        self
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// The headers the table reads, as the server sent them.
    pub fn headers(&self) -> &HeaderMap {
        &self.0.headers
    }

    /// The wait the server asked for, read when the response arrived; `None` if it gave none
    /// (or zero), and for an error inside a stream, whose head's hint was not about it.
    pub fn retry_after(&self) -> Option<Duration> {
        self.0.retry_after
    }

    /// Where [`retry_after`](HttpError::retry_after)'s hint came from: `retry-after-ms`,
    /// `Retry-After`, or Google's `RetryInfo.retryDelay` in the body; `None` with no hint.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use retry_runtime::http::{HintSource, HttpError};
    /// use std::time::Duration;
    ///
    /// let body = br#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
    ///     {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36.5s"}]}}"#;
    /// let error = HttpError::new(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), body);
    /// assert_eq!(error.retry_after(), Some(Duration::from_millis(36_500)));
    /// assert_eq!(error.hint_source(), Some(HintSource::RetryInfo));
    /// ```
    pub fn hint_source(&self) -> Option<HintSource> {
        self.0.hint_source
    }

    /// The quota a Google error names (a `QuotaFailure` violation's `quotaId`, or an
    /// `ErrorInfo`'s `quota_limit`), for people to read: a per-day one, if any is.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use retry_runtime::http::HttpError;
    /// use retry_runtime::{Class, Classify};
    ///
    /// let body = br#"[{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
    ///     {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
    ///         {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
    ///     {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"}]}}]"#;
    /// let error = HttpError::new(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), body);
    /// assert_eq!(error.quota_id(), Some("GenerateRequestsPerDayPerProjectPerModel-FreeTier"));
    /// // Spent for the day: no wait clears it, whatever the retryDelay says.
    /// assert_eq!(error.classify(), Class::QuotaExhausted);
    /// ```
    pub fn quota_id(&self) -> Option<&str> {
        self.0.quota_id.as_deref()
    }

    /// The start of the body (at most 4 KiB, lossy UTF-8). Neither `Display` nor `Debug`
    /// prints it: it may echo what the request carried.
    pub fn body(&self) -> &str {
        &self.0.body
    }

    /// The provider's error type, when the body is a JSON error object
    /// (`{"error": {"type": ...}}`): `overloaded_error`, `invalid_request_error`, ...
    pub fn error_type(&self) -> Option<&str> {
        self.0.error_type.as_deref()
    }

    /// The provider's error code, when the body is a JSON error object
    /// (`{"error": {"code": ...}}`): `context_length_exceeded`, `insufficient_quota`, ...
    pub fn error_code(&self) -> Option<&str> {
        self.0.error_code.as_deref()
    }

    /// The URL the response came from, without query or userinfo, if it was given.
    pub fn url(&self) -> Option<&str> {
        self.0.url.as_deref()
    }

    /// Whether the prompt does not fit the model's context: a 400 or 413 whose body (or an
    /// error event inside a stream) is OpenAI's `context_length_exceeded` or Anthropic's
    /// "prompt is too long". It is an answer
    /// (`Definitive`); a harness sends it to its own recovery (trim, summarise) rather than
    /// parse text.
    pub fn is_context_overflow(&self) -> bool {
        self.0.says == BodySays::ContextOverflow
    }

    /// Whether this is an error event inside a stream whose head was a success (see
    /// [`HttpError::in_stream`]), rather than a failed response.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use retry_runtime::http::HttpError;
    /// assert!(!HttpError::new(StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"").is_in_stream());
    /// assert!(HttpError::in_stream(StatusCode::OK, &HeaderMap::new(), b"{}").is_in_stream());
    /// ```
    pub fn is_in_stream(&self) -> bool {
        self.0.in_stream
    }

    /// Which row of [the one table](crate::http) decided this error's class: `x-should-retry`,
    /// the provider's error type or code, `x-ratelimit-remaining`, or the status.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use retry_runtime::http::{HttpError, Rule};
    ///
    /// let overloaded = br#"{"type": "error", "error": {"type": "overloaded_error"}}"#;
    /// let error = HttpError::new(StatusCode::INTERNAL_SERVER_ERROR, &HeaderMap::new(), overloaded);
    /// assert_eq!(error.rule(), Rule::Overloaded);
    /// ```
    pub fn rule(&self) -> Rule {
        self.decide().1
    }

    fn decide(&self) -> (Class, Rule) {
        if self.0.in_stream {
            // The head's headers said nothing about this event: only its body is read.
            return decide(
                self.0.status.as_u16(),
                None,
                self.0.retry_after,
                false,
                self.0.says,
            );
        }
        decide(
            self.0.status.as_u16(),
            headers::should_retry(&self.0.headers),
            self.0.retry_after,
            headers::quota_spent(&self.0.headers),
            self.0.says,
        )
    }
}

/// By [the one table](crate::http): `x-should-retry`, then the body's error type or code, then
/// the status.
impl Classify for HttpError {
    fn classify(&self) -> Class {
        self.decide().0
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.0.status.as_u16())?;
        if let Some(reason) = self.0.status.canonical_reason() {
            write!(f, " {reason}")?;
        }
        if let Some(url) = &self.0.url {
            write!(f, " from {url}")?;
        }
        if self.0.says == BodySays::JsonRpcError {
            f.write_str(": JSON-RPC error response inside the stream")?;
        } else if self.0.in_stream {
            f.write_str(": error event inside the stream")?;
        }
        match (&self.0.error_type, &self.0.error_code) {
            (Some(kind), Some(code)) if kind != code => write!(f, " ({kind}, code {code})"),
            (Some(kind), _) => write!(f, " ({kind})"),
            (None, Some(code)) => write!(f, " (code {code})"),
            (None, None) => Ok(()),
        }
    }
}

impl fmt::Debug for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpError")
            .field("status", &self.0.status.as_u16())
            .field("url", &self.0.url)
            .field("error_type", &self.0.error_type)
            .field("error_code", &self.0.error_code)
            .field("retry_after", &self.0.retry_after)
            .field("hint_source", &self.0.hint_source)
            .field("quota_id", &self.0.quota_id)
            .field("class", &self.classify())
            .field("in_stream", &self.0.in_stream)
            .field("body_bytes", &self.0.body.len())
            .finish_non_exhaustive()
    }
}

impl std::error::Error for HttpError {}

/// What a JSON error body says: OpenAI's `{"error": {"type", "code", "message"}}`,
/// Anthropic's `{"type": "error", "error": {"type", "message"}}`, Google's `{"error": {"code",
/// "status", "message", "details"}}` (alone or in a one-element array), or a flat object.
#[derive(Debug, Default)]
struct ProviderError {
    error_type: Option<String>,
    code: Option<String>,
    message: Option<String>,
    /// Google's canonical status: `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, ...
    status: Option<String>,
    google: Details,
    /// An event that is a JSON-RPC 2.0 error response (an MCP server's answer).
    jsonrpc: bool,
}

/// Where a body came from: a stream's event may also be Responses' `response.failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyPlace {
    Response,
    Stream,
}

impl ProviderError {
    fn read(body: &str, place: BodyPlace) -> ProviderError {
        let start = body.trim_start();
        if !start.starts_with('{') && !start.starts_with('[') {
            return ProviderError::default();
        }
        // Some Google endpoints wrap the envelope in a one-element array.
        let top = match serde_json::from_str::<Value>(body) {
            Ok(Value::Object(top)) => top,
            Ok(Value::Array(mut items)) if !items.is_empty() => match items.swap_remove(0) {
                Value::Object(top) => top,
                _ => return ProviderError::default(),
            },
            _ => return ProviderError::default(),
        };
        let failed_response = match (place, top.get("response")) {
            (BodyPlace::Stream, Some(Value::Object(response))) => match response.get("error") {
                Some(Value::Object(inner)) => Some(inner),
                _ => None,
            },
            _ => None,
        };
        let object = match top.get("error") {
            Some(Value::Object(inner)) => inner,
            _ => failed_response.unwrap_or(&top),
        };
        let text = |key: &str| match object.get(key) {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Number(number)) => Some(number.to_string()),
            _ => None,
        };
        ProviderError {
            // Anthropic's envelope says `"type": "error"`, which names no kind, as a
            // Responses event's own type does not.
            // Google's envelope names its kind in `status` (`RESOURCE_EXHAUSTED`).
            error_type: text("type")
                .filter(|kind| kind != "error" && kind != "response.failed")
                .or_else(|| text("status")),
            code: text("code"),
            message: text("message"),
            status: text("status"),
            google: google::read(object),
            jsonrpc: place == BodyPlace::Stream && is_jsonrpc_error(&top),
        }
    }

    /// Google's `RetryInfo` hint, and that it is one.
    fn retry_info(&self) -> (Option<Duration>, Option<HintSource>) {
        match self.google.retry_delay.filter(|delay| !delay.is_zero()) {
            Some(delay) => (Some(delay), Some(HintSource::RetryInfo)),
            None => (None, None),
        }
    }

    /// Google's canonical status is one of `statuses`.
    fn status_is(&self, statuses: &[&str]) -> bool {
        self.status
            .as_deref()
            .is_some_and(|status| statuses.contains(&status))
    }

    fn says(&self, status: StatusCode) -> BodySays {
        let is = |marker: &str| {
            self.error_type.as_deref() == Some(marker) || self.code.as_deref() == Some(marker)
        };
        if is("overloaded_error") {
            BodySays::Overloaded
        } else if QUOTA_REFUSALS.iter().any(|marker| is(marker)) {
            BodySays::QuotaRefused
        } else if self.google.per_day {
            BodySays::DailyQuota
        } else if matches!(status.as_u16(), 400 | 413)
            && (is("context_length_exceeded") || self.says_prompt_too_long())
        {
            BodySays::ContextOverflow
        } else {
            BodySays::Nothing
        }
    }

    /// What an error event inside a stream says: every event says something, so the table
    /// never falls through to the status of the stream's successful head.
    fn says_in_stream(&self) -> BodySays {
        let is = |markers: &[&str]| {
            markers.iter().any(|marker| {
                self.error_type.as_deref() == Some(*marker) || self.code.as_deref() == Some(*marker)
            })
        };
        if self.jsonrpc {
            BodySays::JsonRpcError
        } else if is(&["overloaded_error"]) || self.status_is(&["UNAVAILABLE"]) {
            BodySays::Overloaded
        } else if is(&QUOTA_REFUSALS) || is(&["enforced_spend_limit_reached"]) {
            BodySays::QuotaRefused
        } else if self.google.per_day {
            BodySays::DailyQuota
        } else if is(&["context_length_exceeded"]) || self.says_prompt_too_long() {
            BodySays::ContextOverflow
        } else if is(&["rate_limit_error", "rate_limit_exceeded"])
            || self.status_is(&["RESOURCE_EXHAUSTED"])
        {
            BodySays::StreamRateLimited
        } else if is(&["api_error", "server_error"]) || self.status_is(&["INTERNAL"]) {
            BodySays::StreamServerError
        } else if is(&["invalid_request_error"])
            || self.status_is(&[
                "INVALID_ARGUMENT",
                "FAILED_PRECONDITION",
                "PERMISSION_DENIED",
                "NOT_FOUND",
            ])
        {
            BodySays::StreamInvalidRequest
        } else {
            BodySays::StreamUnknown
        }
    }

    /// Anthropic gives no code for a context overflow, only this message: the one place the
    /// table reads text, kept to the message's start.
    fn says_prompt_too_long(&self) -> bool {
        self.message.as_deref().is_some_and(|message| {
            message
                .trim_start()
                .get(..18)
                .is_some_and(|start| start.eq_ignore_ascii_case("prompt is too long"))
        })
    }
}

/// Whether `top` is a JSON-RPC 2.0 error response: `"jsonrpc": "2.0"`, an `id` (a string, a
/// number or `null`), an `error` object, and neither `result` nor `method`. The version is
/// required, so a provider's error event that carries an `id` of its own (OpenRouter's
/// `{"id": "gen-...", "error": {...}}` mid-stream) stays the provider's error.
fn is_jsonrpc_error(top: &serde_json::Map<String, Value>) -> bool {
    matches!(top.get("jsonrpc"), Some(Value::String(version)) if version == "2.0")
        && matches!(
            top.get("id"),
            Some(Value::String(_) | Value::Number(_) | Value::Null)
        )
        && matches!(top.get("error"), Some(Value::Object(_)))
        && !top.contains_key("result")
        && !top.contains_key("method")
}

/// `url` as scheme, host and path: no userinfo, query or fragment.
fn without_secrets(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn error(status: u16, body: &str) -> HttpError {
        HttpError::new(
            StatusCode::from_u16(status).unwrap(),
            &HeaderMap::new(),
            body.as_bytes(),
        )
    }

    #[test]
    fn anthropic_prompt_too_long_is_a_context_overflow() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens > 200000 maximum"}}"#;
        let overflow = error(400, body);
        assert!(overflow.is_context_overflow());
        assert_eq!(overflow.error_type(), Some("invalid_request_error"));
    }

    #[test]
    fn the_phrase_elsewhere_in_a_message_is_not_a_context_overflow() {
        let body = r#"{"error":{"message":"your prompt is too long, maybe"}}"#;
        assert!(!error(400, body).is_context_overflow());
        let on_a_500 = r#"{"error":{"code":"context_length_exceeded"}}"#;
        assert!(!error(500, on_a_500).is_context_overflow());
    }

    #[test]
    fn an_http_error_is_one_word_so_a_result_carrying_it_stays_small() {
        assert_eq!(size_of::<HttpError>(), size_of::<usize>());
    }

    #[test]
    fn the_body_is_kept_to_four_kib() {
        let long = "x".repeat(10_000);
        assert_eq!(error(500, &long).body().len(), SNIPPET_LIMIT);
    }

    #[test]
    fn a_url_keeps_scheme_host_and_path_only() {
        assert_eq!(
            without_secrets("http://u:p@h:1/a/b?key=s#f"),
            "http://h:1/a/b"
        );
        assert_eq!(without_secrets("http://h?key=s"), "http://h");
    }

    fn in_stream(event: &str) -> HttpError {
        HttpError::in_stream(StatusCode::OK, &HeaderMap::new(), event.as_bytes())
    }

    fn anthropic(kind: &str) -> String {
        format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"m"}}}}"#)
    }

    fn openai(code: &str) -> String {
        format!(r#"{{"error":{{"message":"m","type":"t","code":"{code}"}}}}"#)
    }

    #[test]
    fn an_overloaded_error_in_a_stream_is_unavailable_with_no_hint() {
        let error = in_stream(&anthropic("overloaded_error"));
        assert_eq!(error.classify(), Class::Unavailable { retry_after: None });
        assert_eq!(error.rule(), Rule::Overloaded);
    }

    #[test]
    fn a_rate_limit_in_a_stream_is_rate_limited_with_no_hint() {
        for error in [
            in_stream(&anthropic("rate_limit_error")),
            in_stream(&openai("rate_limit_exceeded")),
        ] {
            assert_eq!(error.classify(), Class::RateLimited { retry_after: None });
            assert_eq!(error.rule(), Rule::StreamRateLimited);
        }
    }

    #[test]
    fn a_quota_refusal_in_a_stream_is_quota_exhausted() {
        for event in [
            openai("insufficient_quota"),
            openai("billing_hard_limit_reached"),
        ] {
            let error = in_stream(&event);
            assert_eq!(error.classify(), Class::QuotaExhausted);
            assert_eq!(error.rule(), Rule::QuotaRefused);
        }
    }

    #[test]
    fn anthropics_spend_limit_in_a_stream_is_quota_exhausted() {
        let error = in_stream(&anthropic("enforced_spend_limit_reached"));
        assert_eq!(error.classify(), Class::QuotaExhausted);
        assert_eq!(error.rule(), Rule::QuotaRefused);
    }

    #[test]
    fn an_api_or_server_error_in_a_stream_is_a_server_error() {
        for error in [
            in_stream(&anthropic("api_error")),
            in_stream(&openai("server_error")),
        ] {
            assert_eq!(error.classify(), Class::ServerError);
            assert_eq!(error.rule(), Rule::StreamServerError);
        }
    }

    #[test]
    fn an_invalid_request_in_a_stream_is_definitive() {
        let error = in_stream(&anthropic("invalid_request_error"));
        assert_eq!(error.classify(), Class::Definitive);
        assert_eq!(error.rule(), Rule::StreamInvalidRequest);
        assert!(!error.is_context_overflow());
    }

    #[test]
    fn a_context_overflow_in_a_stream_is_definitive_and_says_so() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens > 200000 maximum"}}"#;
        for error in [
            in_stream(anthropic),
            in_stream(&openai("context_length_exceeded")),
        ] {
            assert_eq!(error.classify(), Class::Definitive);
            assert_eq!(error.rule(), Rule::ContextOverflow);
            assert!(error.is_context_overflow());
        }
    }

    #[test]
    fn an_unknown_or_missing_error_type_in_a_stream_is_a_server_error() {
        for event in [
            anthropic("brand_new_error"),
            r#"{"type":"error"}"#.into(),
            "not json".into(),
            String::new(),
        ] {
            let error = in_stream(&event);
            assert_eq!(error.classify(), Class::ServerError, "{event}");
            assert_eq!(error.rule(), Rule::StreamUnknown, "{event}");
        }
    }

    #[test]
    fn the_heads_should_retry_and_retry_after_do_not_apply_inside_the_stream() {
        let mut head = HeaderMap::new();
        head.insert("x-should-retry", http::HeaderValue::from_static("true"));
        head.insert("retry-after", http::HeaderValue::from_static("30"));
        let invalid = HttpError::in_stream(
            StatusCode::OK,
            &head,
            anthropic("invalid_request_error").as_bytes(),
        );
        assert_eq!(invalid.classify(), Class::Definitive);
        let limited = HttpError::in_stream(
            StatusCode::OK,
            &head,
            openai("rate_limit_exceeded").as_bytes(),
        );
        assert_eq!(limited.classify(), Class::RateLimited { retry_after: None });
        assert_eq!(limited.retry_after(), None);
        // Kept to read, all the same.
        assert_eq!(limited.headers()["x-should-retry"], "true");
        head.insert("x-should-retry", http::HeaderValue::from_static("false"));
        let overloaded = HttpError::in_stream(
            StatusCode::OK,
            &head,
            anthropic("overloaded_error").as_bytes(),
        );
        assert_eq!(
            overloaded.classify(),
            Class::Unavailable { retry_after: None }
        );
    }

    #[test]
    fn a_responses_failed_event_is_read_under_response_error() {
        let failed = r#"{"type":"response.failed","sequence_number":9,"response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model failed"}}}"#;
        let error = in_stream(failed);
        assert_eq!(error.error_code(), Some("server_error"));
        assert_eq!(error.error_type(), None);
        assert_eq!(error.rule(), Rule::StreamServerError);
        let limited =
            r#"{"type":"response.failed","response":{"error":{"code":"rate_limit_exceeded"}}}"#;
        assert_eq!(
            in_stream(limited).classify(),
            Class::RateLimited { retry_after: None }
        );
    }

    #[test]
    fn a_responses_error_event_is_read_flat() {
        let event = r#"{"type":"error","code":"insufficient_quota","message":"m","param":null,"sequence_number":2}"#;
        assert_eq!(in_stream(event).classify(), Class::QuotaExhausted);
    }

    #[test]
    fn an_error_in_a_stream_says_so_and_never_prints_its_body() {
        let event =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"secret prompt"}}"#;
        let error = in_stream(event).with_url("https://host/path?key=k");
        assert_eq!(
            error.to_string(),
            "HTTP 200 OK from https://host/path: error event inside the stream (overloaded_error)"
        );
        assert!(!format!("{error:?}").contains("secret"));
        assert!(format!("{error:?}").contains("in_stream: true"));
    }

    #[test]
    fn a_long_error_event_is_still_read_whole() {
        let message = "x".repeat(2 * SNIPPET_LIMIT);
        let event = format!(
            r#"{{"type":"error","error":{{"message":"{message}","type":"overloaded_error"}}}}"#
        );
        let error = in_stream(&event);
        assert_eq!(error.rule(), Rule::Overloaded);
        assert_eq!(error.body().len(), SNIPPET_LIMIT);
    }

    #[test]
    fn a_response_is_not_in_a_stream_and_its_table_is_unchanged() {
        let error = HttpError::new(
            StatusCode::BAD_REQUEST,
            &HeaderMap::new(),
            anthropic("rate_limit_error").as_bytes(),
        );
        assert!(!error.is_in_stream());
        assert_eq!(error.rule(), Rule::Status);
        assert_eq!(error.classify(), Class::Definitive);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn any_body_bytes_are_read_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = HttpError::new(StatusCode::BAD_REQUEST, &HeaderMap::new(), &bytes).classify();
        }

        #[test]
        fn any_event_bytes_in_a_stream_are_read_without_panicking_and_never_as_the_status(
            bytes in proptest::collection::vec(any::<u8>(), 0..256),
        ) {
            let error = HttpError::in_stream(StatusCode::OK, &HeaderMap::new(), &bytes);
            prop_assert_ne!(error.rule(), Rule::Status);
        }
    }
}
