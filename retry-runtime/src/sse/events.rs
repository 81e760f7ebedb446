//! [`decode`]: a stream of byte chunks as a stream of [`Event`]s, through the
//! [`Decoder`], pulling a chunk only when no event is ready.

use std::error::Error;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use bytestring::ByteString;
use futures_core::Stream;

use super::decoder::{Decoder, TooLarge};
use super::event::Event;
use crate::stream::Resumable;

/// The largest event [`decode`] accepts unless told otherwise: 1 MiB. Model APIs' events are
/// a few hundred bytes; a tool call's arguments arrive in many small ones.
///
/// ```
/// assert_eq!(retry_runtime::sse::DEFAULT_MAX_EVENT_SIZE, 1024 * 1024);
/// ```
pub const DEFAULT_MAX_EVENT_SIZE: usize = 1 << 20;

/// The events in a stream of byte chunks (such as an HTTP body), decoded by the WHATWG
/// rules, each at most [`DEFAULT_MAX_EVENT_SIZE`] bytes unless
/// [`max_event_size`](Events::max_event_size) says otherwise.
///
/// A chunk is pulled from `source` only when no complete event is ready, so at most the cap
/// and one chunk are read before an event that is too large is reported. After an error,
/// and after the source ends, the stream gives `None`.
///
/// ```
/// use futures_core::Stream;
/// use retry_runtime::sse::{self, Event};
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
///
/// let mut chunks = ["event: delta\ndata: Hel", "lo\n\ndata: world\n\n"].into_iter();
/// let source = from_fn(move || chunks.next().map(|chunk| Ok::<_, std::io::Error>(chunk.into())));
/// let mut events = pin!(sse::decode(source));
///
/// // The source here is always ready; a body from the network is polled by a runtime.
/// let mut cx = Context::from_waker(Waker::noop());
/// let Poll::Ready(Some(Ok(first))) = events.as_mut().poll_next(&mut cx) else { panic!() };
/// assert_eq!(first, Event::new("delta", "Hello"));
/// let Poll::Ready(Some(Ok(second))) = events.as_mut().poll_next(&mut cx) else { panic!() };
/// assert_eq!(second, Event::new("message", "world"));
/// assert!(matches!(events.as_mut().poll_next(&mut cx), Poll::Ready(None)));
/// # fn from_fn<T>(next: impl FnMut() -> Option<T> + Unpin) -> impl Stream<Item = T> {
/// #     struct FromFn<F>(F);
/// #     impl<T, F: FnMut() -> Option<T> + Unpin> Stream for FromFn<F> {
/// #         type Item = T;
/// #         fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<T>> {
/// #             Poll::Ready((self.0)())
/// #         }
/// #     }
/// #     FromFn(next)
/// # }
/// ```
pub fn decode<S, E>(source: S) -> Events<S>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    Events {
        source,
        state: EventsState::Reading(Decoder::new(DEFAULT_MAX_EVENT_SIZE)),
    }
}

pin_project_lite::pin_project! {
    /// The stream [`decode`] returns: each item an [`Event`], or the [`DecodeError`] that
    /// ended the stream.
    ///
    /// ```
    /// use retry_runtime::sse::{decode, Events};
    /// fn events<S>(body: S) -> Events<S>
    /// where
    ///     S: futures_core::Stream<Item = Result<bytes::Bytes, std::io::Error>>,
    /// {
    ///     decode(body).max_event_size(64 * 1024)
    /// }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    pub struct Events<S> {
        #[pin]
        source: S,
        state: EventsState,
    }
}

/// While reading, the decoder holds the event in progress and the chunk being parsed; once
/// done, only where a reconnection would resume from.
// One per stream, for its whole life: a box would cost an allocation per stream and a
// pointer chase per event to save the bytes of a state it reaches once.
#[allow(clippy::large_enum_variant)]
enum EventsState {
    Reading(Decoder),
    Done {
        last_event_id: Option<ByteString>,
        retry: Option<Duration>,
    },
}

