//! The verdict of a ladder that stopped: [`GaveUp`] and its [`StopReason`].

use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::class::{Class, Classify};
use crate::redact::Redacted;

/// Why a ladder stopped without a success.
///
/// ```
/// use retry_runtime::StopReason;
/// use std::time::Duration;
///
/// let reason = StopReason::Budget { wanted: Duration::from_secs(45), remaining: Duration::from_secs(20) };
/// assert_eq!(
///     reason.to_string(),
///     "the next wait (45000 ms) would outlive the budget (20000 ms left)",
/// );
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The failure was an answer (`Class::Definitive`): the same request gets the same one.
    Definitive,
    /// The failure's class is one this policy does not retry.
    NotRetried {
        /// The class of the failure.
        class: Class,
    },
    /// Every attempt the policy allows was made (or its one rate-limit retry was spent).
    Exhausted {
        /// The attempts made.
        attempts: u32,
    },
    /// The next wait would cross the deadline of the work this call serves.
    Budget {
        /// The wait the ladder would have taken.
        wanted: Duration,
        /// The time left before the deadline.
        remaining: Duration,
    },
    /// The far side asked for a longer wait than the policy honours: longer than its
    /// `max_retry_after`, or than what its `max_total_wait` has left.
    RetryAfterTooLong {
        /// The wait the far side asked for.
        wanted: Duration,
        /// The longest wait the policy would have taken.
        max: Duration,
    },
    /// The cross-call retry quota is spent: the call made its attempt but may not retry.
    Quota,
    /// The work was cancelled, or its turn expired. (A call's own literal budget running out
    /// is [`StopReason::Budget`].)
    Cancelled,
    /// An inner retried call already gave up on this failure; retrying at two layers would
    /// multiply the attempts.
    Nested,
    /// A stream failed after its commit point: it had delivered output, and a retry would
    /// repeat it (see [`Retry::stream`](crate::Retry::stream)).
    Committed,
    /// An HTTP layer could not copy the request for another attempt (a streamed body, or a
    /// `clone_request` that gave none), so it cannot send it again. The failure was not an
    /// answer, and a caller that builds the request anew may still retry it.
    NotResendable,
    /// The call's upstream held its next attempt (an outage's gate open, its probe out or not
    /// yet due) for as long as the call could wait: its ladder's allowance, its budget or its
    /// turn. The attempt was never sent; the outcome is unknown.
    Held,
    /// A stream that had been cut could not be resumed: its reopen was refused (a `405`, a
    /// `404` for an expired session) or failed with a class the policy does not retry. Its
    /// first request was sent and may have run (a tool call, a generation), so the outcome is
    /// unknown: [`GaveUp::is_undetermined`] is `true`, whatever the refusal's class.
    ResumeFailed,
}

impl StopReason {
    /// The reason's name in `snake_case`, as notices print it.
    pub const fn name(&self) -> &'static str {
        match self {
            StopReason::Definitive => "definitive",
            StopReason::NotRetried { .. } => "not_retried",
            StopReason::Exhausted { .. } => "exhausted",
            StopReason::Budget { .. } => "budget",
            StopReason::RetryAfterTooLong { .. } => "retry_after_too_long",
            StopReason::Quota => "quota",
            StopReason::Cancelled => "cancelled",
            StopReason::Nested => "nested",
            StopReason::Committed => "committed",
            StopReason::NotResendable => "not_resendable",
            StopReason::ResumeFailed => "resume_failed",
            StopReason::Held => "held",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Definitive => {
                f.write_str("the failure is an answer; retrying would repeat it")
            }
            StopReason::NotRetried { class } => {
                write!(f, "the policy does not retry a `{}` failure", class.name())
            }
            StopReason::Exhausted { attempts } => {
                write!(f, "all {attempts} attempts failed; the outcome is unknown")
            }
            StopReason::Budget { wanted, remaining } => write!(
                f,
                "the next wait ({} ms) would outlive the budget ({} ms left)",
                wanted.as_millis(),
                remaining.as_millis()
            ),
            StopReason::RetryAfterTooLong { wanted, .. } if *wanted == Duration::MAX => {
                f.write_str("the far side asked not to be retried")
            }
            StopReason::RetryAfterTooLong { wanted, max } => write!(
                f,
                "the far side asked to wait {} ms, longer than the policy allows ({} ms)",
                wanted.as_millis(),
                max.as_millis()
            ),
            StopReason::Quota => {
                f.write_str("the retry quota is spent; not retrying during an outage")
            }
            StopReason::Cancelled => f.write_str("the work was cancelled or its turn expired"),
            StopReason::Nested => {
                f.write_str("an inner retried call already gave up on this failure")
            }
            StopReason::Committed => {
                f.write_str("the stream had delivered output; a retry would repeat it")
            }
            StopReason::NotResendable => {
                f.write_str("the request could not be copied to send it again")
            }
            StopReason::ResumeFailed => f.write_str(
                "the stream could not be resumed; whether its request finished is unknown",
            ),
            StopReason::Held => f.write_str(
                "the upstream held the next attempt (its outage gate open) for as long as the call could wait; the outcome is unknown",
            ),
        }
    }
}

