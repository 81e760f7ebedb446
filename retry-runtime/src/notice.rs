//! Telling people and telemetry while a ladder waits: every retry and every give-up is a
//! `tracing` event (target `retry`) and a [`RetryEvent`] for the hooks of the enclosing
//! [`Turn`](crate::Turn) and of the process; a turn that ends before its work is one more
//! ([`TurnEnded`]). Hooks receive either as a [`Notice`].

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::class::Class;
pub use crate::class::Reached;
use crate::redact::Redacted;
use crate::verdict::StopReason;

/// A hook that receives each [`Notice`] as it happens.
pub type Hook = Arc<dyn Fn(&Notice<'_>) + Send + Sync>;

/// What a hook hears: a failed attempt and what the ladder does about it, or a turn that
/// ended before its work did. Its `Display` is a sentence for a person.
///
/// ```
/// use retry_runtime::notice::{Notice, TurnEnded};
/// use retry_runtime::notice::TurnEnd;
/// use retry_runtime::Turn;
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let heard = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&heard);
/// let turn = Turn::new(Duration::from_secs(2)).on_notice(move |notice| {
///     if let Notice::TurnEnded(ended) = notice {
///         sink.lock().unwrap().push(ended.end);
///     }
/// });
/// turn.run(std::future::pending::<()>()).await;
/// assert_eq!(*heard.lock().unwrap(), [TurnEnd::Expired]);
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy)]
pub enum Notice<'a> {
    /// An attempt failed; the ladder retries or gives up.
    Retry(RetryEvent<'a>),
    /// A turn ended before its work: the work was dropped.
    TurnEnded(TurnEnded),
}

impl<'a> Notice<'a> {
    /// The retry event, if this is one.
    pub fn retry(&self) -> Option<&RetryEvent<'a>> {
        match self {
            Notice::Retry(event) => Some(event),
            Notice::TurnEnded(_) => None,
        }
    }
}

impl fmt::Display for Notice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::Retry(event) => event.fmt(f),
            Notice::TurnEnded(ended) => ended.fmt(f),
        }
    }
}

/// Why a [`Turn`](crate::Turn) ended before its work did.
///
/// ```
/// use retry_runtime::notice::TurnEnd;
/// assert_eq!(TurnEnd::Expired.to_string(), "its deadline passed");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnEnd {
    /// Its deadline passed.
    Expired,
    /// It, or a turn around it, was cancelled.
    Cancelled,
}

impl fmt::Display for TurnEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TurnEnd::Expired => "its deadline passed",
            TurnEnd::Cancelled => "it was cancelled",
        })
    }
}

/// A turn that ended before its work did: its deadline passed, or it was cancelled, and its
/// work was dropped. Heard once, by the turn's hooks (and those of the turns around it) and
/// the process's.
///
/// ```
/// use retry_runtime::notice::TurnEnded;
/// use retry_runtime::notice::TurnEnd;
/// use std::time::Duration;
///
/// let ended = TurnEnded::new(TurnEnd::Expired, Duration::from_millis(1500), 1, 0);
/// assert_eq!(
///     ended.to_string(),
///     "the turn ended after 1500 ms (its deadline passed): 1 call dropped in an attempt, 0 waits cut short",
/// );
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnEnded {
    /// Why it ended.
    pub end: TurnEnd,
    /// How long it ran.
    pub elapsed: Duration,
    /// The calls dropped in the middle of an attempt.
    pub in_flight: u32,
    /// The waits cut short.
    pub cut_waits: u32,
}

impl TurnEnded {
    /// A turn that ended for `end` after `elapsed`, with these calls in flight and waits cut.
    pub const fn new(end: TurnEnd, elapsed: Duration, in_flight: u32, cut_waits: u32) -> Self {
        TurnEnded {
            end,
            elapsed,
            in_flight,
            cut_waits,
        }
    }
}

impl fmt::Display for TurnEnded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the turn ended after {} ms ({}): {} call{} dropped in an attempt, {} wait{} cut short",
            self.elapsed.as_millis(),
            self.end,
            self.in_flight,
            if self.in_flight == 1 { "" } else { "s" },
            self.cut_waits,
            if self.cut_waits == 1 { "" } else { "s" },
        )
    }
}

