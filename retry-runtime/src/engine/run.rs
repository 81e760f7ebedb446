//! A call's run: its counters and flags, and the attempt protocol (`attempt`, `attempted`,
//! `succeeded`, `failed`, `waited`, `dropped`, and a stream's `ended`) that the attribute's
//! expansion, [`Retry::run`](super::Retry::run) and streams all drive. A stream's own facts
//! (its commit, restarts and resumes) are the stream's: they reach the run on each failure as
//! plain values. It must not decide (it asks
//! [`ladder::decide`] once per failure), sleep (its [`Wait`] does) or keep a turn's records
//! (its [`Flight`] does).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use crate::attempt::{Attempt, Attempted, Timed};
use crate::class::{Class, Classify};
use crate::clock::Clock;
use crate::deadline::Deadline;
use crate::ladder::{self, Decided, Failure, Step};
use crate::meter::{self, Outcome, Series};
use crate::nesting;
use crate::notice::{Action, Reached};
use crate::span::CallSpans;
use crate::timeout::TimeoutBound;
use crate::turn::flight::{self, AfterWait, Flight};
use crate::turn::scope;

use crate::verdict::{GaveUp, StopReason};
use crate::wait::{Paid, Wait, Waited};

use super::count::Count;
use super::source::Source;
use facts::StreamFacts;

pub(crate) mod facts;
#[cfg(feature = "stream")]
mod stream;
mod tell;
mod upstream;

/// Flags of [`Run::flags`]: whether a rate limit was retried, and whether an inner ladder gave
/// up on a transient failure during the current attempt. A stream's own facts (its commit,
/// its restarts, its resumes) are the stream's, and reach the run on each failure as
/// [`StreamFacts`].
const RATE_LIMITED: u8 = 1;
const INNER_GAVE_UP: u8 = 1 << 2;
/// A retried call nested in the current attempt ran: that call counts the attempt.
const HOLLOW: u8 = 1 << 3;
/// The call has ended (succeeded, gave up, or its stream ended after its commit point): its
/// outcome is counted, and a drop now is not a dropped call.
const ENDED: u8 = 1 << 4;

/// One call's progress through its ladder. Used by `#[retry]`'s expansion and by
/// [`Retry::run`](super::Retry::run); not public API.
///
/// It lives in every annotated function's future, so it is kept to four words: the attempt
/// count (at most [`Policy::MAX_ATTEMPTS`], ten thousand) and the flags share a word with the
/// time waited, kept to the millisecond, and what a turn needs to report a dropped call is
/// boxed, made only inside a turn, in the place of the start instant (measured: a fifth word
/// would take the attribute past its 64 bytes).
///
/// It has no bound of its own, so a stream that holds one (and a task that holds the stream)
/// is `Send` whatever lifetimes its configuration borrows; what it does when dropped
/// unfinished is [`Call`]'s drop, or a stream's.
#[doc(hidden)]
pub struct Run<R, A = u16> {
    source: R,
    since: Since,
    waited_ms: u32,
    attempts: A,
    flags: u8,
    paid: Paid,
    /// Empty without the `spans` feature; with it, a box made at the first failure.
    spans: CallSpans,
}

/// When a call started, where anything needs to know.
enum Since {
    /// Outside a turn and without a literal budget: the clock is never read.
    Unread,
    /// Under a literal budget, outside a turn.
    Started(Instant),
    /// Inside a turn, until the call finishes: if the call is dropped first, it reports
    /// itself.
    InTurn(Box<Flight>),
}

impl<R: Source, A: Count> fmt::Debug for Run<R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("op", &self.source.op())
            .field("attempts", &self.attempts())
            .field("in_turn", &self.flight().is_some())
            .finish()
    }
}

impl<R: Source, A: Count> Run<R, A> {
    /// A call not yet started: nothing is read until its first attempt, so a future made
    /// outside a turn and awaited inside one belongs to that turn.
    #[inline]
    pub const fn new(source: R) -> Self {
        Run {
            source,
            since: Since::Unread,
            waited_ms: 0,
            attempts: A::ZERO,
            flags: 0,
            paid: Paid::NONE,
            spans: CallSpans::NONE,
        }
    }

