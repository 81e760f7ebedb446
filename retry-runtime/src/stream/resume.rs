//! Resumption: where a cut stream continues from ([`ResumeFrom`]), what a stream says of it
//! ([`Resumable`]), and the cursor a [`RetryStream`](super::RetryStream) keeps across its
//! attempts. No I/O: the stream's polls ask it whether an item is new and whether a failure
//! resumes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::rules::read::Numbered;
use crate::class::Class;
use crate::engine::Resuming;

/// How long a resumed stream may stay silent before its first new content, unless
/// [`idle_timeout`](super::RetryStream::idle_timeout) says otherwise: a minute, MCP's
/// TypeScript SDK's default request timeout. A resume that brings nothing in that time is a
/// failed attempt ([`Ending::NothingNew`](crate::Ending::NothingNew)).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(retry_runtime::DEFAULT_RESUME_SILENCE, Duration::from_secs(60));
/// ```
pub const DEFAULT_RESUME_SILENCE: Duration = Duration::from_secs(60);

/// Where a cut stream continues from: what the function given to
/// [`RetryStream::resume`](super::RetryStream::resume) reopens it with.
///
/// ```
/// use retry_runtime::ResumeFrom;
/// use std::time::Duration;
///
/// let from = ResumeFrom::new(Some("42"), None, Some(Duration::from_millis(500)), 2);
/// assert_eq!(from.last_event_id(), Some("42"));
/// assert_eq!(from.sequence(), None);
/// assert_eq!(from.reconnection_time(), Some(Duration::from_millis(500)));
/// assert_eq!(from.attempt(), 2);
/// assert_eq!(from.to_string(), "event 42");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeFrom {
    last_event_id: Option<Arc<str>>,
    sequence: Option<u64>,
    reconnection_time: Option<Duration>,
    attempt: u32,
}

impl ResumeFrom {
    /// A resume point: the last event ID, the last sequence number, the server's
    /// reconnection time and the attempt (from 1) the reopen is. For tests and examples.
    pub fn new(
        last_event_id: Option<&str>,
        sequence: Option<u64>,
        reconnection_time: Option<Duration>,
        attempt: u32,
    ) -> ResumeFrom {
        ResumeFrom {
            last_event_id: last_event_id.map(Arc::from),
            sequence,
            reconnection_time,
            attempt,
        }
    }

    /// The stream's last event ID (the SSE `id:` field, which persists across events): send
    /// it back as the `Last-Event-ID` header. `None` if the stream gave none.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The sequence number of the last item the caller got (or that is held for it), from
    /// [`RetryStream::cursor`](super::RetryStream::cursor): the Responses API's
    /// `starting_after`.
    pub fn sequence(&self) -> Option<u64> {
        self.sequence
    }

    /// The reconnection time the server last asked for (the SSE `retry:` field); the wait
    /// before this reopen was at least as long.
    pub fn reconnection_time(&self) -> Option<Duration> {
        self.reconnection_time
    }

    /// The attempt this reopen is, from 1 (the first request was attempt 1): it counts every
    /// request, as the report's attempts do.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

/// `sequence N` if there is a sequence number, else `event ID`.
impl fmt::Display for ResumeFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.sequence, &self.last_event_id) {
            (Some(sequence), _) => write!(f, "sequence number {sequence}"),
            (None, Some(id)) => write!(f, "event {id}"),
            (None, None) => f.write_str("its start"),
        }
    }
}

/// A stream that can say where it could be resumed from: what the server told it (its last
/// event ID and reconnection time), whether or not an event was dispatched with it.
/// [`sse::Events`](crate::sse::Events) and `http::ModelEvents` implement it; a stream whose
/// cursor is in its data implements it with the defaults and gives
/// [`RetryStream::cursor`](super::RetryStream::cursor).
///
/// ```
/// use retry_runtime::Resumable;
///
/// struct Sequenced;
/// impl Resumable for Sequenced {}
/// assert_eq!(Sequenced.last_event_id(), None);
/// assert_eq!(Sequenced.reconnection_time(), None);
/// ```
pub trait Resumable {
    /// The last event ID the server set (an `id:` field, in a dispatched event or not).
    fn last_event_id(&self) -> Option<&str> {
        None
    }

