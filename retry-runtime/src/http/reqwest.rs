//! `reqwest`: [`ResponseExt::check_status`], which keeps what a failed response said, and the
//! class of a `reqwest::Error` (feature `reqwest`).

use std::error::Error as _;
use std::future::Future;

use super::error::SNIPPET_LIMIT;
use super::{HttpError, classify_status};
use crate::class::{Class, Classify};

/// Turn a failed `reqwest::Response` into an [`HttpError`] that keeps the status, the hint
/// headers and a bounded snippet of the body.
///
/// Use it where `error_for_status()` would go: that drops the headers, so a 429 that asks
/// for 7 s would be retried after 250 ms.
///
/// ```no_run
/// use retry_runtime::http::{HttpError, ResponseExt};
/// use retry_runtime::{retry, Class, Classify};
///
/// #[derive(Debug, thiserror::Error)]
/// enum ModelError {
///     #[error(transparent)]
///     Http(#[from] HttpError),
///     #[error(transparent)]
///     Request(#[from] reqwest::Error),
/// }
///
/// impl Classify for ModelError {
///     fn classify(&self) -> Class {
///         match self {
///             ModelError::Http(error) => error.classify(),
///             ModelError::Request(error) => error.classify(),
///         }
///     }
/// }
///
/// #[retry(policy = "availability", attempts = 4, base_ms = 250, budget = "turn")]
/// async fn complete(http: &reqwest::Client, url: &str, prompt: &str) -> Result<String, ModelError> {
///     Ok(http.post(url).body(prompt.to_owned()).send().await?.check_status().await?.text().await?)
/// }
/// ```
pub trait ResponseExt: Sized + sealed::Sealed {
    /// The response itself if its status is not an error (4xx or 5xx), else an [`HttpError`]
    /// made from it, reading at most 4 KiB of its body (never the whole body).
    fn check_status(self) -> impl Future<Output = Result<Self, HttpError>> + Send;
}

impl ResponseExt for reqwest::Response {
    async fn check_status(mut self) -> Result<Self, HttpError> {
        let status = self.status();
        if !status.is_client_error() && !status.is_server_error() {
            return Ok(self);
        }
        let headers = std::mem::take(self.headers_mut());
        let url = self.url().as_str().to_owned();
        let mut snippet = Vec::new();
        // A body cut off here still leaves the status and headers to classify by.
        while snippet.len() < SNIPPET_LIMIT
            && let Ok(Some(chunk)) = self.chunk().await
        {
            snippet.extend_from_slice(&chunk);
        }
        Err(HttpError::new(status, &headers, &snippet).with_url(&url))
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for reqwest::Response {}
}

/// `reqwest` errors by what failed:
///
/// - a timeout is `Timeout`;
/// - a status (from `error_for_status`, which drops the headers: prefer
///   [`ResponseExt::check_status`]) is classified by [`classify_status`];
/// - a body that does not decode as JSON (`serde_json` is its cause) is `Definitive`: a
///   malformed frame is a deterministic protocol error, and a new try gets the same bytes;
/// - any other decode error is a body cut off mid-read (its cause is the connection), so
///   `Transport`, as are connect, request and body errors: no answer was read in full;
/// - a request that cannot be built or redirected is `Definitive`.
///
/// `InvalidOutput` is left for the caller's own content checks.
impl Classify for reqwest::Error {
    fn classify(&self) -> Class {
        if self.is_timeout() {
            Class::Timeout
        } else if let Some(status) = self.status() {
            classify_status(status)
        } else if self.is_builder()
            || self.is_redirect()
            || (self.is_decode() && caused_by_json(self))
        {
            Class::Definitive
        } else {
            Class::Transport
        }
    }
}

fn caused_by_json(error: &reqwest::Error) -> bool {
    let mut cause = error.source();
    while let Some(current) = cause {
        if current.is::<serde_json::Error>() {
            return true;
        }
        cause = current.source();
    }
    false
}