/// What the ladder does after the failure an event reports.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// It waits `backoff`, then makes the next attempt.
    Retry {
        /// The wait chosen.
        backoff: Duration,
    },
    /// A stream that had delivered output restarts (`restart_after_commit`): it waits
    /// `backoff`, then makes the next attempt, and the caller discards what it had.
    Restart {
        /// The wait chosen.
        backoff: Duration,
    },
    /// A resumable stream that was cut, stalled or closed before it was complete continues
    /// from its cursor ([`RetryEvent::resume_from`]): it waits `backoff`, then reopens with
    /// [`RetryStream::resume`](crate::RetryStream::resume). Nothing is delivered twice.
    Resume {
        /// The wait chosen.
        backoff: Duration,
    },
    /// Before its next attempt, the call waits for its upstream (an `Upstream`): paused
    /// by a provider's hint of when to come back (for every call on it), or (`gated`) held by
    /// its outage gate while another call probes, for up to `wait`.
    Hold {
        /// The upstream's name.
        upstream: &'static str,
        /// The wait: a pause's length, or the most a gate's may last.
        wait: Duration,
        /// Held by the outage gate, rather than paused.
        gated: bool,
    },
    /// Before its next attempt, the call waits `wait` for its upstream's pacer: the key has not
    /// what the attempt costs, as its provider last said (or as its refusals taught), and a
    /// slot is reserved at the wait's end.
    Paced {
        /// The upstream's name.
        upstream: &'static str,
        /// The wait.
        wait: Duration,
    },
    /// The call moves to the next upstream of its ordered set ([`Upstreams`](crate::Upstreams))
    /// at once, with no wait: `from` failed in a way another may not.
    Move {
        /// The upstream that failed.
        from: &'static str,
        /// The upstream the next attempt goes to.
        to: &'static str,
    },
    /// It gives up and returns the failure.
    GiveUp {
        /// Why.
        reason: StopReason,
    },
}

/// One failed attempt and what the ladder does about it.
///
/// Its `Display` is a sentence for a person:
///
/// ```
/// use retry_runtime::{testing, Class, Policy, Retry, Turn};
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let told = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&told);
/// let turn = Turn::new(Duration::from_secs(180))
///     .on_notice(move |notice| sink.lock().unwrap().push(notice.to_string()));
/// let model = Retry::new(&Policy::AVAILABILITY).named("model");
/// testing::scope(turn.run(model.run(async |attempt| {
///     if attempt < 3 { Err(Class::Unavailable { retry_after: None }) } else { Ok(()) }
/// })))
/// .await;
/// assert_eq!(*told.lock().unwrap(), [
///     "model is unavailable: retrying (2 of 4) in 250 ms",
///     "model is unavailable: retrying (3 of 4) in 500 ms",
/// ]);
/// # }
/// ```
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct RetryEvent<'a> {
    /// The operation's name: the function's path, or the attribute's `name`.
    pub op: &'a str,
    /// The policy's name.
    pub policy: &'static str,
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// The attempts the policy allows.
    pub total: u32,
    /// The failure's class.
    pub class: Class,
    /// The failure's text, redacted (see [`redact`](crate::redact)): for telemetry, never
    /// for the person-facing sentence, which says what happened in the library's own words.
    pub error: Redacted<'a>,
    /// What happens next.
    pub action: Action,
    /// How far the attempt got: a stream cut after its head is not a server that could not
    /// be reached.
    pub reached: Reached,
    /// Where a resumable stream continues from, for [`Action::Resume`]: its last event ID,
    /// or its sequence number in decimal; `None` for every other action.
    pub resume_from: Option<&'a str>,
}

impl fmt::Debug for RetryEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryEvent")
            .field("op", &self.op)
            .field("policy", &self.policy)
            .field("attempt", &self.attempt)
            .field("total", &self.total)
            .field("class", &self.class)
            .field("error", &self.error)
            .field("action", &self.action)
            .field("reached", &self.reached)
            .field("resume_from", &self.resume_from)
            .finish()
    }
}