    /// The reconnection time the server last asked for (a `retry:` field).
    fn reconnection_time(&self) -> Option<Duration> {
        None
    }
}

/// What an item is to the caller ([`Resume::take`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Taken {
    /// Delivered (or held) before: dropped.
    Replay,
    /// New; `first_progress` if it is a resume's first content, after which the resume's
    /// silence bound gives way to the stream's own timers.
    New { first_progress: bool },
}

/// How a [`RetryStream`](super::RetryStream) resumes (`reopen`, and how it reads a cursor
/// from its stream `S`; an item's sequence number is the cursor rule's), and its cursor.
pub(super) struct Resume<S, Re> {
    pub(super) reopen: Option<Re>,
    pub(super) last_event_id: fn(&S) -> Option<&str>,
    pub(super) reconnection_time: fn(&S) -> Option<Duration>,
    pub(super) silence: Duration,
    pub(super) cursor: Cursor,
}

/// Where the stream is: its cursor and what the current attempt is. Whether it has delivered
/// output is the stream's one fact of that (`StreamCore::committed`), not the cursor's.
#[derive(Debug, Default)]
pub(super) struct Cursor {
    id: Option<Arc<str>>,
    sequence: Option<u64>,
    reconnect: Option<Duration>,
    attempt: ResumeAttempt,
    /// The attempts made, and the time waited, when the ladder was last renewed.
    renewed: (u32, Duration),
}

/// What the current attempt is, and what it has brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResumeAttempt {
    /// A fresh open; with `progress` once it has brought content.
    Fresh { progress: bool },
    /// A resume from the cursor: `replaying` while its first items repeat the cursor's event
    /// ID, with `progress` once it has brought content the caller had not had.
    Resumed { replaying: bool, progress: bool },
}

impl Default for ResumeAttempt {
    fn default() -> Self {
        ResumeAttempt::Fresh { progress: false }
    }
}

impl ResumeAttempt {
    fn is_resumed(self) -> bool {
        matches!(self, ResumeAttempt::Resumed { .. })
    }

    fn progress(self) -> bool {
        match self {
            ResumeAttempt::Fresh { progress } | ResumeAttempt::Resumed { progress, .. } => progress,
        }
    }
}

/// No cursor: the default reads.
fn none<S>(_: &S) -> Option<&str> {
    None
}

fn no_time<S>(_: &S) -> Option<Duration> {
    None
}

impl<S, Re> Resume<S, Re> {
    /// Not resumable: a cut is decided as today.
    pub(super) fn off() -> Resume<S, Re> {
        Resume {
            reopen: None,
            last_event_id: none,
            reconnection_time: no_time,
            silence: DEFAULT_RESUME_SILENCE,
            cursor: Cursor::default(),
        }
    }

    /// This resume with another reopen, reading its cursor from the stream.
    pub(super) fn reopen_with<Re2>(
        self,
        reopen: Re2,
        last_event_id: fn(&S) -> Option<&str>,
        reconnection_time: fn(&S) -> Option<Duration>,
    ) -> Resume<S, Re2> {
        Resume {
            reopen: Some(reopen),
            last_event_id,
            reconnection_time,
            silence: self.silence,
            cursor: Cursor::default(),
        }
    }

    /// Whether the stream resumes at all.
    #[inline]
    pub(super) fn is_on(&self) -> bool {
        self.reopen.is_some()
    }

    /// Whether the current attempt is a resume that has brought nothing new yet.
    pub(super) fn is_silent_resume(&self) -> bool {
        matches!(
            self.cursor.attempt,
            ResumeAttempt::Resumed {
                progress: false,
                ..
            }
        )
    }

    /// Whether the current attempt is a resume.
    pub(super) fn is_resumed(&self) -> bool {
        self.cursor.attempt.is_resumed()
    }

    /// An attempt begins: a resume, or (`false`) a fresh open, which starts from nothing.
    pub(super) fn begin(&mut self, resumed: bool) {
        let cursor = &mut self.cursor;
        if !resumed {
            *cursor = Cursor {
                renewed: cursor.renewed,
                ..Cursor::default()
            };
        }
        cursor.attempt = match resumed {
            true => ResumeAttempt::Resumed {
                replaying: true,
                progress: false,
            },
            false => ResumeAttempt::Fresh { progress: false },
        };
    }

