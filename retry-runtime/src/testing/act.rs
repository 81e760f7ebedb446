//! What a scripted provider does with one request: an [`Act`], each built by a one-line
//! constructor with the provider's own status, headers and body. It only describes; it must
//! not touch a socket (the server and the adapters play it).

use std::time::Duration;

/// What a scripted provider does with one request: answer with a status (a provider's own
/// error, with its headers and body), fail below HTTP (refuse, reset, hang), or stream
/// server-sent events that end well or badly.
///
/// ```
/// use retry_runtime::testing::{Act, ScriptedEvent};
/// use std::time::Duration;
///
/// let overloaded = Act::anthropic_overloaded();
/// let wait = Act::rate_limited(Duration::from_secs(30));
/// let cut = Act::events(ScriptedEvent::numbered(5)).cut_after(3);
/// assert_ne!(overloaded, wait);
/// # let _ = cut;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Act {
    pub(crate) kind: ActKind,
}

/// The act's parts, read by the server and the adapters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ActKind {
    /// A status with headers and a body.
    Answer(Canned),
    /// No answer: the connection is closed once the request is read.
    Refuse,
    /// A `200` head that promises this body, half of it, then the connection closed.
    ResetMidBody(String),
    /// No answer, ever: the attempt's own timeout ends it.
    Hang,
    /// `200 text/event-stream`: the first `upto` events, then the end.
    Events {
        events: Vec<ScriptedEvent>,
        upto: usize,
        end: StreamEnd,
    },
    /// A resumed stream: the events after the request's cursor.
    Resume {
        events: Vec<ScriptedEvent>,
        replay_last: bool,
    },
}

/// A status, its headers and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Canned {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

/// How a scripted stream ends after its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// The body ends cleanly.
    Clean,
    /// The connection is cut: the body ends with an error.
    Cut,
    /// Nothing more is sent, and the connection stays open until the client closes it.
    Stall,
}

const ANTHROPIC_OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

impl Act {
    fn answer(status: u16, body: &str) -> Act {
        let mut headers = Vec::new();
        if !body.is_empty() {
            headers.push(("content-type".to_owned(), "application/json".to_owned()));
        }
        Act {
            kind: ActKind::Answer(Canned {
                status,
                headers,
                body: body.to_owned(),
            }),
        }
    }

    /// A `200 OK` with this body.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::ok(r#"{"reply":"hi"}"#);
    /// ```
    pub fn ok(body: &str) -> Act {
        let mut act = Act::status(200);
        if let ActKind::Answer(canned) = &mut act.kind {
            body.clone_into(&mut canned.body);
        }
        act
    }

    /// This status, with no body: `Act::status(503)` is a gateway's bare outage.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::status(503);
    /// ```
    pub fn status(status: u16) -> Act {
        Act::answer(status, "")
    }

    /// A `503 Service Unavailable` with no body.
    ///
    /// ```
    /// assert_eq!(retry_runtime::testing::Act::unavailable(), retry_runtime::testing::Act::status(503));
    /// ```
    pub fn unavailable() -> Act {
        Act::status(503)
    }

    /// A `429 Too Many Requests` with `Retry-After` in whole seconds (rounded up).
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::rate_limited(std::time::Duration::from_secs(30));
    /// ```
    pub fn rate_limited(after: Duration) -> Act {
        let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        Act::status(429).with_header("retry-after", &seconds.to_string())
    }

    /// A `429` with `Retry-After` as an HTTP date (feature `http`).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// let _ = retry_runtime::testing::Act::rate_limited_until(SystemTime::now() + Duration::from_secs(60));
    /// ```
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn rate_limited_until(when: std::time::SystemTime) -> Act {
        Act::status(429).with_header("retry-after", &httpdate::fmt_http_date(when))
    }

    /// A `429` with `retry-after-ms`, as OpenAI and Azure send it.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::rate_limited_ms(1500);
    /// ```
    pub fn rate_limited_ms(milliseconds: u64) -> Act {
        Act::status(429).with_header("retry-after-ms", &milliseconds.to_string())
    }

