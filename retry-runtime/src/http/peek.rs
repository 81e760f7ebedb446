//! A retry layer's read of a successful `text/event-stream` response up to its commit point
//! (features `sse` and `reqwest`): the same decoder, table inside a stream and
//! [`sse::is_content`] rule as [`Retry::stream`](crate::Retry::stream), at the HTTP layer.
//!
//! Before the commit point, a provider error event, a body cut off, a stream that ends, or a
//! stall past the layer's `commit_timeout` is a failure the layer's ladder decides on; the
//! response is then kept as its status, headers and the bytes read, and its body (its
//! connection) is dropped before any wait. At the commit point, the client gets the response
//! whose body yields the bytes read, unchanged, then the rest as it arrives; after it, the
//! layer never touches the stream.

use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use tokio::time::Instant;

use super::HttpError;
use super::stream_peek::{Fault, Refusal, StreamPeek};
use crate::sse::{self, Decoder};
use crate::stream::Hold;
use crate::turn::scope;

/// What a peek found before the commit point.
#[derive(Debug)]
pub(crate) enum Found {
    /// Content, a hold limit, or an event the decoder would not hold: commit.
    Commit,
    /// A provider error event.
    Error(HttpError),
    /// A cut, an early end or a stall.
    Fault(Fault),
}

/// Whether `headers` say the body is an event stream: the content type's essence is
/// `text/event-stream`, its parameters ignored.
pub(crate) fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// The reader of one response's stream up to its commit point: feed it each chunk read. Its
/// hold keeps the chunks as they came, counts the events and weighs the bytes, by the rule
/// and limits [`Retry::stream`](crate::Retry::stream) holds its items by.
pub(crate) struct Reader<'p> {
    decoder: Decoder,
    hold: Hold<Bytes>,
    status: http::StatusCode,
    headers: &'p HeaderMap,
}

impl<'p> Reader<'p> {
    pub(crate) fn new(
        peek: &'p StreamPeek,
        status: http::StatusCode,
        headers: &'p HeaderMap,
    ) -> Self {
        Reader {
            // An event larger than the read's bound commits, never fails: the client gets it.
            decoder: Decoder::new(peek.limits.bytes),
            hold: Hold::new(peek.limits),
            status,
            headers,
        }
    }

    /// The bytes read so far, as they came: one chunk as it is, more joined.
    pub(crate) fn into_read(self) -> Bytes {
        let mut chunks = self.hold.release();
        match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.pop_front().unwrap_or_default(),
            _ => {
                let mut joined = Vec::with_capacity(chunks.iter().map(Bytes::len).sum());
                chunks
                    .iter()
                    .for_each(|chunk| joined.extend_from_slice(chunk));
                Bytes::from(joined)
            }
        }
    }

    /// One chunk of the body: what it decides, if anything.
    pub(crate) fn chunk(&mut self, chunk: Bytes) -> Option<Found> {
        self.hold.weigh(chunk.len());
        self.hold.keep(chunk.clone());
        self.decoder.push(chunk);
        loop {
            match self.decoder.next_event() {
                Ok(Some(event)) => {
                    if let Some(found) = self.event(&event) {
                        return Some(found);
                    }
                }
                Ok(None) => break,
                Err(_) => return Some(Found::Commit),
            }
        }
        self.hold.is_full().then_some(Found::Commit)
    }

    /// The body ended cleanly before the commit point: its last event, then the end.
    pub(crate) fn end(&mut self) -> Found {
        match self.decoder.finish() {
            Ok(Some(event)) => self.event(&event),
            Ok(None) => None,
            Err(_) => Some(Found::Commit),
        }
        .unwrap_or(Found::Fault(Fault::Ended))
    }

    fn event(&mut self, event: &sse::Event) -> Option<Found> {
        let commits = self.hold.count(sse::is_content(event), 0);
        if let Some(error) = super::provider_error(self.status, self.headers, event) {
            return Some(Found::Error(error));
        }
        commits.then_some(Found::Commit)
    }
}

/// When a peek must have committed, on tokio's time: the sooner of the layer's
/// `commit_timeout` and the rest of the turn; `None` if neither bounds it.
pub(crate) fn deadline(peek: &StreamPeek) -> Option<(Instant, Duration)> {
    let start = Instant::now();
    let own = peek
        .commit_timeout
        .and_then(|timeout| start.checked_add(timeout));
    let at = scope::sooner(own, peek.commit_timeout.and(scope::expiry()))?;
    Some((at, at.saturating_duration_since(start)))
}

/// Read a successful event-stream `response` up to its commit point. Any other response is
/// handed back unread. On a failure, the response comes back with its status, headers, URL
/// and extensions, and a body of the bytes read (then an error, for a cut or a stall); its
/// connection is closed.
pub(crate) async fn read_to_commit(
    mut response: reqwest::Response,
    peek: &StreamPeek,
) -> Result<reqwest::Response, (reqwest::Response, Refusal)> {
    if !peek.on || !response.status().is_success() || !is_event_stream(response.headers()) {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let mut reader = Reader::new(peek, response.status(), &headers);
    let deadline = deadline(peek);
    let found = loop {
        let chunk = match deadline {
            Some((at, within)) => match tokio::time::timeout_at(at, response.chunk()).await {
                Ok(chunk) => chunk,
                Err(_) => break Found::Fault(Fault::Stalled(within)),
            },
            None => response.chunk().await,
        };
        match chunk {
            Ok(Some(chunk)) => {
                if let Some(found) = reader.chunk(chunk) {
                    break found;
                }
            }
            Ok(None) => break reader.end(),
            Err(_) => break Found::Fault(Fault::Cut),
        }
    };
    let read = reader.into_read();
    let url = response.url().clone();
    let (parts, rest) = http::Response::<reqwest::Body>::from(response).into_parts();
    let refusal = match found {
        Found::Commit => {
            let body = super::reqwest::prefixed(read, rest);
            return Ok(super::reqwest::rebuild(parts, body, url));
        }
        Found::Error(error) => Refusal::Answered(error.with_url(url.as_str())),
        Found::Fault(fault) => Refusal::Broken(fault),
    };
    // The open body, and its connection, go now: before the ladder waits.
    drop(rest);
    let body = match refusal {
        Refusal::Broken(Fault::Cut | Fault::Stalled(_)) => super::reqwest::then_failing(read),
        _ => reqwest::Body::from(read),
    };
    Err((super::reqwest::rebuild(parts, body, url), refusal))
}