/// A wait for an upstream, in a person's words: what the upstream is, for whom, and how long.
/// A wait as a person reads it: `120 ms`, `1.5 s`, `42 s`.
fn in_words(wait: Duration) -> String {
    let seconds = wait.as_secs_f64();
    if wait.as_millis() < 1000 {
        format!("{} ms", wait.as_millis())
    } else if seconds < 10.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{seconds:.0} s")
    }
}

fn hold(
    f: &mut fmt::Formatter<'_>,
    upstream: &str,
    class: Class,
    wait: Duration,
    gated: bool,
) -> fmt::Result {
    let wait = in_words(wait);
    match (gated, class) {
        (true, _) => write!(
            f,
            "{upstream} is unavailable: another call is checking, waiting up to {wait}"
        ),
        (false, Class::RateLimited { .. }) => {
            write!(
                f,
                "{upstream} is rate-limited for every call: waiting {wait}"
            )
        }
        (false, _) => write!(
            f,
            "{upstream} is unavailable for every call: waiting {wait}"
        ),
    }
}

/// A sentence for a person, in the library's own words: the op, the class in words, the
/// attempt and the wait, or why it gave up. It never carries the error's text (a server's
/// message or a URL may hold a secret); that is on [`RetryEvent::error`], redacted.
impl fmt::Display for RetryEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Action::Hold {
            upstream,
            wait,
            gated,
        } = self.action
        {
            return hold(f, upstream, self.class, wait, gated);
        }
        if let Action::Paced { upstream, wait } = self.action {
            return write!(f, "{upstream}'s rate limit: waiting {}", in_words(wait));
        }
        if let Action::Move { from, to } = self.action {
            return write!(f, "{from} {}: using {to}", self.class.state());
        }
        let state = self.class.state();
        let op = self.op;
        let resume_failed = matches!(
            self.action,
            Action::GiveUp {
                reason: StopReason::ResumeFailed
            }
        );
        match (self.class, self.reached) {
            // The refusal answers the resume, not the request: never "answered with an error".
            _ if resume_failed => {
                write!(f, "{op} could not resume its stream")?;
                if self.reached == Reached::Output {
                    f.write_str(" after it had delivered output")?;
                }
            }
            (Class::Transport, Reached::Stream) => {
                write!(f, "{op}'s stream was cut before its first content")?;
            }
            (Class::Transport, Reached::Output) => {
                write!(f, "{op}'s stream was cut after it had delivered output")?;
            }
            (Class::Transport, Reached::Response) => {
                write!(f, "{op} answered, then its response was cut off")?;
            }
            (Class::Timeout, Reached::Response) => {
                write!(f, "{op} answered, then its response timed out")?;
            }
            (_, Reached::Output) => {
                write!(f, "{op} {state} after its stream had delivered output")?
            }
            _ => write!(f, "{op} {state}")?,
        }
        match self.action {
            Action::Retry { backoff } => write!(
                f,
                ": retrying ({} of {}) in {} ms",
                self.attempt.saturating_add(1),
                self.total,
                backoff.as_millis()
            ),
            Action::Restart { backoff } => write!(
                f,
                ": restarting the stream from the start ({} of {}) in {} ms",
                self.attempt.saturating_add(1),
                self.total,
                backoff.as_millis()
            ),
            Action::Resume { backoff } => write!(
                f,
                ": resuming from {} in {} ms",
                self.resume_from.unwrap_or("its cursor"),
                backoff.as_millis()
            ),
            // Told apart above, in their own words.
            Action::Hold { .. } | Action::Paced { .. } | Action::Move { .. } => Ok(()),
            Action::GiveUp { reason } => write!(
                f,
                ": gave up after {} of {} attempts: {reason}",
                self.attempt, self.total
            ),
        }
    }
}

static PROCESS_HOOK: RwLock<Option<Hook>> = RwLock::new(None);

/// Whether [`PROCESS_HOOK`] holds a hook: a retry with none set reads this word, not the lock.
static HAS_PROCESS_HOOK: AtomicBool = AtomicBool::new(false);