    /// Start the call, at its first attempt (a no-op after).
    #[inline]
    fn start_once(&mut self) {
        if self.attempts() == 0 && matches!(self.since, Since::Unread) {
            self.start();
        }
    }

    /// Start the call. Reads the clock only inside a turn or under a literal budget. Always
    /// inlined, as `begin_attempt` is: the first try's path, which an upstream's wait also
    /// calls, and LLVM would otherwise move out of line (20 instructions a first try).
    #[inline(always)]
    fn start(&mut self) {
        let source = &self.source;
        // The flight keeps the call's name from its start: a turn that ends before the call
        // lists it as it stands.
        let flight = flight::flight(|| (source.clock().now(), source.op_name()));
        self.since = match (flight, source.budget()) {
            (Some(flight), _) => Since::InTurn(flight),
            (None, Deadline::Within(_)) => Since::Started(source.clock().now()),
            (None, Deadline::Turn) => Since::Unread,
        };
    }

    /// When the call started: read only inside a turn or under a literal budget.
    #[inline]
    fn started(&self) -> Option<Instant> {
        match &self.since {
            Since::Unread => None,
            Since::Started(started) => Some(*started),
            Since::InTurn(flight) => Some(flight.started()),
        }
    }

    #[inline]
    fn flight(&self) -> Option<&Flight> {
        match &self.since {
            Since::InTurn(flight) => Some(flight),
            _ => None,
        }
    }

    /// The attempts made so far.
    pub fn attempts(&self) -> u32 {
        self.attempts.get()
    }

    /// Start one attempt, marked so that a retried call inside it knows it is nested.
    #[inline]
    pub fn attempt<F: Future>(&mut self, future: F) -> Attempt<F> {
        self.begin_attempt();
        let span = self.spans.attempt(self.attempts());
        Attempt::new(future, span)
    }

    /// Count one more attempt, from now.
    #[inline(always)]
    pub(crate) fn begin_attempt(&mut self) {
        self.start_once();
        // A call's ladder stops at `Policy::MAX_ATTEMPTS`, well inside a `u16`; a stream's
        // counts in a `u32`, its renewals unbounded (at one attempt a millisecond, 49 days).
        self.attempts = self.attempts.next();
        // What nested ladders did in an earlier attempt says nothing about this one.
        self.flags &= !(INNER_GAVE_UP | HOLLOW);
        if let Since::InTurn(flight) = &mut self.since {
            flight.attempt_started(self.source.clock().now());
        }
    }

    /// Start one attempt under its timer: the sooner of the call's timeout, what is left of
    /// the turn and what is left of a literal budget.
    pub fn attempt_timed<F: Future>(&mut self, future: F) -> Attempt<Timed<F>> {
        self.start_once();
        let (end, bound) = self.attempt_end();
        self.attempt(Timed::new(future, end, bound))
    }

    /// When the next attempt must end, on tokio's time, and which bound says so.
    fn attempt_end(&self) -> (Instant, TimeoutBound) {
        let own = self.source.timeout().map(|t| (t, TimeoutBound::Timeout));
        match self.bound(own, true) {
            (Some(at), bound) => (at, bound),
            // A timeout too long to be an instant: about thirty years, as tokio's own far
            // future.
            (None, bound) => (
                Instant::now() + Duration::from_secs(86_400 * 365 * 30),
                bound,
            ),
        }
    }

