//! `reqwest`: [`ResponseExt::check_status`], which keeps what a failed response said, and the
//! class of a `reqwest::Error` (feature `reqwest`).

use std::error::Error as _;
use std::future::Future;

use reqwest::ResponseBuilderExt as _;

use super::error::SNIPPET_LIMIT;
use super::{HttpError, classify_status};
use crate::class::{Class, Classify};
use crate::notice::Reached;

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
pub trait ResponseExt: Sized + sealed::SealedResponse {
    /// The response itself if its status is not an error (4xx or 5xx), else an [`HttpError`]
    /// made from it, reading at most 4 KiB of its body (never the whole body).
    fn check_status(self) -> impl Future<Output = Result<Self, HttpError>> + Send;

    /// The body as a model's event stream (feature `sse`): call it after
    /// [`check_status`](ResponseExt::check_status). Each item is an event, or the
    /// [`StreamError`](crate::http::StreamError) that ended the stream: an error event from
    /// the provider (classified by [the table](crate::http#inside-a-stream)), a body cut off,
    /// a malformed or oversized frame. A response whose status is a failure gives one error,
    /// classified by its status and headers. See [`ModelEvents`](super::ModelEvents).
    ///
    /// ```
    /// use futures_core::Stream;
    /// use retry_runtime::http::ResponseExt;
    /// use retry_runtime::{sse, Class, Classify};
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let body = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n\
    ///             event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n";
    /// let response = http::Response::builder().header("retry-after", "30").body(body).unwrap();
    /// let mut events = reqwest::Response::from(response).events();
    /// assert!(!sse::is_content(&next(&mut events).await.unwrap().unwrap()));
    /// let overloaded = next(&mut events).await.unwrap().unwrap_err();
    /// // The head's Retry-After was about the 200, not this event.
    /// assert_eq!(overloaded.classify(), Class::Unavailable { retry_after: None });
    /// assert!(next(&mut events).await.is_none());
    /// # }
    /// # async fn next(events: &mut retry_runtime::http::ModelEvents) -> Option<Result<sse::Event, retry_runtime::http::StreamError>> {
    /// #     poll_fn(|cx| Pin::new(&mut *events).poll_next(cx)).await
    /// # }
    /// ```
    #[cfg(feature = "sse")]
    fn events(self) -> super::ModelEvents;
}

impl ResponseExt for reqwest::Response {
    async fn check_status(mut self) -> Result<Self, HttpError> {
        // What the answer says of the key reaches the attempt's upstream, a success's too.
        crate::upstream::heard(|| super::rate_limits(self.headers(), std::time::SystemTime::now()));
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

    #[cfg(feature = "sse")]
    fn events(self) -> super::ModelEvents {
        super::ModelEvents::new(self)
    }
}

mod sealed {
    pub trait SealedResponse {}
    impl SealedResponse for reqwest::Response {}
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

    /// A body or decode error came after the response's head: the server answered.
    fn reached(&self) -> Reached {
        if self.is_body() || self.is_decode() {
            Reached::Response
        } else {
            Reached::Nothing
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

/// Split a failed `reqwest::Response` from a successful one: a failure is classified from its
/// status, its headers and at most 4 KiB of its body, and handed back whole. The bytes read
/// are put back in front of the rest of the body, and the response keeps its URL, its
/// headers and its extensions.
pub(super) async fn inspect(
    mut response: reqwest::Response,
) -> Result<reqwest::Response, (reqwest::Response, HttpError)> {
    let status = response.status();
    if !status.is_client_error() && !status.is_server_error() {
        return Ok(response);
    }
    let url = response.url().clone();
    let mut read = Vec::new();
    let mut ended = false;
    // A body cut off here still leaves the status and headers to classify by; what was read
    // is handed back, then whatever the rest of the body does.
    while read.len() < SNIPPET_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => read.extend_from_slice(&chunk),
            Ok(None) => {
                ended = true;
                break;
            }
            Err(_) => break,
        }
    }
    let error = HttpError::new(status, response.headers(), &read).with_url(url.as_str());
    let read = bytes::Bytes::from(read);
    let (parts, rest) = http::Response::<reqwest::Body>::from(response).into_parts();
    let body = if ended {
        reqwest::Body::from(read)
    } else {
        prefixed(read, rest)
    };
    Err((rebuild(parts, body, url), error))
}

/// A body that yields `read`, the bytes already taken from `rest`, then the rest.
pub(super) fn prefixed(read: bytes::Bytes, rest: reqwest::Body) -> reqwest::Body {
    reqwest::Body::wrap(Prefixed {
        prefix: Some(read),
        rest,
    })
}

/// A body that yields `read`, then fails as the body it was read from did (cut off, or
/// dropped when it stalled): the client sees what it would have seen without the layer.
#[cfg(feature = "sse")]
pub(super) fn then_failing(read: bytes::Bytes) -> reqwest::Body {
    reqwest::Body::wrap(Prefixed {
        prefix: Some(read),
        rest: CutOff,
    })
}

/// The end of a body that was cut off.
#[cfg(feature = "sse")]
struct CutOff;

#[cfg(feature = "sse")]
impl http_body::Body for CutOff {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::io::Error>>> {
        std::task::Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the event stream was cut off before its first content",
        ))))
    }
}

/// A `reqwest::Response` again, from the parts of one and a new body, with its `url`.
pub(super) fn rebuild(
    mut parts: http::response::Parts,
    body: reqwest::Body,
    url: reqwest::Url,
) -> reqwest::Response {
    // `reqwest::Response::from` takes the URL from the extensions, where only its own
    // response builder can put it.
    if let Ok(carrier) = http::Response::builder()
        .url(url)
        .body(())
        .map(http::Response::into_parts)
    {
        parts.extensions.extend(carrier.0.extensions);
    }
    reqwest::Response::from(http::Response::from_parts(parts, body))
}

pin_project_lite::pin_project! {
    /// A body whose first bytes were already read: those, then the rest.
    struct Prefixed<B> {
        prefix: Option<bytes::Bytes>,
        #[pin]
        rest: B,
    }
}

impl<B> http_body::Body for Prefixed<B>
where
    B: http_body::Body<Data = bytes::Bytes>,
{
    type Data = bytes::Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, B::Error>>> {
        let this = self.project();
        if let Some(prefix) = this.prefix.take() {
            return std::task::Poll::Ready(Some(Ok(http_body::Frame::data(prefix))));
        }
        this.rest.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let prefix = self.prefix.as_ref().map_or(0, |prefix| prefix.len() as u64);
        let rest = self.rest.size_hint();
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(rest.lower().saturating_add(prefix));
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper.saturating_add(prefix));
        }
        hint
    }
}