    /// What an item `stream` just gave (`numbered` by the cursor rule) is to the caller: a
    /// replay to drop (an item at or below the sequence cursor, or one replayed with the
    /// cursor's event ID at the start of a resume), or new. A new item that is `content` (by
    /// the commit rule: a priming event or a keep-alive is not) is progress, which renews the
    /// ladder; the first in a resume says so.
    #[inline]
    pub(super) fn take(&mut self, stream: &S, numbered: Numbered, content: bool) -> Taken {
        let cursor = &mut self.cursor;
        if let Numbered::At(number) = numbered {
            if cursor.sequence.is_some_and(|last| number <= last) {
                return Taken::Replay;
            }
            cursor.sequence = Some(number);
        } else if numbered == Numbered::NoRule
            && let ResumeAttempt::Resumed { replaying, .. } = &mut cursor.attempt
            && *replaying
        {
            let id = (self.last_event_id)(stream);
            if id.is_some() && id == cursor.id.as_deref() {
                return Taken::Replay;
            }
            *replaying = false;
        }
        let first_progress = match &mut cursor.attempt {
            ResumeAttempt::Fresh { progress } => {
                *progress |= content;
                false
            }
            ResumeAttempt::Resumed { progress, .. } => {
                let first = content && !*progress;
                *progress |= content;
                first
            }
        };
        Taken::New { first_progress }
    }

    /// What `stream` says of where it is, noted when its attempt ends: its last event ID and
    /// reconnection time, kept from earlier attempts where it says nothing.
    pub(super) fn note(&mut self, stream: &S) {
        if !self.is_on() {
            return;
        }
        let cursor = &mut self.cursor;
        if let Some(id) = (self.last_event_id)(stream)
            && cursor.id.as_deref() != Some(id)
        {
            cursor.id = Some(Arc::from(id));
        }
        if let Some(time) = (self.reconnection_time)(stream) {
            cursor.reconnect = Some(time);
        }
    }

    /// Whether a failure of `class` resumes: the stream has a cursor, and the failure is a
    /// cut, a stall or an early close (or a failed reopen, whatever its class). A provider's
    /// error event is the generation failing, and is decided as without a cursor.
    pub(super) fn resumes(&self, class: Class, opened: bool) -> bool {
        let cursor = &self.cursor;
        self.is_on()
            && (cursor.id.is_some() || cursor.sequence.is_some())
            && (!opened && cursor.attempt.is_resumed()
                || matches!(class, Class::Transport | Class::Timeout))
    }

    /// The cursor as a notice says it.
    pub(super) fn text(&self) -> String {
        self.from(0).to_string()
    }

    /// How the failure is decided, after `attempts` and `waited`, and whether it `resumes`
    /// (after an attempt that `opened`, or not): a resume that brought something new renews
    /// the ladder, so its failure, a resume or not, is the first of a new one.
    pub(super) fn resuming<'a>(
        &mut self,
        attempts: u32,
        waited: Duration,
        text: &'a str,
        (resumes, opened): (bool, bool),
    ) -> Resuming<'a> {
        let cursor = &mut self.cursor;
        // Progress renews the ladder for a resume, and for any failure after a resume that
        // brought something new; a fresh open's first content (a restart's, which repeats
        // what was delivered) renews it only where the failure resumes, or a stream that
        // restarts after its commit point would never run out of attempts.
        if cursor.attempt.progress() && (resumes || cursor.attempt.is_resumed()) {
            cursor.renewed = (attempts.saturating_sub(1), waited);
        }
        Resuming {
            attempts_before: cursor.renewed.0,
            waited_before: cursor.renewed.1,
            resumes,
            reopen: resumes && cursor.attempt.is_resumed() && !opened,
            reconnect: cursor.reconnect,
            from: text,
        }
    }

    /// The resume point for `attempt`.
    pub(super) fn from(&self, attempt: u32) -> ResumeFrom {
        let cursor = &self.cursor;
        ResumeFrom {
            last_event_id: cursor.id.clone(),
            sequence: cursor.sequence,
            reconnection_time: cursor.reconnect,
            attempt,
        }
    }
}