impl<S> Events<S> {
    /// The largest event this stream accepts, in bytes, [`DEFAULT_MAX_EVENT_SIZE`] unless set:
    /// both its bytes on the wire (its lines since the blank line before it, comments, field
    /// names and line ends included, counted as they arrive) and its [`Event::size`] are at
    /// most this. A larger event is a [`DecodeError::TooLarge`], which ends the stream.
    ///
    /// ```
    /// use futures_core::Stream;
    /// use retry_runtime::sse::{self, DecodeError};
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// // A source that sends a megabyte in one chunk, and no blank line.
    /// let mut once = Some(bytes::Bytes::from(format!("data: {}", "x".repeat(1 << 20))));
    /// let source = from_fn(move || once.take().map(Ok::<_, std::io::Error>));
    /// let mut events = pin!(sse::decode(source).max_event_size(1024));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(matches!(
    ///     events.as_mut().poll_next(&mut cx),
    ///     Poll::Ready(Some(Err(DecodeError::TooLarge { limit: 1024 }))),
    /// ));
    /// assert!(matches!(events.as_mut().poll_next(&mut cx), Poll::Ready(None)));
    /// # fn from_fn<T>(next: impl FnMut() -> Option<T> + Unpin) -> impl Stream<Item = T> {
    /// #     struct FromFn<F>(F);
    /// #     impl<T, F: FnMut() -> Option<T> + Unpin> Stream for FromFn<F> {
    /// #         type Item = T;
    /// #         fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<T>> {
    /// #             Poll::Ready((self.0)())
    /// #         }
    /// #     }
    /// #     FromFn(next)
    /// # }
    /// ```
    pub fn max_event_size(mut self, bytes: usize) -> Events<S> {
        if let EventsState::Reading(decoder) = &mut self.state {
            decoder.set_limit(bytes);
        }
        self
    }

    /// The stream's last event ID: the last `id:` field as of the last blank line, whether an
    /// event was dispatched there or not (an `id:` in a block with no data counts; an `id:`
    /// holding a NUL is ignored; an empty one resets it). Kept after the stream ends or is
    /// cut, so a reconnection can send it back as `Last-Event-ID`.
    ///
    /// ```
    /// use retry_runtime::sse;
    /// # use futures_core::Stream;
    /// # use std::pin::pin;
    /// # use std::task::{Context, Waker};
    ///
    /// // An event, then an ID-only block, then the source ends.
    /// let body = "id: 1\ndata: a\n\nid: 2\nretry: 500\n\n";
    /// let source = retry_runtime::testing::stream_of(vec![Ok::<_, std::io::Error>(bytes::Bytes::from(body))]);
    /// let mut events = pin!(sse::decode(source));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// while let std::task::Poll::Ready(Some(_)) = events.as_mut().poll_next(&mut cx) {}
    /// assert_eq!(events.last_event_id(), Some("2"));
    /// assert_eq!(events.reconnection_time(), Some(std::time::Duration::from_millis(500)));
    /// ```
    pub fn last_event_id(&self) -> Option<&str> {
        match &self.state {
            EventsState::Reading(decoder) => decoder.last_event_id(),
            EventsState::Done { last_event_id, .. } => last_event_id.as_deref(),
        }
    }

    /// The reconnection time the server last set with a `retry:` line of ASCII digits, in a
    /// dispatched event or not; kept after the stream ends or is cut.
    pub fn reconnection_time(&self) -> Option<Duration> {
        match &self.state {
            EventsState::Reading(decoder) => decoder.reconnection_time(),
            EventsState::Done { retry, .. } => *retry,
        }
    }
}

/// Where a cut event stream resumes from: its last event ID and reconnection time.
impl<S> Resumable for Events<S> {
    fn last_event_id(&self) -> Option<&str> {
        Events::last_event_id(self)
    }

    fn reconnection_time(&self) -> Option<Duration> {
        Events::reconnection_time(self)
    }
}