/// A call that did not succeed: the last error, unchanged, and why the ladder stopped.
///
/// Giving up never changes the verdict: a transient failure that persisted is still
/// undetermined ([`is_undetermined`](Self::is_undetermined)), never a pass and never a
/// definitive failure.
///
/// ```
/// use retry_runtime::{Class, Policy, Retry, StopReason};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let gave_up = Retry::new(&Policy::AVAILABILITY)
///     .run(async |_attempt| Err::<(), _>(Class::Unavailable { retry_after: None }))
///     .await
///     .unwrap_err();
/// assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
/// assert_eq!(gave_up.attempts(), 4);
/// assert!(gave_up.is_undetermined());
/// assert_eq!(gave_up.into_error(), Class::Unavailable { retry_after: None });
/// # }
/// ```
pub struct GaveUp<E> {
    error: E,
    reason: StopReason,
    attempts: u32,
    delivered: bool,
    waited: Duration,
    /// A call across an ordered set of upstreams: how it left each; boxed, made only there.
    upstreams: Option<Box<[UpstreamLeft]>>,
}

impl<E> GaveUp<E> {
    pub(crate) fn new(error: E, reason: StopReason, attempts: u32, waited: Duration) -> Self {
        GaveUp {
            error,
            reason,
            attempts,
            delivered: false,
            waited,
            upstreams: None,
        }
    }

    /// The same, from a call across an ordered set of upstreams, which left each as `left`.
    pub(crate) fn with_upstreams(mut self, left: Vec<UpstreamLeft>) -> Self {
        self.upstreams = (!left.is_empty()).then(|| left.into_boxed_slice());
        self
    }

    /// A call across an ordered set of upstreams ([`Upstreams`](crate::Upstreams)): each
    /// upstream, in the set's order, with its last failure in this call and why the call left
    /// it. Empty for a call on one upstream or none. The give-up's `Display` reads it as one
    /// sentence per upstream.
    ///
    /// ```
    /// use retry_runtime::{Class, LeftBecause, Policy, Retry, Upstream, Upstreams};
    ///
    /// static CLAUDE: Upstream = Upstream::new("claude");
    /// static GPT: Upstream = Upstream::new("gpt");
    /// static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);
    /// static TWICE: retry_runtime::Policy = Policy::AVAILABILITY.with_attempts(2);
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let gave_up = Retry::new(&TWICE)
    ///     .across(&MODELS)
    ///     .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }))
    ///     .await
    ///     .unwrap_err();
    /// let left: Vec<_> = gave_up.upstreams().iter().map(|left| (left.upstream(), left.why())).collect();
    /// assert_eq!(left, [("claude", LeftBecause::Moved), ("gpt", LeftBecause::GaveUp)]);
    /// assert!(gave_up.is_undetermined());
    /// assert!(gave_up.to_string().ends_with(
    ///     "claude is unavailable (unavailable): the call moved on at once; \
    ///      gpt is unavailable (unavailable): the call gave up on it"
    /// ));
    /// # }
    /// ```
    pub fn upstreams(&self) -> &[UpstreamLeft] {
        self.upstreams.as_deref().unwrap_or_default()
    }

    /// The same, from a stream that had (or had not) delivered output to the caller.
    pub(crate) fn with_delivered(mut self, delivered: bool) -> Self {
        self.delivered = delivered;
        self
    }

