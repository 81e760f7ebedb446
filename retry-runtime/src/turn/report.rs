//! A turn's report: what the retries inside it cost ([`TurnReport`]) and the records it keeps
//! of the calls that gave up, were dropped in an attempt, or had a wait cut short. It owns the
//! report's fields and how they add up; a call's [`Flight`](super::flight::Flight) is the one
//! writer (through the turn's ledger, which adds the calls still in flight when the turn
//! ends), and it must not read a clock or a turn.

use std::fmt;
use std::time::Duration;

use crate::class::Class;
use crate::op::Op;
use crate::verdict::StopReason;

/// What the retries inside a turn cost.
///
/// ```
/// use retry_runtime::{testing, Class, Policy, Retry, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let ((outcome, report), recorded) = testing::scope(Turn::new(Duration::from_secs(60)).run(
///     Retry::new(&Policy::AVAILABILITY)
///         .named("model")
///         .run(async |attempt| if attempt < 3 { Err(Class::Transport) } else { Ok(attempt) }),
/// ))
/// .await;
/// assert_eq!(outcome.unwrap().unwrap(), 3);
/// assert_eq!((report.calls(), report.attempts(), report.retries()), (1, 3, 2));
/// assert_eq!(report.waiting(), recorded.total()); // 250 + 500 ms, exactly
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnReport {
    calls: u32,
    attempts: u32,
    retries: [u32; Class::ALL.len()],
    waiting: Duration,
    /// Streams that reached their commit point, and those restarted after it.
    commits: u32,
    restarts: u32,
    /// Streams resumed from their cursor.
    resumes: u32,
    /// Calls moved from one upstream of an ordered set to the next.
    moves: u32,
    /// The working time of the calls not nested in another's attempt, each their whole
    /// elapsed time less their own waits...
    working: Duration,
    /// ...and the waits of the nested ones, which that elapsed time includes.
    nested_waiting: Duration,
    gave_up: Vec<GaveUpRecord>,
    in_flight: Vec<InFlight>,
    cut_waits: Vec<CutWait>,
}

/// A finished or dropped call, as its turn's report counts it: made by its flight.
pub(super) struct CallRecord {
    pub(super) op: Op,
    /// The attempts this call's ladder made.
    pub(super) attempts: u32,
    /// Those that count in the turn's total: not the attempts in which a retried call nested
    /// in this one made the attempts, so each attempt counts once, at the innermost ladder.
    pub(super) counted_attempts: u32,
    pub(super) waiting: Duration,
    pub(super) working: Duration,
    /// Whether the call ran inside another's attempt, whose time includes its waits.
    pub(super) nested: bool,
    pub(super) gave_up: Option<StopReason>,
}

impl TurnReport {
    /// Count `call`.
    pub(super) fn add_call(&mut self, call: &CallRecord) {
        self.calls = self.calls.saturating_add(1);
        self.attempts = self.attempts.saturating_add(call.counted_attempts);
        self.waiting = self.waiting.saturating_add(call.waiting);
        self.working = self.working.saturating_add(call.working);
        if call.nested {
            self.nested_waiting = self.nested_waiting.saturating_add(call.waiting);
        }
        if let Some(reason) = call.gave_up {
            self.gave_up.push(GaveUpRecord {
                op: call.op.clone(),
                reason,
                attempts: call.attempts,
            });
        }
    }

    /// A retry after a `class` failure was made.
    pub(super) fn add_retry(&mut self, class: Class) {
        let retries = &mut self.retries[class.index()];
        *retries = retries.saturating_add(1);
    }

    /// A stream was restarted after its commit point: counted apart from retries.
    pub(super) fn add_restart(&mut self) {
        self.restarts = self.restarts.saturating_add(1);
    }

    /// A stream was resumed from its cursor: counted apart from retries and restarts.
    pub(super) fn add_resume(&mut self) {
        self.resumes = self.resumes.saturating_add(1);
    }

    /// A call moved to the next upstream of its ordered set.
    pub(super) fn add_move(&mut self) {
        self.moves = self.moves.saturating_add(1);
    }

    /// A stream reached its commit point.
    #[cfg(feature = "stream")]
    pub(super) fn add_commit(&mut self) {
        self.commits = self.commits.saturating_add(1);
    }

