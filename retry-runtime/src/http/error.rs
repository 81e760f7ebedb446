//! [`HttpError`]: a failed response, kept with what the table reads (status, hint headers and
//! the provider's error type and code) and a bounded snippet of its body.

use std::fmt;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::{BodySays, Rule, decide, headers};
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
    url: Option<String>,
}

impl HttpError {
    /// A failed response from its status, its headers and (the start of) its body. Only the
    /// headers the table reads are kept, and at most 4 KiB of the body. A `Retry-After` date
    /// is read against the present moment: make the error when the response arrives.
    pub fn new(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> HttpError {
        let body = &body[..body.len().min(SNIPPET_LIMIT)];
        let body = String::from_utf8_lossy(body).into_owned();
        let provider = ProviderError::read(&body);
        let says = provider.says(status);
        HttpError(Box::new(Response {
            status,
            headers: headers
                .iter()
                .filter(|(name, _)| headers::is_kept(name))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
            retry_after: headers::retry_after(headers, SystemTime::now()),
            body,
            error_type: provider.error_type,
            error_code: provider.code,
            says,
            url: None,
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
    /// (or zero).
    pub fn retry_after(&self) -> Option<Duration> {
        self.0.retry_after
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

    /// Whether the prompt does not fit the model's context: a 400 or 413 whose body is
    /// OpenAI's `context_length_exceeded` or Anthropic's "prompt is too long". It is an answer
    /// (`Definitive`); a harness sends it to its own recovery (trim, summarise) rather than
    /// parse text.
    pub fn is_context_overflow(&self) -> bool {
        self.0.says == BodySays::ContextOverflow
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
            .field("class", &self.classify())
            .field("body_bytes", &self.0.body.len())
            .finish_non_exhaustive()
    }
}

impl std::error::Error for HttpError {}

/// What a JSON error body says: OpenAI's `{"error": {"type", "code", "message"}}`,
/// Anthropic's `{"type": "error", "error": {"type", "message"}}`, or a flat object.
#[derive(Debug, Default)]
struct ProviderError {
    error_type: Option<String>,
    code: Option<String>,
    message: Option<String>,
}

impl ProviderError {
    fn read(body: &str) -> ProviderError {
        if !body.trim_start().starts_with('{') {
            return ProviderError::default();
        }
        let Ok(Value::Object(top)) = serde_json::from_str::<Value>(body) else {
            return ProviderError::default();
        };
        let object = match top.get("error") {
            Some(Value::Object(inner)) => inner,
            _ => &top,
        };
        let text = |key: &str| match object.get(key) {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Number(number)) => Some(number.to_string()),
            _ => None,
        };
        ProviderError {
            // Anthropic's envelope says `"type": "error"`, which names no kind.
            error_type: text("type").filter(|kind| kind != "error"),
            code: text("code"),
            message: text("message"),
        }
    }

    fn says(&self, status: StatusCode) -> BodySays {
        let is = |marker: &str| {
            self.error_type.as_deref() == Some(marker) || self.code.as_deref() == Some(marker)
        };
        if is("overloaded_error") {
            BodySays::Overloaded
        } else if QUOTA_REFUSALS.iter().any(|marker| is(marker)) {
            BodySays::QuotaRefused
        } else if matches!(status.as_u16(), 400 | 413)
            && (is("context_length_exceeded") || self.says_prompt_too_long())
        {
            BodySays::ContextOverflow
        } else {
            BodySays::Nothing
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn any_body_bytes_are_read_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = HttpError::new(StatusCode::BAD_REQUEST, &HeaderMap::new(), &bytes).classify();
        }
    }
}
