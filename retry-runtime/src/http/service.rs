//! What a retry layer reads from a service it wraps: a response, classified by
//! [the one table](crate::http) ([`Reply`]), or an error with no response at all
//! ([`ClassifyError`]). Shared by [`RetryLayer`](crate::tower::RetryLayer) and
//! [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware).

use std::future::Future;

use super::HttpError;
use super::stream_peek::{Refusal, StreamPeek};
use crate::class::Class;

/// A response a retry layer can classify: a `reqwest::Response` (feature `reqwest`) or any
/// `http::Response<B>`.
///
/// A success (any status but 4xx and 5xx) is never read. A failed `reqwest::Response` is
/// classified from its status, its headers and at most 4 KiB of its body, read once and put
/// back: the caller gets the same status, headers, URL, extensions and every byte of the body.
/// An `http::Response<B>`'s body cannot be put back in general, so it is classified from its
/// status and headers alone (`x-should-retry`, `Retry-After`, `x-ratelimit-remaining`, the
/// status), never from its body, which is handed back unread.
///
/// ```
/// use http::StatusCode;
/// use retry_runtime::http::Reply;
/// use retry_runtime::{Class, Classify};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let busy = http::Response::builder().status(503).header("retry-after", "2").body("busy").unwrap();
/// let (busy, error) = busy.inspect().await.unwrap_err();
/// assert_eq!(error.classify(), Class::Unavailable { retry_after: Some(std::time::Duration::from_secs(2)) });
/// assert_eq!(*busy.body(), "busy");
///
/// let fine = http::Response::builder().status(200).body("reply").unwrap();
/// assert_eq!(fine.inspect().await.unwrap().status(), StatusCode::OK);
/// # }
/// ```
pub trait Reply: Sized + Send + read::ReadToCommit {
    /// The response itself if its status is not an error (4xx or 5xx); else the response,
    /// handed back whole, and the [`HttpError`] that classifies it.
    fn inspect(self) -> impl Future<Output = Result<Self, (Self, HttpError)>> + Send;
}

/// What only the retry layers read of a [`Reply`]. The trait is public in a private module:
/// no one outside the crate can name it, call it or implement it, which also seals `Reply`.
mod read {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::{Refusal, StreamPeek};

    /// What a read of a reply gives: the reply, or the reply and why it refuses.
    pub(super) type Read<R> = Result<R, (R, Refusal)>;

    /// A reply a retry layer reads before it hands it on.
    pub trait ReadToCommit: Sized {
        /// Like [`Reply::inspect`](super::Reply::inspect), and a successful
        /// `text/event-stream` `reqwest::Response` (features `reqwest` and `sse`) is read up
        /// to its commit point, as `peek` says.
        fn inspect_stream(self, peek: StreamPeek) -> Inspecting<Self>;

        /// The reply's headers: what it says of the key reaches the upstream's pacer.
        fn head(&self) -> &::http::HeaderMap;
    }

    /// [`ReadToCommit::inspect_stream`]'s future, named so that a layer's future can hold it:
    /// decided from the head where it can be (every success that is not a stream to peek,
    /// and every `http::Response`), and only a read of a body, which is I/O, is boxed.
    pub enum Inspecting<R> {
        /// Decided from the head; taken when polled.
        Decided(Option<Read<R>>),
        /// Reading the body: an error's, or a stream's to its commit point.
        Reading(Pin<Box<dyn Future<Output = Read<R>> + Send>>),
    }

    // Never pinned through: the reply is moved out whole, and the read is boxed.
    impl<R> Unpin for Inspecting<R> {}

    impl<R> Future for Inspecting<R> {
        type Output = Read<R>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Read<R>> {
            match self.get_mut() {
                Inspecting::Decided(read) => match read.take() {
                    Some(read) => Poll::Ready(read),
                    None => panic!("a reply's inspection polled after it was returned"),
                },
                Inspecting::Reading(reading) => reading.as_mut().poll(cx),
            }
        }
    }
}

