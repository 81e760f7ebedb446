//! [`Event`]: one dispatched server-sent event.

use std::borrow::Cow;
use std::time::Duration;

use bytestring::ByteString;

use super::delta;

/// One server-sent event: its type, its data, the stream's last event ID and reconnection
/// time as of this event.
///
/// ```
/// use retry_runtime::sse::Event;
///
/// let event = Event::new("content_block_delta", r#"{"type":"content_block_delta"}"#);
/// assert_eq!(event.event(), "content_block_delta");
/// assert_eq!(event.data(), r#"{"type":"content_block_delta"}"#);
/// assert_eq!(event.id(), None);
/// assert_eq!(event.size(), 19 + 30);
///
/// // An event with no `event:` field is a `message`, however it was made.
/// assert_eq!(Event::new("", "hi"), Event::new("message", "hi"));
/// assert_eq!(Event::new("", "hi").event(), "message");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Event {
    /// Empty for the default type, `message`, so that both spellings compare equal.
    event: ByteString,
    /// A slice of the chunk it came in, when it lay in one (see the decoder).
    data: ByteString,
    /// Shared with the decoder, which keeps it for the events that follow.
    id: Option<ByteString>,
    retry: Option<Duration>,
}

impl Event {
    /// An event of this type (`""` or `"message"` for the default) with this data, no ID and
    /// no reconnection time: for tests and examples.
    pub fn new(event: impl Into<String>, data: impl Into<String>) -> Event {
        let event = event.into();
        let event = if event == "message" {
            ByteString::new()
        } else {
            ByteString::from(event)
        };
        Event::dispatched(event, ByteString::from(data.into()), None, None)
    }

    /// An event as the decoder dispatches it: `event` is empty for `message`.
    pub(super) fn dispatched(
        event: ByteString,
        data: ByteString,
        id: Option<ByteString>,
        retry: Option<Duration>,
    ) -> Event {
        Event {
            event,
            data,
            id,
            retry,
        }
    }

    /// The event's type: its last `event:` field, or `message` if it had none.
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    /// assert_eq!(Event::new("ping", "{}").event(), "ping");
    /// ```
    pub fn event(&self) -> &str {
        if self.event.is_empty() {
            "message"
        } else {
            &self.event
        }
    }

    /// The event's data: its `data:` fields, joined with `\n`.
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    /// assert_eq!(Event::new("", "YHOO\n+2\n10").data(), "YHOO\n+2\n10");
    /// ```
    pub fn data(&self) -> &str {
        &self.data
    }

    /// The stream's last event ID when this event was dispatched: the last `id:` field so far
    /// (it persists across events, as the spec's "last event ID" does), or `None` if there was
    /// none or the last one was empty (which resets it).
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    /// assert_eq!(Event::new("", "hi").id(), None);
    /// ```
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The reconnection time the stream last set with a `retry:` field, as of this event.
    /// Like the spec's reconnection time it belongs to the stream, not to one event, so it
    /// persists, and a `retry:` in a block with no data is not lost.
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    /// assert_eq!(Event::new("", "hi").retry(), None);
    /// ```
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// The bytes this event holds: its data, its type's name (none for `message`, the
    /// default, however it was spelt) and its ID, as UTF-8 (an invalid byte became U+FFFD,
    /// three bytes). [`Events::max_event_size`](super::Events::max_event_size) caps it, as
    /// it caps the event's bytes on the wire, and a retry that holds events before its
    /// commit point counts it.
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    /// assert_eq!(Event::new("message", "four").size(), 4);
    /// assert_eq!(Event::new("ping", "").size(), 4);
    /// ```
    pub fn size(&self) -> usize {
        self.data.len() + self.event.len() + self.id.as_deref().map_or(0, str::len)
    }

    /// The text this event adds to a model's reply, for each provider
    /// [`is_content`](super::is_content) knows, or `None` if it adds none:
    ///
    /// | provider | event | text |
    /// |---|---|---|
    /// | Anthropic | `content_block_delta` whose `delta.type` is `text_delta` | `delta.text` |
    /// | OpenAI chat | a chunk | choice 0's `delta.content` (with `n > 1`, the others' are not this text); an empty string (the first chunk's) is none |
    /// | OpenAI Responses | `response.output_text.delta` | `delta` |
    /// | Gemini | a chunk | candidate 0's `content.parts[].text`, joined; thought parts left out |
    ///
    /// A nameless event is read by its data's `"type"`, as `is_content` reads it. Tool-call
    /// arguments, reasoning and refusals are not text: read them with [`json`](Event::json).
    /// The data is parsed once, and only for an event that can carry text; the text is
    /// borrowed from it unless it holds an escape (`\n`, `\"`, `\u00e9`) or Gemini sent
    /// several parts.
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    /// use std::borrow::Cow;
    ///
    /// let anthropic = Event::new(
    ///     "content_block_delta",
    ///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
    /// );
    /// assert!(matches!(anthropic.text(), Some(Cow::Borrowed("Hi"))));
    ///
    /// let first_chunk = Event::new("", r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#);
    /// assert_eq!(first_chunk.text(), None);
    ///
    /// let escaped = Event::new("", r#"{"choices":[{"index":0,"delta":{"content":"a\nb"}}]}"#);
    /// assert_eq!(escaped.text().as_deref(), Some("a\nb"));
    /// ```
    pub fn text(&self) -> Option<Cow<'_, str>> {
        delta::text(self.event(), self.data())
    }

    /// The event's data as JSON, into any type that deserializes from it, borrowing from the
    /// data where the type borrows: for what [`text`](Event::text) does not read.
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Usage { output_tokens: u32 }
    /// #[derive(serde::Deserialize)]
    /// struct MessageDelta { usage: Usage }
    ///
    /// let event = Event::new("message_delta", r#"{"type":"message_delta","usage":{"output_tokens":15}}"#);
    /// let delta: MessageDelta = event.json().unwrap();
    /// assert_eq!(delta.usage.output_tokens, 15);
    /// assert!(event.json::<u32>().is_err());
    /// ```
    pub fn json<'a, T: serde::Deserialize<'a>>(&'a self) -> serde_json::Result<T> {
        serde_json::from_str(self.data())
    }
}