    /// The sooner of `own` from now, what is left of the turn and (if `budget`) what is left
    /// of a literal budget, on tokio's time, and which bound it is; `None` if none bounds it.
    pub(crate) fn bound(
        &self,
        own: Option<(Duration, TimeoutBound)>,
        budget: bool,
    ) -> (Option<Instant>, TimeoutBound) {
        let start = Instant::now();
        let mut end = match own {
            Some((limit, bound)) => (start.checked_add(limit), bound),
            None => (None, TimeoutBound::Timeout),
        };
        // The very instant the turn drops its work: on a tie, the turn wins.
        if let Some(turn) = scope::expiry()
            && end.0.is_none_or(|end| turn <= end)
        {
            end = (Some(turn), TimeoutBound::Turn);
        }
        if budget
            && let (Deadline::Within(limit), Some(started)) = (self.source.budget(), self.started())
        {
            // The budget is on the retry's clock; its remainder is the same on tokio's.
            let left = started
                .checked_add(limit)
                .map(|deadline| deadline.saturating_duration_since(self.source.clock().now()));
            let budget = left.and_then(|left| start.checked_add(left));
            if let Some(budget) = budget
                && end.0.is_none_or(|end| budget < end)
            {
                end = (Some(budget), TimeoutBound::Budget);
            }
        }
        end
    }

    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    /// A failure after which an HTTP layer cannot send its request again: the class's own stop
    /// (an answer, a class not retried, the last attempt) if it has one, else
    /// [`StopReason::NotResendable`]. No retry is announced or paid for.
    pub(crate) fn gave_up_not_resendable<E>(&mut self, error: E) -> GaveUp<E>
    where
        E: Classify + fmt::Display,
    {
        let class = error.classify();
        self.attempt_failed(class);
        // The one decision, told the request cannot be sent again: it stops, with the
        // class's own stop where there is one.
        let reason = match self.next_step(class, None, false) {
            Step::Stop(reason) => reason,
            Step::Retry { .. } => ladder::not_resendable(),
        };
        self.give_up(error, class, reason, Reached::Nothing)
    }

    /// Take one attempt's output, noting what the retried calls nested inside it did: whether
    /// one gave up, and (for the turn's report) whether one ran and how long they waited.
    #[inline]
    pub fn attempted<T>(&mut self, attempted: Attempted<T>) -> T {
        let (output, frame) = attempted.into_parts();
        self.note_frame(frame);
        output
    }

    /// What the retried calls nested in the attempt did.
    #[inline]
    pub(crate) fn note_frame(&mut self, frame: nesting::Frame) {
        if frame.inner_gave_up() {
            self.flags |= INNER_GAVE_UP;
        }
        if frame.inner_ran() {
            self.flags |= HOLLOW;
            if let Since::InTurn(flight) = &mut self.since {
                flight.inner_ran();
            }
        }
    }

    /// Account for a success: the quota's refill and the turn's report. Never waits.
    #[inline]
    pub fn succeeded(&mut self) {
        self.end(
            Outcome::succeeded(self.attempts()),
            self.attempt_series(None),
        );
        // Only a quota or a turn (or a literal budget) has anything more to do at the end.
        if self.source.quota().is_some() || self.started().is_some() {
            self.finish(None);
        } else if cfg!(feature = "metrics") {
            // The attempt this call ran in is this call's to count, in a turn or not.
            nesting::mark_ran();
        }
    }

    /// A sleep of `wait` on the call's clock.
    #[inline]
    pub(super) fn sleep_for(&self, wait: Duration) -> <R::Clock as Clock>::Sleep {
        self.source.clock().sleep(wait)
    }

    /// Poll `wait`, one of this call's: over when its sleep is, or at once when the call's turn
    /// (or one around it) is cancelled.
    #[inline]
    pub(crate) fn poll_wait<E>(
        &mut self,
        wait: Pin<&mut Wait<<R::Clock as Clock>::Sleep, E>>,
        cx: &mut Context<'_>,
    ) -> Poll<Waited<E>> {
        let cancelled = match &mut self.since {
            Since::InTurn(flight) => flight.poll_cancelled(cx).is_ready(),
            _ => false,
        };
        wait.poll(cancelled, cx)
    }