pub(crate) use read::Inspecting;

#[cfg(feature = "reqwest")]
impl Reply for reqwest::Response {
    fn inspect(self) -> impl Future<Output = Result<Self, (Self, HttpError)>> + Send {
        super::reqwest::inspect(self)
    }
}

#[cfg(feature = "reqwest")]
impl read::ReadToCommit for reqwest::Response {
    fn head(&self) -> &::http::HeaderMap {
        self.headers()
    }

    fn inspect_stream(self, peek: StreamPeek) -> Inspecting<Self> {
        // A success that is not a stream to peek is decided from its head, with no read.
        #[cfg(feature = "sse")]
        let peeked = peek.on && super::peek::is_event_stream(self.headers());
        #[cfg(not(feature = "sse"))]
        let peeked = false;
        if self.status().is_success() && !peeked {
            return Inspecting::Decided(Some(Ok(self)));
        }
        Inspecting::Reading(Box::pin(async move {
            let response = super::reqwest::inspect(self)
                .await
                .map_err(|(response, error)| (response, Refusal::Answered(error)))?;
            #[cfg(feature = "sse")]
            let response = super::peek::read_to_commit(response, &peek).await?;
            #[cfg(not(feature = "sse"))]
            let _ = peek;
            Ok(response)
        }))
    }
}

impl<B: Send> Reply for ::http::Response<B> {
    async fn inspect(self) -> Result<Self, (Self, HttpError)> {
        judged(self)
    }
}

/// An `http::Response` judged by its status alone: its body cannot be read and put back.
fn judged<B>(
    response: ::http::Response<B>,
) -> Result<::http::Response<B>, (::http::Response<B>, HttpError)> {
    let status = response.status();
    if !status.is_client_error() && !status.is_server_error() {
        return Ok(response);
    }
    let error = HttpError::new(status, response.headers(), b"");
    Err((response, error))
}

impl<B: Send> read::ReadToCommit for ::http::Response<B> {
    fn head(&self) -> &::http::HeaderMap {
        self.headers()
    }

    /// Its body cannot be put back in general (hyper's `Incoming` cannot be rebuilt), so a
    /// stream is never read: only `reqwest::Response` is peeked. Decided from the head.
    fn inspect_stream(self, _: StreamPeek) -> Inspecting<Self> {
        let read = judged(self).map_err(|(response, error)| (response, Refusal::Answered(error)));
        Inspecting::Decided(Some(read))
    }
}

/// The class of a service's own error (no response at all) for a retry layer. A closure
/// `Fn(&E) -> Class` is one; [`AsTransport`], the default, says `Transport` for every error.
///
/// ```
/// use retry_runtime::http::{AsTransport, ClassifyError};
/// use retry_runtime::Class;
///
/// assert_eq!(AsTransport.classify_error(&"connection reset"), Class::Transport);
/// let refused = |error: &&str| if error.contains("refused") { Class::Transport } else { Class::Definitive };
/// assert_eq!(refused.classify_error(&"invalid URL"), Class::Definitive);
/// ```
pub trait ClassifyError<E> {
    /// The class of `error`.
    fn classify_error(&self, error: &E) -> Class;
}

/// Every service error is [`Class::Transport`]: no response was read, so the request may
/// not have reached the server. The default of a retry layer.
///
/// ```
/// use retry_runtime::http::{AsTransport, ClassifyError};
/// use retry_runtime::Class;
/// assert_eq!(AsTransport.classify_error(&std::io::Error::other("reset")), Class::Transport);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AsTransport;

impl<E> ClassifyError<E> for AsTransport {
    fn classify_error(&self, _: &E) -> Class {
        Class::Transport
    }
}

impl<E, F: Fn(&E) -> Class> ClassifyError<E> for F {
    fn classify_error(&self, error: &E) -> Class {
        self(error)
    }
}
