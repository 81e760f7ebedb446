//! [`Event`]: one dispatched server-sent event.

use std::sync::Arc;
use std::time::Duration;

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
    event: String,
    data: String,
    /// Shared with the decoder, which keeps it for the events that follow.
    id: Option<Arc<str>>,
    retry: Option<Duration>,
}

impl Event {
    /// An event of this type (`""` or `"message"` for the default) with this data, no ID and
    /// no reconnection time: for tests and examples.
    pub fn new(event: impl Into<String>, data: impl Into<String>) -> Event {
        Event::dispatched(event.into(), data.into(), None, None)
    }

    pub(super) fn dispatched(
        mut event: String,
        data: String,
        id: Option<Arc<str>>,
        retry: Option<Duration>,
    ) -> Event {
        if event == "message" {
            event.clear();
        }
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

    /// The bytes this event holds: its data, its type's name (none for `message`) and its ID.
    /// [`Events::max_event_size`](super::Events::max_event_size) caps it, and a retry that
    /// holds events before its commit point counts it.
    ///
    /// ```
    /// use retry_runtime::sse::Event;
    /// assert_eq!(Event::new("message", "four").size(), 4);
    /// assert_eq!(Event::new("ping", "").size(), 4);
    /// ```
    pub fn size(&self) -> usize {
        self.data.len() + self.event.len() + self.id.as_deref().map_or(0, str::len)
    }
}