    /// Whether the call's stream had delivered output to the caller before it gave up: past
    /// its commit point, or resuming a stream that was (a reopen refused after the first
    /// events were shown). `false` for a call that is not a stream.
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Retry, testing};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // One item delivered, then a cut: the give-up says the caller has output.
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|_| async { Ok::<_, Class>(testing::stream_of(vec![Ok("Hel"), Err(Class::Transport)])) });
    /// let (items, _) = testing::scope(testing::collect(stream)).await;
    /// let gave_up = items.last().unwrap().as_ref().unwrap_err();
    /// assert!(gave_up.delivered_output());
    /// # }
    /// ```
    pub fn delivered_output(&self) -> bool {
        self.delivered
    }

    /// The last attempt's error.
    pub fn error(&self) -> &E {
        &self.error
    }

    /// The last attempt's error, unchanged.
    pub fn into_error(self) -> E {
        self.error
    }

    /// Why the ladder stopped.
    pub fn reason(&self) -> StopReason {
        self.reason
    }

    /// How many attempts were made.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// How long the ladder waited between attempts in all.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

impl<E> GaveUp<E> {
    /// "why; N attempts, M ms waiting)": the end of the `Display` and of the report.
    fn verdict(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; {} attempt{}, {} ms waiting)",
            self.reason,
            self.attempts,
            if self.attempts == 1 { "" } else { "s" },
            self.waited.as_millis()
        )
    }
}

impl<E: Classify> GaveUp<E> {
    /// The class of the last error.
    pub fn class(&self) -> Class {
        self.error.classify()
    }

    /// Whether the answer is still unknown: the last failure was transient (availability,
    /// a rate limit, a timeout, a cancelled turn), not an answer. Retries that ran out leave
    /// it undetermined, and so does a stream that could not be resumed
    /// ([`StopReason::ResumeFailed`]): the refusal answers the resume, not the request.
    pub fn is_undetermined(&self) -> bool {
        self.class().is_transient() || matches!(self.reason, StopReason::ResumeFailed)
    }
}

/// A give-up classifies as its last error: giving up never changes the verdict, so a
/// function that returns a `GaveUp` can itself be retried, and the nesting rule keeps the
/// outer ladder from repeating what the inner one gave up on.
///
/// ```
/// use retry_runtime::{Class, Classify, Policy, Retry};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let gave_up = Retry::new(&Policy::AVAILABILITY)
///     .run(async |_| Err::<(), _>(Class::Transport))
///     .await
///     .unwrap_err();
/// assert_eq!(gave_up.classify(), Class::Transport);
/// # }
/// ```
impl<E: Classify> Classify for GaveUp<E> {
    fn classify(&self) -> Class {
        self.error.classify()
    }
}

/// The error's text redacted (see [`redact`](crate::redact)), then why the ladder stopped.
impl<E: fmt::Display> fmt::Display for GaveUp<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (gave up: ", Redacted::new(&self.error))?;
        self.verdict(f)?;
        for left in self.upstreams() {
            write!(f, "; {left}")?;
        }
        Ok(())
    }
}

/// The error's `Debug` text redacted; [`GaveUp::error`] gives the error itself, untouched.
impl<E: fmt::Debug> fmt::Debug for GaveUp<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GaveUp")
            .field("error", &Redacted::debug(&self.error))
            .field("reason", &self.reason)
            .field("attempts", &self.attempts)
            .field("waited", &self.waited)
            .field("upstreams", &self.upstreams())
            .finish()
    }
}

/// A give-up is an error with no `source()`: its `Display` already carries the error, redacted,
/// and an error reporter walks `source()` to print each cause after it (anyhow's `{:#}` and
/// `{:?}`, eyre, tracing's error fields), which would print the error a second time, and in
/// full, secrets and all. So an error reporter's chain (anyhow's `chain()`, `downcast_ref`) no
/// longer reaches the inner error: [`GaveUp::error`] and [`GaveUp::into_error`] do, and
/// [`GaveUp::report`] prints the causes, redacted.
///
/// ```
/// use retry_runtime::{Class, Policy, Retry};
/// use std::error::Error as _;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let gave_up = Retry::new(&Policy::AVAILABILITY)
///     .run(async |_| Err::<(), _>(std::io::Error::other("GET https://api.example.com/v1?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv")))
///     .await
///     .unwrap_err();
/// assert!(gave_up.source().is_none());
/// assert!(!gave_up.to_string().contains("AIza"));
/// # }
/// ```
impl<E: Error + 'static> Error for GaveUp<E> {}