impl<S, E> Stream for Events<S>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    type Item = Result<Event, DecodeError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            let EventsState::Reading(decoder) = this.state else {
                return Poll::Ready(None);
            };
            let ended = match decoder.next_event() {
                Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                Ok(None) => match ready!(this.source.as_mut().poll_next(cx)) {
                    Some(Ok(chunk)) => {
                        decoder.push(chunk);
                        continue;
                    }
                    Some(Err(error)) => Some(Err(DecodeError::Source(error))),
                    None => decoder.finish().map_err(DecodeError::from).transpose(),
                },
                Err(too_large) => Some(Err(too_large.into())),
            };
            let (last_event_id, retry) = decoder.resume_point();
            *this.state = EventsState::Done {
                // A copy: the slice would keep its chunk alive as long as the stream.
                last_event_id: last_event_id.map(|id| ByteString::from(&*id)),
                retry,
            };
            return Poll::Ready(ended);
        }
    }
}

/// Why [`Events`] ended early: its source failed, or an event outgrew the cap.
///
/// ```
/// use retry_runtime::sse::DecodeError;
/// let error = DecodeError::<std::io::Error>::TooLarge { limit: 1024 };
/// assert_eq!(error.to_string(), "an event in the stream is larger than its limit of 1024 bytes");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError<E> {
    /// The source failed (the body was cut off, say); the error is the source's own.
    Source(E),
    /// An event grew past the cap of `limit` bytes: the stream is not read further.
    TooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
}

impl<E> From<TooLarge> for DecodeError<E> {
    fn from(too_large: TooLarge) -> DecodeError<E> {
        DecodeError::TooLarge {
            limit: too_large.limit,
        }
    }
}

/// The source's error is the [`source`](Error::source), not part of this message, so a
/// reporter prints it once.
impl<E> fmt::Display for DecodeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Source(_) => f.write_str("the event stream's source failed"),
            DecodeError::TooLarge { limit } => write!(
                f,
                "an event in the stream is larger than its limit of {limit} bytes"
            ),
        }
    }
}