    /// Anthropic's `529` with its `overloaded_error` body.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::anthropic_overloaded();
    /// ```
    pub fn anthropic_overloaded() -> Act {
        Act::answer(529, ANTHROPIC_OVERLOADED)
    }

    /// OpenAI's `429` whose code is `rate_limit_exceeded`, with no hint.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::openai_rate_limit_exceeded();
    /// ```
    pub fn openai_rate_limit_exceeded() -> Act {
        Act::answer(
            429,
            r#"{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        )
    }

    /// OpenAI's `429` whose code is `insufficient_quota`: a billing refusal, not a rate.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::openai_insufficient_quota();
    /// ```
    pub fn openai_insufficient_quota() -> Act {
        Act::answer(
            429,
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        )
    }

    /// Google's `429 RESOURCE_EXHAUSTED` with a `RetryInfo` asking for `delay` (whole
    /// seconds).
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::google_retry_info(std::time::Duration::from_secs(7));
    /// ```
    pub fn google_retry_info(delay: Duration) -> Act {
        Act::answer(
            429,
            &format!(
                r#"{{"error":{{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Resource has been exhausted","details":[{{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"{}s"}}]}}}}"#,
                delay.as_secs()
            ),
        )
    }

    /// Google's `429 RESOURCE_EXHAUSTED` with a `QuotaFailure` naming a per-day quota: spent
    /// until midnight.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::google_daily_quota();
    /// ```
    pub fn google_daily_quota() -> Act {
        Act::answer(
            429,
            r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_requests_per_model_per_day","quotaId":"GenerateRequestsPerDayPerProjectPerModel"}]}]}}"#,
        )
    }

    /// A `400` saying the prompt outgrew the context window (OpenAI's
    /// `context_length_exceeded`).
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::context_overflow();
    /// ```
    pub fn context_overflow() -> Act {
        Act::answer(
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        )
    }

    /// A gRPC status as a trailers-only answer (`200`, `content-type: application/grpc`,
    /// `grpc-status`, `grpc-message`), with `grpc-retry-pushback-ms` if `pushback` is given
    /// (feature `grpc`, whose table [`Script::call`](crate::testing::Script::call) reads it
    /// with).
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::grpc_status(8, Some(std::time::Duration::from_millis(1500)));
    /// ```
    #[cfg(feature = "grpc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
    pub fn grpc_status(code: i32, pushback: Option<Duration>) -> Act {
        let act = Act::status(200)
            .with_header("content-type", "application/grpc")
            .with_header("grpc-status", &code.to_string())
            .with_header("grpc-message", "scripted");
        match pushback {
            Some(pushback) => {
                act.with_header("grpc-retry-pushback-ms", &pushback.as_millis().to_string())
            }
            None => act,
        }
    }

    /// No answer: the connection is closed as soon as the request is read, so the client
    /// sees no status (a refusal, as a client that connected sees one). The closure adapter
    /// gives an `io::ErrorKind::ConnectionRefused`.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::refused();
    /// ```
    pub fn refused() -> Act {
        Act {
            kind: ActKind::Refuse,
        }
    }

    /// A `200` whose body is cut off halfway: the head promises more than is sent.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::reset_mid_body();
    /// ```
    pub fn reset_mid_body() -> Act {
        Act {
            kind: ActKind::ResetMidBody(r#"{"reply":"the start of a long answer"}"#.to_owned()),
        }
    }

    /// No answer until the client gives up: the attempt's own timeout ends it.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::hang();
    /// ```
    pub fn hang() -> Act {
        Act {
            kind: ActKind::Hang,
        }
    }

    /// A `200 text/event-stream` with these events, ending cleanly; see
    /// [`cut_after`](Act::cut_after), [`stall_after`](Act::stall_after) and
    /// [`close_after`](Act::close_after) for streams that end early.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, ScriptedEvent};
    /// let _ = Act::events([ScriptedEvent::new("message_start", "{}")]);
    /// ```
    pub fn events(events: impl IntoIterator<Item = ScriptedEvent>) -> Act {
        let events: Vec<_> = events.into_iter().collect();
        Act {
            kind: ActKind::Events {
                upto: events.len(),
                events,
                end: StreamEnd::Clean,
            },
        }
    }

    /// A `200 text/event-stream` with no events at all.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::empty_stream();
    /// ```
    pub fn empty_stream() -> Act {
        Act::events([])
    }

    /// Anthropic's stream that fails before content: `message_start`, then an `error` event
    /// with `overloaded_error`.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::overloaded_event();
    /// ```
    pub fn overloaded_event() -> Act {
        Act::events([
            ScriptedEvent::new("message_start", r#"{"type":"message_start"}"#),
            ScriptedEvent::new("error", ANTHROPIC_OVERLOADED),
        ])
    }

    /// These stream's first `count` events, then the connection cut mid-stream.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, ScriptedEvent};
    /// let _ = Act::events(ScriptedEvent::numbered(5)).cut_after(3);
    /// ```
    pub fn cut_after(self, count: usize) -> Act {
        self.ending(count, StreamEnd::Cut)
    }

    /// This stream's first `count` events, then silence with the connection open.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, ScriptedEvent};
    /// let _ = Act::events(ScriptedEvent::numbered(5)).stall_after(2);
    /// ```
    pub fn stall_after(self, count: usize) -> Act {
        self.ending(count, StreamEnd::Stall)
    }

    /// This stream's first `count` events, then a clean end before its last event: a
    /// graceful close before completion.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, ScriptedEvent};
    /// let _ = Act::events(ScriptedEvent::numbered(5)).close_after(2);
    /// ```
    pub fn close_after(self, count: usize) -> Act {
        self.ending(count, StreamEnd::Clean)
    }

    fn ending(self, count: usize, end: StreamEnd) -> Act {
        match self.kind {
            ActKind::Events { events, .. } => Act {
                kind: ActKind::Events {
                    upto: count.min(events.len()),
                    events,
                    end,
                },
            },
            // Not a stream: nothing to end early.
            kind => Act { kind },
        }
    }

    /// A stream that resumes: the events after the request's `Last-Event-ID` (the event
    /// with that `id`), or after its `starting_after` query parameter (the event whose data's
    /// `sequence_number` is that), or all of them for a request with neither.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, ScriptedEvent};
    /// let _ = Act::resume(ScriptedEvent::numbered(5));
    /// ```
    pub fn resume(events: impl IntoIterator<Item = ScriptedEvent>) -> Act {
        Act {
            kind: ActKind::Resume {
                events: events.into_iter().collect(),
                replay_last: false,
            },
        }
    }

    /// Like [`resume`](Act::resume), but the stream starts again at the cursor's own event:
    /// a server that replays the last event it sent.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, ScriptedEvent};
    /// let _ = Act::resume_replaying_last(ScriptedEvent::numbered(5));
    /// ```
    pub fn resume_replaying_last(events: impl IntoIterator<Item = ScriptedEvent>) -> Act {
        Act {
            kind: ActKind::Resume {
                events: events.into_iter().collect(),
                replay_last: true,
            },
        }
    }

    /// This answer with one more header (an act that is not an answer is unchanged).
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::status(503).with_header("x-should-retry", "false");
    /// ```
    pub fn with_header(mut self, name: &str, value: &str) -> Act {
        if let ActKind::Answer(canned) = &mut self.kind {
            canned.headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// This answer with this body (an act that is not an answer is unchanged).
    ///
    /// ```
    /// let _ = retry_runtime::testing::Act::status(503).with_body("down");
    /// ```
    pub fn with_body(mut self, body: &str) -> Act {
        if let ActKind::Answer(canned) = &mut self.kind {
            body.clone_into(&mut canned.body);
        }
        self
    }

    /// This act `count` times over: `Act::unavailable().times(3)`.
    ///
    /// ```
    /// assert_eq!(retry_runtime::testing::Act::unavailable().times(3).len(), 3);
    /// ```
    pub fn times(self, count: usize) -> Vec<Act> {
        vec![self; count]
    }
}

/// One server-sent event of a scripted stream: its type, data and, if given, its ID.
///
/// ```
/// use retry_runtime::testing::ScriptedEvent;
///
/// let event = ScriptedEvent::new("content_block_delta", r#"{"text":"hi"}"#).with_id("4");
/// assert_eq!(event.to_wire(), "id: 4\nevent: content_block_delta\ndata: {\"text\":\"hi\"}\n\n");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedEvent {
    pub(crate) id: Option<String>,
    event: Option<String>,
    data: String,
}

impl ScriptedEvent {
    /// An event of type `event` with `data` (one `data:` line per line of it).
    ///
    /// ```
    /// let _ = retry_runtime::testing::ScriptedEvent::new("ping", "{}");
    /// ```
    pub fn new(event: &str, data: &str) -> ScriptedEvent {
        ScriptedEvent {
            id: None,
            event: Some(event.to_owned()),
            data: data.to_owned(),
        }
    }

    /// An unnamed event (`message`), as OpenAI sends its chat chunks.
    ///
    /// ```
    /// let _ = retry_runtime::testing::ScriptedEvent::data(r#"{"choices":[]}"#);
    /// ```
    pub fn data(data: &str) -> ScriptedEvent {
        ScriptedEvent {
            id: None,
            event: None,
            data: data.to_owned(),
        }
    }

    /// This event with an `id:` line, the cursor a resume names in `Last-Event-ID`.
    ///
    /// ```
    /// let _ = retry_runtime::testing::ScriptedEvent::data("{}").with_id("1");
    /// ```
    pub fn with_id(mut self, id: &str) -> ScriptedEvent {
        self.id = Some(id.to_owned());
        self
    }

    /// `count` Anthropic text deltas, with IDs `1` to `count`, the text of the n-th being
    /// `"n "`: content, each one, so a stream of them commits at its first.
    ///
    /// ```
    /// assert_eq!(retry_runtime::testing::ScriptedEvent::numbered(3).len(), 3);
    /// ```
    pub fn numbered(count: usize) -> Vec<ScriptedEvent> {
        (1..=count)
            .map(|n| {
                let data = format!(
                    r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{n} "}}}}"#
                );
                ScriptedEvent::new("content_block_delta", &data).with_id(&n.to_string())
            })
            .collect()
    }

    /// The event as it goes on the wire, its blank line included.
    ///
    /// ```
    /// assert_eq!(retry_runtime::testing::ScriptedEvent::data("a\nb").to_wire(), "data: a\ndata: b\n\n");
    /// ```
    pub fn to_wire(&self) -> String {
        let mut wire = String::new();
        if let Some(id) = &self.id {
            wire.push_str(&format!("id: {id}\n"));
        }
        if let Some(event) = &self.event {
            wire.push_str(&format!("event: {event}\n"));
        }
        for line in self.data.split('\n') {
            wire.push_str(&format!("data: {line}\n"));
        }
        wire.push('\n');
        wire
    }

    /// The `sequence_number` of a JSON data object that has one (OpenAI Responses' cursor).
    pub(crate) fn sequence_number(&self) -> Option<u64> {
        let at = self.data.find("\"sequence_number\"")? + "\"sequence_number\"".len();
        let rest = self.data[at..].trim_start().strip_prefix(':')?.trim_start();
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        rest[..digits].parse().ok()
    }
}

/// The events a resumed stream sends for a request with this `Last-Event-ID` and this
/// `starting_after`.
pub(crate) fn resumed<'a>(
    events: &'a [ScriptedEvent],
    replay_last: bool,
    last_event_id: Option<&str>,
    starting_after: Option<u64>,
) -> &'a [ScriptedEvent] {
    let cursor = match (last_event_id, starting_after) {
        (Some(id), _) => events.iter().position(|e| e.id.as_deref() == Some(id)),
        (None, Some(after)) => events
            .iter()
            .position(|e| e.sequence_number() == Some(after)),
        (None, None) => return events,
    };
    match cursor {
        Some(at) if replay_last => &events[at..],
        Some(at) => &events[at + 1..],
        // A cursor the script never sent: nothing to resume from, so nothing.
        None => &[],
    }
}