impl<E: Error + 'static> GaveUp<E> {
    /// The error and each of its causes (`source()`), redacted, one after another, then why the
    /// ladder stopped: for a log line that must name the root cause. A cause whose text the
    /// line already holds (a wrapper that prints its source) is not repeated.
    ///
    /// ```
    /// use retry_runtime::{GaveUp, Policy, Retry, Class, Classify};
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("the model call failed")]
    /// struct ModelError(#[source] std::io::Error);
    /// impl Classify for ModelError {
    ///     fn classify(&self) -> Class { Class::Transport }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let gave_up = Retry::new(const { &Policy::AVAILABILITY.with_attempts(1) })
    ///     .run(async |_| Err::<(), _>(ModelError(std::io::Error::other("connection reset by https://h/?key=sk-abcdefghijklmnopqrstu"))))
    ///     .await
    ///     .unwrap_err();
    /// assert_eq!(
    ///     gave_up.report().to_string(),
    ///     "the model call failed: connection reset by https://h/?[redacted] (gave up: all 1 attempts failed; the outcome is unknown; 1 attempt, 0 ms waiting)",
    /// );
    /// # }
    /// ```
    pub fn report(&self) -> impl fmt::Display + '_ {
        Report(self)
    }
}

/// [`GaveUp::report`]'s text.
struct Report<'g, E>(&'g GaveUp<E>);

impl<E: Error + 'static> fmt::Display for Report<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = Redacted::new(&self.0.error).to_string();
        let mut cause = self.0.error.source();
        while let Some(current) = cause {
            let text = Redacted::new(&current).to_string();
            if !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            cause = current.source();
        }
        write!(f, "{line} (gave up: ")?;
        self.0.verdict(f)
    }
}

/// One upstream of an ordered set, as a call that gave up left it: its last failure in the
/// call, if it was tried, and why the call left it ([`GaveUp::upstreams`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamLeft {
    upstream: &'static str,
    failure: Option<(Class, String)>,
    why: LeftBecause,
}

/// Why a call across an ordered set of upstreams left one.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeftBecause {
    /// It failed, and the call moved to the next upstream at once.
    Moved,
    /// Every upstream had failed or was held: the call waited on its ladder.
    Waited,
    /// A provider's hint paused it for every call.
    Paused,
    /// Its outage gate was open: another call was probing it.
    Gated,
    /// Its failure was the one the call gave up on.
    GaveUp,
}

impl UpstreamLeft {
    pub(crate) fn new(upstream: &'static str, why: LeftBecause) -> UpstreamLeft {
        UpstreamLeft {
            upstream,
            failure: None,
            why,
        }
    }

    /// It failed with `class`, told as `error`: kept as written, redacted when shown (a move
    /// pays for the write, not for the redaction).
    pub(crate) fn failed(&mut self, class: Class, error: &dyn fmt::Display) {
        use fmt::Write as _;
        let text = match &mut self.failure {
            Some((_, text)) => {
                text.clear();
                text
            }
            None => &mut self.failure.insert((class, String::new())).1,
        };
        let _ = write!(text, "{error}");
        if let Some((kept, _)) = &mut self.failure {
            *kept = class;
        }
    }

    /// The call left it for `why`.
    pub(crate) fn because(&mut self, why: LeftBecause) {
        self.why = why;
    }

    /// The upstream's name.
    pub fn upstream(&self) -> &'static str {
        self.upstream
    }

    /// Its last failure in the call, its class and its text as the error's `Display` wrote it
    /// (unredacted, as [`GaveUp::error`] is; this `Display` redacts it); `None` if the call
    /// never sent to it.
    pub fn failure(&self) -> Option<(Class, &str)> {
        self.failure
            .as_ref()
            .map(|(class, text)| (*class, text.as_str()))
    }

    /// Why the call left it.
    pub fn why(&self) -> LeftBecause {
        self.why
    }
}

/// One sentence: the upstream, its last failure, and why the call left it.
impl fmt::Display for UpstreamLeft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.upstream;
        match &self.failure {
            Some((class, text)) => {
                let state = class.state();
                write!(f, "{name} {state} ({})", Redacted::new(text))?;
            }
            None => write!(f, "{name} was not tried")?,
        }
        f.write_str(match self.why {
            LeftBecause::Moved => ": the call moved on at once",
            LeftBecause::Waited => ": every upstream had failed, so the call waited",
            LeftBecause::Paused => ": it was paused for every call",
            LeftBecause::Gated => ": its outage gate was open",
            LeftBecause::GaveUp => ": the call gave up on it",
        })
    }
}