impl<E: Error + 'static> Error for DecodeError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            DecodeError::Source(error) => Some(error),
            DecodeError::TooLarge { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::sse::test_source::{Chunks, drain, next};

    fn assert_send_and_unpin<T: Send + Unpin>() {}

    #[test]
    fn events_are_send_and_unpin_when_their_source_is() {
        assert_send_and_unpin::<Events<Chunks>>();
    }

    /// The stream's resume point once `chunks` are read (and, if `cut`, the source fails).
    fn resume_point(chunks: &[&str], cut: bool) -> (Option<String>, Option<Duration>) {
        let source = Chunks::new(chunks.iter().map(|chunk| chunk.as_bytes()));
        let source = if cut { source.then_cut() } else { source };
        let mut events = decode(source);
        drain(&mut events);
        (
            events.last_event_id().map(str::to_owned),
            events.reconnection_time(),
        )
    }

    #[test]
    fn an_id_only_block_sets_the_last_event_id_at_its_blank_line() {
        let (id, _) = resume_point(&["id: 1\ndata: a\n\nid: 2\n\n"], true);
        assert_eq!(id.as_deref(), Some("2"));
    }

    #[test]
    fn an_id_in_a_block_cut_before_its_blank_line_is_not_the_last_event_id() {
        let (id, _) = resume_point(&["id: 1\ndata: a\n\nid: 2\ndata: b\n"], true);
        assert_eq!(id.as_deref(), Some("1"));
    }

    #[test]
    fn an_id_holding_a_nul_leaves_the_last_event_id_as_it_was() {
        let (id, _) = resume_point(&["id: 1\n\nid: a\0b\n\n"], true);
        assert_eq!(id.as_deref(), Some("1"));
    }

    #[test]
    fn an_empty_id_resets_the_last_event_id() {
        let (id, _) = resume_point(&["id: 1\n\nid\n\n"], true);
        assert_eq!(id, None);
    }

    #[test]
    fn the_reconnection_time_comes_from_any_retry_line_of_digits_dispatched_or_not() {
        let (_, retry) = resume_point(&["retry: 500\n\nretry: 7x\ndata: a\n\nretry: 800\n"], true);
        assert_eq!(retry, Some(Duration::from_millis(800)));
    }

    #[test]
    fn the_resume_point_is_kept_after_a_clean_end() {
        let (id, retry) = resume_point(&["id: 9\nretry: 10\ndata: a\n\n"], false);
        assert_eq!(
            (id.as_deref(), retry),
            (Some("9"), Some(Duration::from_millis(10)))
        );
    }

    #[test]
    fn a_source_that_never_ends_an_event_is_read_to_the_cap_plus_one_chunk() {
        let cap = 64 * 1024;
        for chunk in [
            b"x".repeat(1000),
            b"data: xxxxxxxxx\n".repeat(64),
            b":".repeat(7),
        ] {
            let source = Chunks::new([b"data: "]).then_forever(&chunk);
            let pulled = source.pulled();
            let mut events = decode(source).max_event_size(cap);
            assert!(matches!(
                next(&mut events),
                Some(Err(DecodeError::TooLarge { limit })) if limit == cap
            ));
            let pulled = pulled.load(Ordering::Relaxed);
            assert!(pulled <= cap + chunk.len(), "{pulled} bytes pulled");
            assert!(pulled > cap, "{pulled} bytes pulled");
            assert!(next(&mut events).is_none());
        }
    }

    #[test]
    fn a_chunk_is_pulled_only_when_no_event_is_ready() {
        let source = Chunks::new([&b"data: a\n\ndata: b\n\n"[..], b"data: c\n\n"]);
        let pulled = source.pulled();
        let mut events = decode(source);
        assert_eq!(next(&mut events).unwrap().unwrap().data(), "a");
        assert_eq!(next(&mut events).unwrap().unwrap().data(), "b");
        assert_eq!(pulled.load(Ordering::Relaxed), 18);
        assert_eq!(next(&mut events).unwrap().unwrap().data(), "c");
        assert_eq!(pulled.load(Ordering::Relaxed), 27);
    }

    #[test]
    fn a_failed_source_ends_the_stream_with_its_error() {
        let mut events = decode(Chunks::new([b"data: a\n\ndata: b"]).then_cut());
        assert_eq!(next(&mut events).unwrap().unwrap().data(), "a");
        let Some(Err(DecodeError::Source(error))) = next(&mut events) else {
            panic!("the source's error");
        };
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset);
        assert!(next(&mut events).is_none());
    }

    #[test]
    fn after_the_end_the_stream_stays_done() {
        let mut events = decode(Chunks::new([b"data: a"]));
        assert_eq!(next(&mut events).unwrap().unwrap().data(), "a");
        assert!(next(&mut events).is_none());
        assert!(next(&mut events).is_none());
    }

    #[test]
    fn a_source_error_is_the_source_not_the_message() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let error = DecodeError::Source(reset);
        assert_eq!(error.to_string(), "the event stream's source failed");
        assert!(error.source().is_some());
        assert!(
            DecodeError::<std::io::Error>::TooLarge { limit: 1 }
                .source()
                .is_none()
        );
    }

    /// The spec read over the whole input at once, as plainly as it is written: decode
    /// (lossy, one BOM stripped), split into lines, run the fields. At the end, as this crate
    /// chooses, a last line with no line end is a line and a last event with data dispatches.
    fn spec(input: &[u8]) -> Vec<Event> {
        let text = String::from_utf8_lossy(input);
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
        let mut lines = Vec::new();
        let mut rest = text;
        while let Some(end) = rest.find(['\r', '\n']) {
            lines.push(&rest[..end]);
            let skip = if rest[end..].starts_with("\r\n") {
                2
            } else {
                1
            };
            rest = &rest[end + skip..];
        }
        if !rest.is_empty() {
            lines.push(rest);
        }
        lines.push("");
        let (mut data, mut kind, mut id, mut retry) = (String::new(), String::new(), None, None);
        let mut events = Vec::new();
        for line in lines {
            if line.is_empty() {
                if !data.is_empty() {
                    data.pop();
                    let id = id.clone().map(ByteString::from);
                    let kind = if kind == "message" {
                        String::new()
                    } else {
                        kind.clone()
                    };
                    events.push(Event::dispatched(
                        kind.into(),
                        data.as_str().into(),
                        id,
                        retry,
                    ));
                }
                data.clear();
                kind.clear();
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "event" => kind = value.to_owned(),
                "data" => {
                    data.push_str(value);
                    data.push('\n');
                }
                "id" if !value.contains('\0') => {
                    id = (!value.is_empty()).then(|| value.to_owned());
                }
                "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                    retry = Some(Duration::from_millis(value.parse().unwrap_or(u64::MAX)));
                }
                _ => {}
            }
        }
        events
    }

    /// Pieces that make streams worth reading: fields, line ends, BOMs, bad UTF-8.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        let pieces: &[&[u8]] = &[
            b"data",
            b"data:",
            b"data: ",
            b"event:",
            b"event: e",
            b"id:",
            b"id: 7",
            b"id: \0",
            b"retry:",
            b"retry: 15",
            b"retry: 1x",
            b":",
            b": c",
            b" ",
            b"x",
            b"yz",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            b"\xEF\xBB\xBF",
            b"\xEF",
            b"\xBB",
            b"\xFF",
            b"\xE2\x82",
            b"\xAC",
            b"\xC3\xA9",
            b"{\"type\":\"ping\"}",
            b"[DONE]",
        ];
        prop_oneof![
            4 => proptest::sample::select(pieces).prop_map(<[u8]>::to_vec),
            1 => proptest::collection::vec(any::<u8>(), 0..4),
        ]
    }

    fn stream() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(piece(), 0..40).prop_map(|pieces| pieces.concat())
    }

    /// `input` in chunks that end at `cuts` (positions taken modulo its length).
    fn split(input: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([input.len()]) {
            chunks.push(input[from..cut].to_vec());
            from = cut;
        }
        chunks
    }

    fn decoded(chunks: Vec<Vec<u8>>, limit: usize) -> Vec<Result<Event, DecodeError<String>>> {
        let mut events = decode(Chunks::new(chunks)).max_event_size(limit);
        drain(&mut events)
            .into_iter()
            .map(|item| {
                item.map_err(|error| match error {
                    DecodeError::Source(error) => DecodeError::Source(error.to_string()),
                    DecodeError::TooLarge { limit } => DecodeError::TooLarge { limit },
                })
            })
            .collect()
    }

    fn same_however_split(input: &[u8], cuts: &[usize], limit: usize) -> Result<(), TestCaseError> {
        let whole = decoded(vec![input.to_vec()], limit);
        prop_assert_eq!(&decoded(split(input, cuts), limit), &whole);
        let bytes = input.iter().map(|&b| vec![b]).collect();
        prop_assert_eq!(&decoded(bytes, limit), &whole);
        for event in whole.iter().flatten() {
            prop_assert!(event.size() <= limit);
        }
        Ok(())
    }

    fn agrees_with_the_spec(input: &[u8], cuts: &[usize]) -> Result<(), TestCaseError> {
        let events: Vec<Event> = decoded(split(input, cuts), usize::MAX)
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(|error| TestCaseError::fail(format!("{error:?}")))?;
        prop_assert_eq!(events, spec(input));
        Ok(())
    }

    fn cuts() -> impl Strategy<Value = Vec<usize>> {
        proptest::collection::vec(any::<usize>(), 0..8)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(25_000))]

        #[test]
        fn the_same_events_however_the_bytes_are_split(
            input in stream(),
            cuts in cuts(),
            limit in prop_oneof![Just(usize::MAX), 0..64usize],
        ) {
            same_however_split(&input, &cuts, limit)?;
        }

        #[test]
        fn the_decoder_agrees_with_the_spec_read_whole(input in stream(), cuts in cuts()) {
            agrees_with_the_spec(&input, &cuts)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000_000))]

        /// The two properties above, a million cases: run it with
        /// `cargo test --release -p retry-runtime --features sse -- --ignored a_million_streams`.
        #[test]
        #[ignore = "a million cases: run it in release, on purpose"]
        fn a_million_streams_split_anywhere_decode_as_the_spec_reads_them(
            input in stream(),
            cuts in cuts(),
            limit in prop_oneof![Just(usize::MAX), 0..64usize],
        ) {
            same_however_split(&input, &cuts, limit)?;
            agrees_with_the_spec(&input, &cuts)?;
        }
    }
}