    /// A wait was cut short.
    pub(super) fn add_cut_wait(&mut self, wait: CutWait) {
        self.cut_waits.push(wait);
    }

    /// A call was dropped in an attempt.
    pub(super) fn add_in_flight(&mut self, call: InFlight) {
        self.in_flight.push(call);
    }
}

/// A call inside a turn whose ladder gave up.
///
/// ```
/// use retry_runtime::{testing, Class, Policy, Retry, StopReason, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let ((_, report), _) = testing::scope(Turn::new(Duration::from_secs(60)).run(
///     Retry::new(&Policy::AVAILABILITY)
///         .named("model")
///         .run(async |_| Err::<(), _>(Class::Definitive)),
/// ))
/// .await;
/// let record = &report.gave_up()[0];
/// assert_eq!((record.op.as_str(), record.attempts), ("model", 1));
/// assert_eq!(record.reason, StopReason::Definitive);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaveUpRecord {
    /// The operation's name.
    pub op: Op,
    /// Why it gave up.
    pub reason: StopReason,
    /// The attempts it made.
    pub attempts: u32,
}

/// A call dropped in the middle of an attempt: the turn ended, or its caller dropped it.
///
/// ```
/// use retry_runtime::{Class, Policy, Retry, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let (outcome, report) = Turn::new(Duration::from_secs(2))
///     .run(Retry::new(&Policy::AVAILABILITY).named("model").run(async |_| {
///         std::future::pending::<Result<(), Class>>().await
///     }))
///     .await;
/// assert!(outcome.is_expired());
/// let call = &report.in_flight()[0];
/// assert_eq!((call.op.as_str(), call.attempt), ("model", 1));
/// assert_eq!(call.running, Duration::from_secs(2));
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    /// The operation's name.
    pub op: Op,
    /// The attempt that was running, from 1.
    pub attempt: u32,
    /// How long that attempt had run.
    pub running: Duration,
}

/// A wait between attempts that was cut short: the turn was cancelled or ended, or the call
/// was dropped. The retry after it was never made (and a quota got its cost back).
///
/// ```
/// use retry_runtime::{Class, Policy, Retry, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let turn = Turn::new(Duration::from_secs(60));
/// let canceller = turn.canceller();
/// let work = turn.run(Retry::new(&Policy::OUTAGE).named("model").run(async |_| {
///     Err::<(), _>(Class::Unavailable { retry_after: None })
/// }));
/// // One second into the outage ladder's first wait, of 5 s or more.
/// let cancel = async {
///     tokio::time::sleep(Duration::from_secs(1)).await;
///     canceller.cancel();
/// };
/// let ((_, report), ()) = tokio::join!(work, cancel);
/// let wait = &report.cut_waits()[0];
/// assert_eq!((wait.op.as_str(), wait.after_attempt), ("model", 1));
/// assert_eq!(wait.waited, Duration::from_secs(1));
/// assert!(wait.wanted >= Duration::from_millis(2500));
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutWait {
    /// The operation's name.
    pub op: Op,
    /// The attempt whose failure the wait followed.
    pub after_attempt: u32,
    /// How long it had waited.
    pub waited: Duration,
    /// The wait the ladder had chosen.
    pub wanted: Duration,
}

impl TurnReport {
    /// The retried calls made in the turn: those that finished, those dropped in flight, and
    /// those still in flight when it ended (carried into a task with
    /// [`TurnHandle::scope`](super::TurnHandle::scope), which the turn cannot drop), counted as
    /// they stood then.
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// Attempts made in all, first attempts included, each counted once: at the innermost
    /// ladder that made it, so an attempt of an outer call in which a nested retried call ran
    /// is that call's attempts, not one more. This is what a server saw.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Retries made in all.
    pub fn retries(&self) -> u32 {
        self.retries.iter().sum()
    }

    /// Streams ([`Retry::stream`](crate::Retry::stream)) that reached their commit point:
    /// their output went to the caller, so nothing of them was retried after it but by a
    /// restart.
    pub fn commits(&self) -> u32 {
        self.commits
    }

