//! Telling people and telemetry while a ladder waits: every retry and every give-up is a
//! `tracing` event (target `retry`) and a [`RetryEvent`] for the hooks of the enclosing
//! [`Turn`](crate::Turn) and of the process.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::class::Class;
use crate::redact::Redacted;
use crate::turn;
use crate::verdict::StopReason;

/// A hook that receives each [`RetryEvent`] as it happens.
pub type Hook = Arc<dyn Fn(&RetryEvent<'_>) + Send + Sync>;

/// What the ladder does after the failure an event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// It waits `backoff`, then makes the next attempt.
    Retry {
        /// The wait chosen.
        backoff: Duration,
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
///     .on_notice(move |event| sink.lock().unwrap().push(event.to_string()));
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
    pub op: &'static str,
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
            .finish()
    }
}

/// A sentence for a person, in the library's own words: the op, the class in words, the
/// attempt and the wait, or why it gave up. It never carries the error's text (a server's
/// message or a URL may hold a secret); that is on [`RetryEvent::error`], redacted.
impl fmt::Display for RetryEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.class {
            Class::Transport => "could not be reached",
            Class::Unavailable { .. } => "is unavailable",
            Class::ServerError => "failed on its side",
            Class::Timeout => "timed out",
            Class::RateLimited { .. } => "is rate limited",
            Class::QuotaExhausted => "is out of quota",
            Class::InvalidOutput => "returned unusable output",
            Class::Cancelled => "was cancelled",
            Class::Definitive => "answered with an error",
        };
        write!(f, "{} {state}", self.op)?;
        match self.action {
            Action::Retry { backoff } => write!(
                f,
                ": retrying ({} of {}) in {} ms",
                self.attempt.saturating_add(1),
                self.total,
                backoff.as_millis()
            ),
            Action::GiveUp { reason } => write!(
                f,
                ": gave up after {} of {} attempts: {reason}",
                self.attempt, self.total
            ),
        }
    }
}

static PROCESS_HOOK: RwLock<Option<Hook>> = RwLock::new(None);

/// Register `hook` for every retry event in the process (replacing any earlier one).
///
/// A hook runs on the retrying task, between the failure and the wait: keep it quick. A hook
/// that panics is caught and the call goes on.
///
/// ```
/// retry_runtime::notice::set_process_hook(|event| eprintln!("{event}"));
/// ```
pub fn set_process_hook(hook: impl Fn(&RetryEvent<'_>) + Send + Sync + 'static) {
    let mut slot = PROCESS_HOOK.write().unwrap_or_else(|e| e.into_inner());
    *slot = Some(Arc::new(hook));
}

/// Remove the process's hook.
pub fn clear_process_hook() {
    let mut slot = PROCESS_HOOK.write().unwrap_or_else(|e| e.into_inner());
    *slot = None;
}

/// Emit `event` to tracing and to the turn's and the process's hooks.
pub(crate) fn emit(event: &RetryEvent<'_>) {
    trace(event);
    for hook in turn::hooks() {
        call(&hook, event);
    }
    let process = PROCESS_HOOK
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let Some(hook) = process {
        call(&hook, event);
    }
}

fn call(hook: &Hook, event: &RetryEvent<'_>) {
    // A harness's hook must not be able to break the call it reports on.
    if catch_unwind(AssertUnwindSafe(|| hook(event))).is_err() {
        tracing::error!(target: "retry", op = event.op, "a retry hook panicked; the call goes on");
    }
}

fn trace(event: &RetryEvent<'_>) {
    match event.action {
        Action::Retry { backoff } => tracing::info!(
            target: "retry",
            op = event.op,
            attempt = event.attempt,
            total = event.total,
            backoff_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
            class = event.class.name(),
            error = %event.error,
            "{event}"
        ),
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