    /// The wait after a `class` failure, counted and announced; or the reason to stop. One
    /// body for every error type: it reads the failure only to tell it.
    pub(super) fn wait_after(
        &mut self,
        error: &dyn fmt::Display,
        class: Class,
        reached: Reached,
        stream: Option<&StreamFacts<'_>>,
    ) -> Result<Duration, StopReason> {
        self.attempt_failed(class);
        let wait = self.step_and_tell(error, class, reached, stream)?;
        meter::waited(self.source.op(), wait);
        match &mut self.since {
            // A turn can cut the wait short, and then counts it as long as it lasted: the
            // flight keeps when it started and listens for the cancel, so the wait does not.
            // A wait that runs to its end is counted at its end, as the one chosen.
            Since::InTurn(flight) => {
                flight.wait_started(self.source.clock().now(), wait, class, reached);
            }
            // Elsewhere, a literal budget included, nothing cuts it short: it counts as chosen
            // now, and nothing reads the clock for it. A timer's overshoot (about a millisecond
            // on tokio's) is not counted, so the wait stays the sleep and the failure. The
            // budget itself is still measured on the clock, from the call's start.
            _ => self.add_waited(wait),
        }
        Ok(wait)
    }

    /// The wait is over, or was cut short by a cancel of the turn: account for it, and go on
    /// to the next attempt, or give up with [`StopReason::Cancelled`].
    #[inline]
    pub fn waited<E>(&mut self, waited: Waited<E>) -> Result<(), GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        self.waited_before(waited, AfterWait::Retry)
    }

    #[inline]
    fn waited_before<E>(&mut self, waited: Waited<E>, next: AfterWait) -> Result<(), GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        // A wait cut short refunds the retry it paid for: read before the wait is over.
        if waited.cancelled() {
            return self.cut_short(waited);
        }
        self.paid.wait_over();
        // A turn counts the wait at its end, as the one chosen (elsewhere `failed` did): in a
        // testing scope, exactly the wait recorded.
        if let Since::InTurn(flight) = &mut self.since
            && let Some((wanted, _)) = flight.wait_ended(next)
        {
            self.add_waited(wanted);
        }
        match next {
            AfterWait::Retry => {}
            AfterWait::Restart => meter::count(self.source.op(), Series::StreamRestart),
            AfterWait::Resume => meter::count(self.source.op(), Series::StreamResume),
        }
        Ok(())
    }

    /// A cancel of the turn cut the wait short: it counts as long as it lasted, and the call
    /// gives up with [`StopReason::Cancelled`]. Only a turn cancels a wait.
    #[cold]
    fn cut_short<E>(&mut self, waited: Waited<E>) -> Result<(), GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        let now = self.source.clock().now();
        let cut = match &mut self.since {
            Since::InTurn(flight) => flight.wait_cut(now),
            _ => None,
        };
        let Some((lasted, class, reached)) = cut else {
            self.paid.wait_over();
            return Ok(());
        };
        self.add_waited(lasted);
        // The retry the quota paid for is never made.
        self.paid.refund(self.source.quota());
        Err(self.give_up(waited.into_error(), class, ladder::cut_by_cancel(), reached))
    }

    /// The wait before the next attempt, as [`ladder::decide`] decides it, with the retry
    /// announced; or the reason to stop.
    fn step_and_tell(
        &mut self,
        error: &dyn fmt::Display,
        class: Class,
        reached: Reached,
        stream: Option<&StreamFacts<'_>>,
    ) -> Result<Duration, StopReason> {
        match self.next_step(class, stream, true) {
            Step::Retry { wait } => {
                let resuming = stream.and_then(|stream| stream.resuming);
                let (action, from) = match (resuming, stream) {
                    (Some(resuming), _) if resuming.resumes => {
                        (Action::Resume { backoff: wait }, Some(resuming.from))
                    }
                    (_, Some(stream)) if stream.restarts() => {
                        (Action::Restart { backoff: wait }, None)
                    }
                    _ => (Action::Retry { backoff: wait }, None),
                };
                self.notify(error, class, action, reached, from);
                if matches!(class, Class::RateLimited { .. }) {
                    self.flags |= RATE_LIMITED;
                }
                Ok(wait)
            }
            Step::Stop(reason) => Err(reason),
        }
    }

    /// The one decision on a failure of `class`, on the run's facts (a request that is not
    /// `resendable` cannot be sent again); then the quota pays for a retry, or refuses it
    /// (`Quota`: read after the decision, so two calls never race inside it).
    fn next_step(
        &mut self,
        class: Class,
        stream: Option<&StreamFacts<'_>>,
        resendable: bool,
    ) -> Step {
        let (turn_over, remaining) = self.now_bounded();
        let failure = self
            .failure(class, remaining, stream)
            .with_turn_over(turn_over)
            .with_resendable(resendable);
        // One decision; the RNG is read only where a wait may follow.
        let decision = match ladder::decide(self.source.policy(), failure) {
            Decided::Stop(decision) | Decided::Move(decision) => decision,
            Decided::Pending(pending) => pending.with_draw(self.source.clock().draw()),
        };
        match decision.step {
            Step::Stop(StopReason::Nested) => {
                nesting::warn_nested(self.source.op());
                decision.step
            }
            Step::Retry { .. } if !self.paid.withdraw(self.source.quota(), class) => {
                meter::count(self.source.op(), Series::QuotaRefusal);
                // The quota's payment: its refusal is made where it is paid.
                Step::Stop(StopReason::Quota)
            }
            _ => decision.step,
        }
    }

    /// Where the call stands against its turn and its budget now: whether its turn is over
    /// (cancelled, or its deadline passed), and what its budget has left (`None`: no bound).
    /// In line in each of its two callers, as it was in the one it came from.
    #[inline(always)]
    fn now_bounded(&self) -> (bool, Option<Duration>) {
        // A call started outside any turn stays outside one; one inside asks its flight,
        // which holds the turn.
        let flight = self.flight();
        let turn_deadline = flight.and_then(Flight::deadline);
        // The clock is read only where a deadline needs it.
        let deadline = self.deadline(turn_deadline);
        let now = deadline.map(|_| self.source.clock().now());
        let turn_over = flight.is_some_and(|flight| {
            flight.is_cancelled()
                || matches!((turn_deadline, now), (Some(turn), Some(now)) if now >= turn)
        });
        // Past the call's own budget, nothing remains: the ladder reports `Budget`.
        let remaining = match (deadline, now) {
            (Some(deadline), Some(now)) => Some(deadline.saturating_duration_since(now)),
            _ => None,
        };
        (turn_over, remaining)
    }

    /// The facts of the run the ladder decides a failure of `class` on. A resumable stream's
    /// ladder counts from its last renewal, whatever the failure; a resume repeats nothing the
    /// caller has, and its refused reopen answers the resume, not the request.
    fn failure(
        &self,
        class: Class,
        remaining: Option<Duration>,
        stream: Option<&StreamFacts<'_>>,
    ) -> Failure {
        let resuming = stream.and_then(|stream| stream.resuming);
        let (attempt, waited) = match resuming {
            Some(resuming) => (
                self.attempts().saturating_sub(resuming.attempts_before),
                self.total_waited().saturating_sub(resuming.waited_before),
            ),
            None => (self.attempts(), self.total_waited()),
        };
        let (committed, reconnect, reopen) = match (resuming, stream) {
            (Some(resuming), _) if resuming.resumes => (false, resuming.reconnect, resuming.reopen),
            (_, Some(stream)) => (stream.committed, None, false),
            _ => (false, None, false),
        };
        let restartable = stream.is_some_and(|stream| stream.restartable);
        Failure::new(attempt, class)
            .with_reopen(reopen)
            .with_rate_limited_before(self.flags & RATE_LIMITED != 0)
            .with_inner_gave_up(self.flags & INNER_GAVE_UP != 0)
            .with_committed(committed, restartable)
            .with_remaining(remaining)
            .with_waited(waited)
            .with_reconnect(reconnect)
    }

    fn deadline(&self, turn: Option<Instant>) -> Option<Instant> {
        let own = match (self.source.budget(), self.started()) {
            (Deadline::Within(limit), Some(started)) => started.checked_add(limit),
            _ => None,
        };
        scope::sooner(own, turn)
    }

    fn add_waited(&mut self, waited: Duration) {
        // In whole milliseconds, rounded up: `Run` keeps four words, and the total is never
        // below the waits counted (chosen, or as long as a wait cut short lasted), which keeps
        // the policy's `max_total_wait` a bound on them; a turn's flight keeps them exact. The
        // ladder never
        // waits past `Policy::MAX_TOTAL_WAIT` (`u32::MAX` ms), so this never saturates.
        // Whole seconds are whole milliseconds, so only the nanoseconds round: no 128-bit
        // division on the retry path.
        let millis = waited
            .as_secs()
            .saturating_mul(1000)
            .saturating_add(u64::from(waited.subsec_nanos().div_ceil(1_000_000)));
        let millis = u32::try_from(millis).unwrap_or(u32::MAX);
        self.waited_ms = self.waited_ms.saturating_add(millis);
    }

    /// The time the call has waited so far, to the millisecond.
    pub(crate) fn total_waited(&self) -> Duration {
        Duration::from_millis(self.waited_ms.into())
    }

    pub(super) fn give_up<E: fmt::Display>(
        &mut self,
        error: E,
        class: Class,
        reason: StopReason,
        reached: Reached,
    ) -> GaveUp<E> {
        self.notify(&error, class, Action::GiveUp { reason }, reached, None);
        meter::count(self.source.op(), Series::GiveUp(reason));
        self.end(Outcome::gave_up(class, reason), None);
        // Only a ladder that ran out tells the one around it: a failure it declined to retry
        // (another policy may) or a cancelled turn (the outer ladder sees that itself) does not.
        if class.is_transient()
            && matches!(
                reason,
                StopReason::Exhausted { .. }
                    | StopReason::Budget { .. }
                    | StopReason::RetryAfterTooLong { .. }
                    | StopReason::Nested
                    | StopReason::Committed
            )
        {
            nesting::mark_gave_up();
        }
        self.finish(Some(reason));
        GaveUp::new(error, reason, self.attempts(), self.total_waited())
            .with_delivered(reached == Reached::Output)
    }

    /// Account for the finished call: the quota refill and the turn's report.
    fn finish(&mut self, gave_up: Option<StopReason>) {
        if gave_up.is_none() {
            self.settle_quota();
        }
        self.report(gave_up);
    }

    /// A success: the quota's refill. A stream settles at its commit point, where its output
    /// reached the caller, not at its end.
    fn settle_quota(&self) {
        if let Some(quota) = self.source.quota() {
            self.paid.settle(quota, self.attempts());
        }
    }

    /// The call is over, or (a stream dropped after its commit point) is as good as over:
    /// report it to the turn, and it is no longer in flight.
    fn report(&mut self, gave_up: Option<StopReason>) {
        self.end(Outcome::succeeded(self.attempts()), None);
        if let Since::InTurn(flight) = &mut self.since {
            let now = self.source.clock().now();
            let nested = nesting::is_nested();
            flight.finished(now, nested, gave_up);
            nesting::mark_ran();
            // Finished: no longer in flight.
            self.since = Since::Started(flight.started());
        } else if cfg!(feature = "metrics") {
            // The attempt this call ran in is this call's to count, in a turn or not.
            nesting::mark_ran();
        }
    }
}

impl<R: Source, A: Count> Run<R, A> {
    /// A call dropped before it finished (its turn ended, or its caller dropped it) reports
    /// itself to its turn: what it did so far, and the attempt or the wait it was in; and
    /// `unfinished` is called, if it had not ended (what a call keeps beside its run is let go
    /// of there, at no cost to a call that ended).
    #[inline]
    pub(crate) fn dropped(&mut self, unfinished: impl FnOnce()) {
        // The retry the quota paid for, if the call was dropped in its wait, is never made.
        self.paid.refund(self.source.quota());
        if self.flags & ENDED == 0 {
            unfinished();
            if self.attempts() > 0 {
                meter::count(self.source.op(), Series::Call(Outcome::Dropped));
            }
        }
        if matches!(self.since, Since::InTurn(_)) {
            self.dropped_in_turn();
        }
    }
}

impl<R: Source, A: Count> Run<R, A> {
    #[cold]
    fn dropped_in_turn(&mut self) {
        let Since::InTurn(flight) = &mut self.since else {
            return;
        };
        flight.dropped_at(self.source.clock().now());
    }
}