    /// Streams restarted after their commit point (`restart_after_commit`): counted apart
    /// from [`retries`](Self::retries), and in [`attempts`](Self::attempts).
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Streams resumed from their cursor after a cut, a stall or an early close
    /// ([`RetryStream::resume`](crate::RetryStream::resume)), each resume counted: apart from
    /// [`retries`](Self::retries) and [`restarts`](Self::restarts), and in
    /// [`attempts`](Self::attempts), since each is a request.
    pub fn resumes(&self) -> u32 {
        self.resumes
    }

    /// Moves from one upstream of an ordered set ([`Upstreams`](crate::Upstreams)) to the
    /// next after a failure, made at once, with no wait: counted apart from
    /// [`retries`](Self::retries), and each move's attempt in [`attempts`](Self::attempts).
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Retry, Turn, Upstream, Upstreams};
    ///
    /// static CLAUDE: Upstream = Upstream::new("claude");
    /// static GPT: Upstream = Upstream::new("gpt");
    /// static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let call = Retry::new(&Policy::AVAILABILITY).across(&MODELS).run(async |to| {
    ///     match to.name() {
    ///         "claude" => Err(Class::Unavailable { retry_after: None }),
    ///         _ => Ok(to.name()),
    ///     }
    /// });
    /// let (outcome, report) = Turn::new(std::time::Duration::from_secs(60)).run(call).await;
    /// assert_eq!(outcome.into_finished().unwrap().unwrap().into_value(), "gpt");
    /// assert_eq!((report.moves(), report.retries()), (1, 0));
    /// # CLAUDE.reset();
    /// # }
    /// ```
    pub fn moves(&self) -> u32 {
        self.moves
    }

    /// Retries made after a failure of `class`.
    pub fn retries_of(&self, class: Class) -> u32 {
        self.retries[class.index()]
    }

    /// Time spent waiting between attempts: not the far side's time. A wait that ran to its
    /// end counts as the wait the ladder chose, to the nanosecond (a timer's lateness counts
    /// as [`working`](Self::working)); one cut short, as long as it lasted.
    pub fn waiting(&self) -> Duration {
        self.waiting
    }

    /// Time spent inside the attempts themselves, each moment counted once: an outer call's
    /// attempt does not count the waits of the calls nested in it. For calls made one after
    /// another, working and waiting add up to the turn's elapsed time.
    pub fn working(&self) -> Duration {
        self.working.saturating_sub(self.nested_waiting)
    }

    /// The calls that gave up, in order.
    pub fn gave_up(&self) -> &[GaveUpRecord] {
        &self.gave_up
    }

    /// The calls dropped in the middle of an attempt, in order, then those still in one when
    /// the turn ended (carried into a task): the attempt counts in
    /// [`attempts`](Self::attempts), since it was made.
    pub fn in_flight(&self) -> &[InFlight] {
        &self.in_flight
    }

    /// The waits cut short, in order: by a cancel, the deadline, or a call dropped while it
    /// waited; then those of calls still waiting when the turn ended (carried into a task,
    /// whose wait a cancel ends). The time they did wait counts in [`waiting`](Self::waiting);
    /// the retries after them were not made by then and are not counted.
    pub fn cut_waits(&self) -> &[CutWait] {
        &self.cut_waits
    }
}

impl fmt::Display for TurnReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} calls, {} attempts, {} retries; {} ms working, {} ms waiting",
            self.calls,
            self.attempts,
            self.retries(),
            self.working().as_millis(),
            self.waiting.as_millis()
        )?;
        if self.restarts > 0 {
            write!(f, "; {} stream restarts", self.restarts)?;
        }
        if self.resumes > 0 {
            write!(f, "; {} stream resumes", self.resumes)?;
        }
        if self.moves > 0 {
            write!(f, "; {} moves to another upstream", self.moves)?;
        }
        for record in &self.gave_up {
            write!(
                f,
                "; `{}` gave up after {}: {}",
                record.op, record.attempts, record.reason
            )?;
        }
        for call in &self.in_flight {
            write!(
                f,
                "; `{}` was dropped in attempt {}, after {} ms",
                call.op,
                call.attempt,
                call.running.as_millis()
            )?;
        }
        for wait in &self.cut_waits {
            write!(
                f,
                "; `{}`'s wait after attempt {} was cut short at {} of {} ms",
                wait.op,
                wait.after_attempt,
                wait.waited.as_millis(),
                wait.wanted.as_millis()
            )?;
        }
        Ok(())
    }
}
