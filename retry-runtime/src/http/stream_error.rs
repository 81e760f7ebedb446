//! [`StreamError`]: why a model's stream ended early, classified.

use std::error::Error;
use std::fmt;

use super::HttpError;
use crate::class::{Class, Classify};
use crate::notice::Reached;

/// Why a model's stream ([`ModelEvents`](super::ModelEvents)) ended early, and what that says
/// about trying again:
///
/// | what happened | class |
/// |---|---|
/// | the provider sent an error event | by [the one table](crate::http#inside-a-stream), from the event alone; [`http_error`](StreamError::http_error) gives it |
/// | the server sent a JSON-RPC error response (MCP) | `Definitive`: its answer; [`http_error`](StreamError::http_error) gives it |
/// | the body was cut off mid-read | as the client's error says: `Transport` (a read timeout: `Timeout`) |
/// | an event's data is not JSON (a malformed frame: the same request gets the same bytes) | `Definitive` |
/// | an event is larger than the cap | `Definitive` |
///
/// Its `Display` never prints the body or a URL's query. It is one word wide, and works
/// with `#[derive(Classify)]`'s `#[classify(from)]`:
///
/// ```
/// use retry_runtime::http::{HttpError, ResponseExt};
/// use retry_runtime::{sse, Class, Classify};
/// use std::future::poll_fn;
/// use std::pin::Pin;
///
/// #[derive(Debug, thiserror::Error, Classify)]
/// enum ModelError {
///     #[error(transparent)]
///     #[classify(from)]
///     Http(#[from] HttpError),
///     #[error(transparent)]
///     #[classify(from)] // an error event, a cut, a malformed or oversized frame
///     Stream(#[from] retry_runtime::http::StreamError),
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let body = "data: {\"choices\": [{\"delta\": {\"content\": \"Hi\"}}]}\n\ndata: {\"choices\": [\n\n";
/// let mut events = reqwest::Response::from(http::Response::new(body)).events();
/// let first = next(&mut events).await.unwrap().unwrap();
/// assert_eq!(first.data(), r#"{"choices": [{"delta": {"content": "Hi"}}]}"#);
/// let error = ModelError::from(next(&mut events).await.unwrap().unwrap_err());
/// assert_eq!(error.classify(), Class::Definitive);
/// assert_eq!(error.to_string(), "a malformed event in the model stream: its data is not JSON (line 1 column 13)");
/// assert!(next(&mut events).await.is_none());
/// # }
/// # async fn next(events: &mut retry_runtime::http::ModelEvents) -> Option<Result<sse::Event, retry_runtime::http::StreamError>> {
/// #     poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut *events), cx)).await
/// # }
/// ```
pub struct StreamError(Box<EventFailure>);

#[derive(Debug)]
enum EventFailure {
    Provider(HttpError),
    Cut {
        class: Class,
        error: Box<dyn Error + Send + Sync>,
    },
    Malformed {
        line: usize,
        column: usize,
    },
    TooLarge {
        limit: usize,
    },
}

impl StreamError {
    pub(super) fn provider(error: HttpError) -> StreamError {
        StreamError(Box::new(EventFailure::Provider(error)))
    }

    /// The source failed mid-read: classified now, by its own `Classify`.
    pub(super) fn cut<E>(error: E) -> StreamError
    where
        E: Classify + Error + Send + Sync + 'static,
    {
        StreamError(Box::new(EventFailure::Cut {
            class: error.classify(),
            error: Box::new(error),
        }))
    }

    pub(super) fn malformed(error: &serde_json::Error) -> StreamError {
        StreamError(Box::new(EventFailure::Malformed {
            line: error.line(),
            column: error.column(),
        }))
    }

    pub(super) fn too_large(limit: usize) -> StreamError {
        StreamError(Box::new(EventFailure::TooLarge { limit }))
    }

    /// The provider's error event, as an [`HttpError`] that keeps the head's status and
    /// headers and says it came from inside the stream; `None` for a cut, a malformed or an
    /// oversized frame.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::http::ResponseExt;
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    ///
    /// let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n";
    /// let response = reqwest::Response::from(http::Response::new(body));
    /// let mut events = response.events();
    /// let error = poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut events), cx))
    ///     .await
    ///     .unwrap()
    ///     .unwrap_err();
    /// assert_eq!(error.http_error().unwrap().error_type(), Some("overloaded_error"));
    /// # }
    /// ```
    pub fn http_error(&self) -> Option<&HttpError> {
        match &*self.0 {
            EventFailure::Provider(error) => Some(error),
            _ => None,
        }
    }
}

/// See the table on [`StreamError`].
impl Classify for StreamError {
    fn classify(&self) -> Class {
        match &*self.0 {
            EventFailure::Provider(error) => error.classify(),
            EventFailure::Cut { class, .. } => *class,
            EventFailure::Malformed { .. } | EventFailure::TooLarge { .. } => Class::Definitive,
        }
    }

    /// Every one came after the response's head: the server answered.
    fn reached(&self) -> Reached {
        Reached::Response
    }
}

/// A provider's error prints as its [`HttpError`] does; a cut's cause is its
/// [`source`](Error::source), not part of this message, so a reporter prints it once.
impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            EventFailure::Provider(error) => fmt::Display::fmt(error, f),
            EventFailure::Cut { .. } => f.write_str("the model stream failed mid-read"),
            EventFailure::Malformed { line, column } => write!(
                f,
                "a malformed event in the model stream: its data is not JSON (line {line} column {column})"
            ),
            EventFailure::TooLarge { limit } => write!(
                f,
                "an event in the model stream is larger than its limit of {limit} bytes"
            ),
        }
    }
}

impl fmt::Debug for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl Error for StreamError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &*self.0 {
            EventFailure::Cut { error, .. } => Some(&**error),
            _ => None,
        }
    }
}