/// Register `hook` for every retry event in the process (replacing any earlier one).
///
/// A hook runs on the retrying task, between the failure and the wait: keep it quick. A hook
/// that panics is caught and the call goes on.
///
/// ```
/// retry_runtime::notice::set_process_hook(|event| eprintln!("{event}"));
/// ```
pub fn set_process_hook(hook: impl Fn(&Notice<'_>) + Send + Sync + 'static) {
    let mut slot = PROCESS_HOOK.write().unwrap_or_else(|e| e.into_inner());
    *slot = Some(Arc::new(hook));
    HAS_PROCESS_HOOK.store(true, Ordering::Release);
}

/// Remove the process's hook.
pub fn clear_process_hook() {
    let mut slot = PROCESS_HOOK.write().unwrap_or_else(|e| e.into_inner());
    *slot = None;
    HAS_PROCESS_HOOK.store(false, Ordering::Release);
}

/// Emit `event` to tracing, to the hooks `hooks` calls its argument with (the enclosing
/// turns'), and to the process's hook.
pub(crate) fn emit(hooks: impl FnOnce(&mut dyn FnMut(&Hook)), event: &RetryEvent<'_>) {
    emit_to(hooks, &Notice::Retry(*event));
}

/// Emit `notice` to tracing, to the hooks `hooks` calls its argument with, in place, and to
/// the process's hook.
pub(crate) fn emit_to(hooks: impl FnOnce(&mut dyn FnMut(&Hook)), notice: &Notice<'_>) {
    trace(notice);
    hooks(&mut |hook| call(hook, notice));
    if !HAS_PROCESS_HOOK.load(Ordering::Acquire) {
        return;
    }
    let process = PROCESS_HOOK
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let Some(hook) = process {
        call(&hook, notice);
    }
}

fn call(hook: &Hook, notice: &Notice<'_>) {
    // A harness's hook must not be able to break the call it reports on.
    if catch_unwind(AssertUnwindSafe(|| hook(notice))).is_err() {
        let op = notice.retry().map_or("turn", |event| event.op);
        tracing::error!(target: "retry", op, "a retry hook panicked; the call goes on");
    }
}

fn trace(notice: &Notice<'_>) {
    let event = match notice {
        Notice::Retry(event) => event,
        Notice::TurnEnded(ended) => {
            tracing::warn!(
                target: "retry",
                end = match ended.end {
                    TurnEnd::Expired => "expired",
                    TurnEnd::Cancelled => "cancelled",
                },
                elapsed_ms = u64::try_from(ended.elapsed.as_millis()).unwrap_or(u64::MAX),
                in_flight = ended.in_flight,
                cut_waits = ended.cut_waits,
                "{ended}"
            );
            return;
        }
    };
    match event.action {
        // A restart and a resume are retries that say so: a field each, recorded only there.
        Action::Retry { backoff } | Action::Restart { backoff } | Action::Resume { backoff } => {
            tracing::info!(
                target: "retry",
                op = event.op,
                attempt = event.attempt,
                total = event.total,
                backoff_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
                class = event.class.name(),
                error = %event.error,
                restart = matches!(event.action, Action::Restart { .. }).then_some(true),
                resume_from = matches!(event.action, Action::Resume { .. })
                    .then(|| event.resume_from.unwrap_or_default()),
                "{event}"
            );
        }
        Action::Hold { .. } | Action::Paced { .. } | Action::Move { .. } => trace_upstream(event),
        Action::GiveUp { reason } => tracing::warn!(
            target: "retry",
            op = event.op,
            attempt = event.attempt,
            total = event.total,
            class = event.class.name(),
            error = %event.error,
            reason = reason.name(),
            "{event}"
        ),
    }
}

/// The log of a call's wait for its upstream, or of its move to the next one.
fn trace_upstream(event: &RetryEvent<'_>) {
    match event.action {
        Action::Hold {
            upstream,
            wait,
            gated,
        } => tracing::info!(
            target: "retry",
            op = event.op,
            attempt = event.attempt,
            upstream,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            gated,
            class = event.class.name(),
            "{event}"
        ),
        Action::Move { from, to } => tracing::warn!(
            target: "retry",
            op = event.op,
            attempt = event.attempt,
            from,
            to,
            class = event.class.name(),
            error = %event.error,
            "{event}"
        ),
        Action::Paced { upstream, wait } => tracing::debug!(
            target: "retry",
            op = event.op,
            attempt = event.attempt,
            upstream,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            paced = true,
            "{event}"
        ),
        _ => {}
    }
}
