//! [`CallError`]: every failure a model call, or its stream, can end with, ready-made.

use std::error::Error;
use std::fmt;

use super::HttpError;
#[cfg(feature = "sse")]
use super::StreamError;
use crate::class::{Class, Classify};
use crate::notice::Reached;
#[cfg(feature = "stream")]
use crate::stream::EndedEarly;
use crate::timeout::TimedOut;
use crate::upstream::UpstreamPaused;

/// Every failure a call to an HTTP or model API can end with, classified (feature `reqwest`;
/// `Stream` with `sse`, `Ended` with `stream`): the error type of a `#[retry]` function or of
/// [`Retry::stream`](crate::Retry::stream) when there is nothing of your own to add.
///
/// Each variant is what the library already classifies, and `?` converts each (`From`):
///
/// | variant | what failed | class |
/// |---|---|---|
/// | `Status` | the response's status, with its hints (`Retry-After`, the body's error type): [`ResponseExt::check_status`](super::ResponseExt::check_status) | by [the one table](crate::http) |
/// | `Transport` | no response: refused, reset, timed out, a body cut off or not JSON | as its `reqwest::Error` says |
/// | `Stream` | after the head: an error event, a cut, a malformed or oversized frame | as its [`StreamError`] says |
/// | `Ended` | a stream that ended before its commit point, before it was complete, or resumed with nothing new | `Transport` |
/// | `TimedOut` | an attempt's `timeout`, a stream's `commit_timeout` or `idle_timeout` | `Timeout` |
///
/// It prints and reports its source as the error it holds does (as thiserror's
/// `#[error(transparent)]`). It keeps no secret when made by `From` (as `?` makes it): a
/// `Status` keeps its URL without the query, as [`HttpError`] does, and a `Transport`
/// error's URL loses its query, fragment and userinfo, so a key in `?key=` is never printed.
///
/// To add failures of your own, wrap it in your own `#[derive(Classify)]` enum, a
/// `#[classify(from)]` variant beside yours.
///
/// ```
/// use retry_runtime::http::CallError;
/// use retry_runtime::{Class, Classify, TimeoutBound, TimedOut};
/// use std::time::Duration;
///
/// let timed_out = CallError::from(TimedOut::new(TimeoutBound::Commit, Duration::from_secs(30)));
/// assert_eq!(timed_out.classify(), Class::Timeout);
/// assert_eq!(timed_out.to_string(), "the attempt was dropped after 30000 ms, at its `commit_timeout`");
///
/// let overflow = br#"{"error": {"type": "invalid_request_error", "code": "context_length_exceeded"}}"#;
/// let status = http::StatusCode::BAD_REQUEST;
/// let refused = CallError::from(retry_runtime::http::HttpError::new(status, &http::HeaderMap::new(), overflow));
/// assert_eq!(refused.classify(), Class::Definitive);
/// assert!(refused.is_context_overflow());
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub enum CallError {
    /// The response's status said no, with what it said: [`ResponseExt::check_status`](super::ResponseExt::check_status).
    Status(HttpError),
    /// No response, or its body failed: refused, reset, timed out, cut off, not JSON. Made
    /// by `From`, its URL has no query, fragment or userinfo.
    Transport(reqwest::Error),
    /// After the `200` head: a provider's error event, a cut, a malformed or oversized frame.
    #[cfg(feature = "sse")]
    Stream(StreamError),
    /// A stream that ended cleanly where it should not have (feature `stream`).
    #[cfg(feature = "stream")]
    Ended(EndedEarly),
    /// An attempt, or a stream's wait for its commit point or its next item, ran out of time.
    TimedOut(TimedOut),
    /// An attempt its [`Upstream`](crate::Upstream) held back past the call's end: paused by
    /// a provider's hint, or behind its outage gate.
    Paused(UpstreamPaused),
}

impl CallError {
    /// The provider's error: the status's, or an error event's inside the stream; `None` for
    /// the other failures.
    ///
    /// ```
    /// use retry_runtime::http::{CallError, HttpError};
    ///
    /// let error = CallError::from(HttpError::new(http::StatusCode::NOT_FOUND, &http::HeaderMap::new(), b""));
    /// assert_eq!(error.http_error().map(HttpError::status), Some(http::StatusCode::NOT_FOUND));
    /// ```
    pub fn http_error(&self) -> Option<&HttpError> {
        match self {
            CallError::Status(error) => Some(error),
            #[cfg(feature = "sse")]
            CallError::Stream(error) => error.http_error(),
            _ => None,
        }
    }

    /// Whether the prompt does not fit the model's context, in the status or in an error
    /// event ([`HttpError::is_context_overflow`]): a harness trims or summarises, and calls
    /// again.
    pub fn is_context_overflow(&self) -> bool {
        self.http_error()
            .is_some_and(HttpError::is_context_overflow)
    }

    fn inner(&self) -> &(dyn Error + 'static) {
        match self {
            CallError::Status(error) => error,
            CallError::Transport(error) => error,
            #[cfg(feature = "sse")]
            CallError::Stream(error) => error,
            #[cfg(feature = "stream")]
            CallError::Ended(error) => error,
            CallError::TimedOut(error) => error,
            CallError::Paused(error) => error,
        }
    }
}

impl Classify for CallError {
    fn classify(&self) -> Class {
        match self {
            CallError::Status(error) => error.classify(),
            CallError::Transport(error) => error.classify(),
            #[cfg(feature = "sse")]
            CallError::Stream(error) => error.classify(),
            #[cfg(feature = "stream")]
            CallError::Ended(error) => error.classify(),
            CallError::TimedOut(error) => error.classify(),
            CallError::Paused(error) => error.classify(),
        }
    }

    fn reached(&self) -> Reached {
        match self {
            CallError::Transport(error) => error.reached(),
            #[cfg(feature = "sse")]
            CallError::Stream(error) => error.reached(),
            _ => Reached::Nothing,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.inner(), f)
    }
}

impl Error for CallError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.inner().source()
    }
}

impl From<HttpError> for CallError {
    fn from(error: HttpError) -> CallError {
        CallError::Status(error)
    }
}

/// Its URL keeps scheme, host and path, as an [`HttpError`]'s does.
impl From<reqwest::Error> for CallError {
    fn from(mut error: reqwest::Error) -> CallError {
        if let Some(url) = error.url_mut() {
            url.set_query(None);
            url.set_fragment(None);
            // Fails only for a URL that cannot have userinfo, which then has none.
            let _ = url.set_username("");
            let _ = url.set_password(None);
        }
        CallError::Transport(error)
    }
}

#[cfg(feature = "sse")]
impl From<StreamError> for CallError {
    fn from(error: StreamError) -> CallError {
        CallError::Stream(error)
    }
}

#[cfg(feature = "stream")]
impl From<EndedEarly> for CallError {
    fn from(error: EndedEarly) -> CallError {
        CallError::Ended(error)
    }
}

impl From<UpstreamPaused> for CallError {
    fn from(error: UpstreamPaused) -> CallError {
        CallError::Paused(error)
    }
}

impl From<TimedOut> for CallError {
    fn from(error: TimedOut) -> CallError {
        CallError::TimedOut(error)
    }
}
