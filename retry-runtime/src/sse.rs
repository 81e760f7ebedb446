//! Server-sent events (feature `sse`): a decoder that follows the WHATWG rules and caps each
//! event's size, and the commit rule for a model's stream ([`is_content`]). A model's stream
//! over HTTP, its failures after the `200` head classified by
//! [the one table](crate::http#inside-a-stream), is `http`'s (with feature `reqwest`):
//! [`ModelEvents`](crate::http::ModelEvents) and [`StreamError`](crate::http::StreamError).
//! Nothing here knows HTTP.
//!
//! | item | what |
//! |---|---|
//! | [`decode`], [`Events`], [`DecodeError`], [`DEFAULT_MAX_EVENT_SIZE`] | any stream of byte chunks as a stream of events |
//! | [`Event`] | one event: type, data, last event ID, reconnection time; the text it adds ([`Event::text`]), its data as JSON ([`Event::json`]) |
//! | [`is_content`], [`AsEvent`] | whether an event commits a model's stream (the providers' preambles do not) |
//!
//! The decoder is this crate's own: `eventsource-stream` buffers a line or an event without
//! bound, fails on invalid UTF-8 rather than decoding it with replacement, drops an event
//! that the stream's end cuts short, and panics on a stream that starts with a BOM;
//! `sse-stream` also buffers without bound and fails on invalid UTF-8.
//!
//! **It is fast, and allocates little.** Lines are found with `memchr`. An event's data,
//! type and ID are slices of the chunk they came in (`bytes::Bytes`, as `bytestring::
//! ByteString`), their UTF-8 checked once: an event of one `data:` line allocates nothing,
//! one of several lines (or one cut across chunks, or with invalid UTF-8) one copy, and a
//! comment or a keep-alive nothing. An event keeps the chunk it was sliced from alive, as a
//! `Bytes` slice does; copy what you keep long. `cargo bench -p retry-bench --bench stream`
//! measures it beside `eventsource-stream` and `sse-stream` (BENCHMARKS.md).
//!
//! It follows [the spec's rules for interpreting an event stream][spec]: CR, LF and CRLF
//! line ends (a CRLF split between chunks is one line end); one leading BOM stripped; lines
//! that start with `:` are comments; a field with no colon has an empty value, and one space
//! after the colon is dropped; `data` lines are joined with `\n`; `id` sets the last event ID,
//! which persists, unless its value holds a NUL; `retry` is read only if all ASCII digits;
//! other fields are ignored; a blank line dispatches, and an event with no data is not
//! dispatched; invalid UTF-8 becomes U+FFFD.
//!
//! **One choice differs from the spec**: when the source ends cleanly, a last event with
//! data but no blank line after it (and a last line with no line end) is dispatched, where
//! the spec drops it. Servers that omit the final blank line would otherwise lose their last
//! event; a connection cut off is an error from the source anyway, never a clean end.
//!
//! **Every buffer is bounded.** An event may take at most [`DEFAULT_MAX_EVENT_SIZE`] (1 MiB)
//! unless [`Events::max_event_size`] says otherwise, counted two ways, to the byte:
//! - **on the wire**: every byte of the lines since the last blank line (comments, field
//!   names, values and line ends, both bytes of a CRLF), and of the line arriving; the blank
//!   line that dispatches is not counted;
//! - **as kept**, [`Event::size`]: the data (its lines joined with `\n`), the type's name
//!   (none for `message`, the default, even when the stream spells it out) and the ID, as
//!   UTF-8, where an invalid byte became U+FFFD (three bytes).
//!
//! Past either, the stream fails with [`DecodeError::TooLarge`] at once, and the source is
//! read no further. A chunk is pulled only when no event is ready, so at most the cap and one
//! chunk are read before the error; a line that never ends holds at most the cap and 16 KiB
//! more; and neither where the chunks split the stream nor what follows an event's last byte
//! changes the outcome.
//!
//! ```
//! use futures_core::Stream;
//! use retry_runtime::sse::{self, Event};
//! use std::pin::pin;
//! use std::task::{Context, Poll, Waker};
//!
//! let body = "\u{feff}: a comment\r\nevent: delta\r\nid: 7\r\ndata: YHOO\r\ndata: +2\r\n\r\ndata: last";
//! let mut chunks = body.as_bytes().chunks(5).map(bytes::Bytes::copy_from_slice);
//! let source = from_fn(move || chunks.next().map(Ok::<_, std::io::Error>));
//! let mut events = pin!(sse::decode(source));
//! let mut cx = Context::from_waker(Waker::noop());
//!
//! let Poll::Ready(Some(Ok(first))) = events.as_mut().poll_next(&mut cx) else { panic!() };
//! assert_eq!((first.event(), first.data(), first.id()), ("delta", "YHOO\n+2", Some("7")));
//! // No blank line after the last event: dispatched all the same, at the source's end.
//! let Poll::Ready(Some(Ok(last))) = events.as_mut().poll_next(&mut cx) else { panic!() };
//! assert_eq!((last.event(), last.data(), last.id()), ("message", "last", Some("7")));
//! assert!(matches!(events.as_mut().poll_next(&mut cx), Poll::Ready(None)));
//! # fn from_fn<T>(next: impl FnMut() -> Option<T> + Unpin) -> impl Stream<Item = T> {
//! #     struct FromFn<F>(F);
//! #     impl<T, F: FnMut() -> Option<T> + Unpin> Stream for FromFn<F> {
//! #         type Item = T;
//! #         fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<T>> {
//! #             Poll::Ready((self.0)())
//! #         }
//! #     }
//! #     FromFn(next)
//! # }
//! ```
//!
//! [spec]: https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation

mod content;
mod decoder;
mod delta;
mod event;
mod events;
#[cfg(test)]
pub(crate) mod test_source;

pub use content::{AsEvent, is_content};
#[cfg(feature = "reqwest")]
pub(crate) use decoder::Decoder;
pub use event::Event;
pub use events::{DEFAULT_MAX_EVENT_SIZE, DecodeError, Events, decode};
