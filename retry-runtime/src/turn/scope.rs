//! The budget scope: a [`Turn`] runs a future with a deadline that every ladder inside it must
//! fit, and reports what the retries cost ([`TurnReport`]).
//!
//! It owns the scope (deadline, cancel, hooks, report), the drop of the work at the deadline,
//! and the records a call leaves in the report. It must not retry or decide: it answers what
//! the engine asks of it (the deadline, whether it is over) and takes the engine's records.

use std::cell::Cell;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::class::Class;
use crate::clock::{Clock, TokioClock};
use crate::notice::{self, Hook, Notice, TurnEnd, TurnEnded};
use crate::verdict::StopReason;

tokio::task_local! {
    static TURN: Arc<Scope>;
}

thread_local! {
    /// How many turns' work is being polled on this thread. A task-local is read through a
    /// lazily registered destructor; this plain counter lets a call outside any turn learn so
    /// with one load, and read no task-local at all.
    static POLLING_TURNS: Cell<u32> = const { Cell::new(0) };
}

/// `read` of the turn the current task runs in, if any, for the engine's lookups. Outside every
/// turn it costs one load of a plain thread-local. The count is raised only while a turn's
/// work is polled, and the task-local is set then; tokio also sets the task-local while it
/// drops the work, when the count is not raised, so the public lookups, which a destructor
/// may call, read the task-local itself.
#[inline]
pub(super) fn with_scope<R>(read: impl FnOnce(&Arc<Scope>) -> R) -> Option<R> {
    if POLLING_TURNS.get() == 0 {
        return None;
    }
    TURN.try_with(read).ok()
}

/// `work` run inside `scope`: the task-local for what a call needs of its turn, and the
/// counter that says cheaply whether there is one.
fn within<F: Future>(scope: Arc<Scope>, work: F) -> impl Future<Output = F::Output> {
    TURN.scope(scope, Counted { work })
}

pin_project_lite::pin_project! {
    /// A turn's work, counted in [`POLLING_TURNS`] while it is polled.
    struct Counted<F> {
        #[pin]
        work: F,
    }
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        struct Leave;
        impl Drop for Leave {
            // On unwind too, so a panicking poll cannot leave the count raised.
            #[inline]
            fn drop(&mut self) {
                POLLING_TURNS.set(POLLING_TURNS.get() - 1);
            }
        }
        POLLING_TURNS.set(POLLING_TURNS.get() + 1);
        let _leave = Leave;
        self.project().work.poll(cx)
    }
}

/// One running turn. Shared (`Arc`) so a nested turn can reach the one around it and a
/// spawned task can carry it ([`TurnHandle`]).
pub(super) struct Scope {
    /// Already the sooner of this turn's own deadline and the enclosing turn's; `None` when a
    /// budget is too large to be an instant (no deadline at all).
    deadline: Option<Instant>,
    hook: Option<Hook>,
    cancel: Arc<Cancel>,
    pub(super) report: Mutex<TurnReport>,
    parent: Option<Arc<Scope>>,
}

impl Scope {
    /// The instant `Turn::run` drops the work, on tokio's own time: the deadline, less the
    /// waits a testing scope has skipped so far (they count as elapsed, as every deadline
    /// check counts them). An attempt timer bounded by the turn is set to this very instant,
    /// so the turn wins a tie.
    fn expiry(&self) -> Option<Instant> {
        let deadline = self.deadline?;
        #[cfg(feature = "test-util")]
        let deadline = crate::testing::before_skipped(deadline);
        Some(deadline)
    }

    /// This turn and every turn around it, innermost first.
    pub(super) fn chain(self: &Arc<Self>) -> impl Iterator<Item = &Scope> {
        std::iter::successors(Some(&**self), |scope| scope.parent.as_deref())
    }

    /// The deadline: already the sooner of this turn's and those around it.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether this turn, or one around it, was cancelled.
    pub(super) fn is_cancelled(self: &Arc<Self>) -> bool {
        self.chain()
            .any(|turn| turn.cancel.cancelled.load(Ordering::Acquire))
    }

    /// The hooks of this turn and of those around it, innermost first.
    pub(super) fn hooks(self: &Arc<Self>) -> Vec<Hook> {
        self.chain().filter_map(|turn| turn.hook.clone()).collect()
    }
}

#[derive(Debug, Default)]
struct Cancel {
    cancelled: AtomicBool,
    notify: Notify,
}

/// A budget scope for a piece of work (a model turn, a request, a job).
///
/// A turn bounds the work, not only the waits. Every retried call inside [`run`](Self::run)
/// that uses `budget = "turn"` (the default) checks the turn's deadline before each wait: a
/// wait that would cross it is not taken, and the failure is reported while the caller can
/// still be told. At the deadline, or when the turn is cancelled, `run` drops the work (tokio's
/// cancellation idiom), with every attempt and wait in flight, and returns at once with
/// [`TurnOutcome::Expired`] or [`TurnOutcome::Cancelled`]; nothing of the work runs on after
/// it returns. The [`TurnReport`] lists the calls that were in flight and the waits that were
/// cut short, and the hooks hear one [`Notice::TurnEnded`]. [`remaining`] gives a call the rest
/// of the turn, for its own client's timeout.
///
/// A turn run inside another is bounded by it too: its deadline is the sooner of the two (a
/// nested turn can shorten the bound, never lengthen it), cancelling the outer turn cancels
/// it, and its retries count in both reports and reach both hooks. A task spawned inside a
/// turn is outside it (task-locals do not follow `tokio::spawn`): carry the turn with
/// [`TurnHandle::scope`]. Such a task is the spawner's, not the turn's: `run` cannot drop it,
/// so at the deadline it runs on until its own ladder sees the expired turn (or its
/// attempt's `timeout` fires).
///
/// ```
/// use retry_runtime::{testing, Class, Policy, Retry, StopReason, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let turn = Turn::new(Duration::from_secs(60)).on_notice(|event| eprintln!("{event}"));
/// let ((outcome, report), _) = testing::scope(turn.run(async {
///     Retry::new(&Policy::OUTAGE).run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })).await
/// }))
/// .await;
/// // 5 + 15 s fit in the minute; the 45 s wait would not.
/// let result = outcome.into_finished().expect("the work finished inside the turn");
/// assert!(matches!(result.unwrap_err().reason(), StopReason::Budget { .. }));
/// assert_eq!(report.waiting(), Duration::from_secs(20));
/// # }
/// ```
pub struct Turn {
    budget: Duration,
    hook: Option<Hook>,
    cancel: Arc<Cancel>,
}

impl Turn {
    /// A turn that must finish within `budget` of the moment it starts running.
    pub fn new(budget: Duration) -> Turn {
        Turn {
            budget,
            hook: None,
            cancel: Arc::default(),
        }
    }

    /// Call `hook` with each retry event inside this turn, as it happens: the place to tell a
    /// person "the model is unavailable: retrying (2 of 4) in 500 ms". A panicking hook is
    /// caught and the call goes on.
    pub fn on_notice(mut self, hook: impl Fn(&Notice<'_>) + Send + Sync + 'static) -> Turn {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// A handle that cancels the turn: [`run`](Self::run) drops the work at once and returns
    /// [`TurnOutcome::Cancelled`]. (A ladder in a task carried in with [`TurnHandle::scope`]
    /// stops waiting and returns its last failure with [`StopReason::Cancelled`].)
    pub fn canceller(&self) -> Canceller {
        Canceller {
            cancel: Arc::clone(&self.cancel),
        }
    }

    /// Run `work` within this turn; return how it ended (its output, if it finished) and the
    /// report of its retries.
    ///
    /// At the deadline, or on cancel, the work is dropped before `run` returns.
    ///
    /// ```
    /// use retry_runtime::Turn;
    /// use retry_runtime::turn::TurnOutcome;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let (outcome, report) = Turn::new(Duration::from_secs(2))
    ///     .run(std::future::pending::<()>())
    ///     .await;
    /// assert!(outcome.is_expired());
    /// assert_eq!(report.calls(), 0);
    /// # }
    /// ```
    pub async fn run<F: Future>(self, work: F) -> (TurnOutcome<F::Output>, TurnReport) {
        let parent = TURN.try_with(Arc::clone).ok();
        let now = TokioClock.now();
        let own = now.checked_add(self.budget);
        let deadline = sooner(own, parent.as_ref().and_then(|p| p.deadline));
        let scope = Arc::new(Scope {
            deadline,
            hook: self.hook,
            cancel: self.cancel,
            report: Mutex::new(TurnReport::default()),
            parent,
        });
        let cancels: Vec<Arc<Cancel>> =
            scope.chain().map(|turn| Arc::clone(&turn.cancel)).collect();
        // On tokio's time: the deadline less the time a testing scope skipped.
        let mut aimed = scope.expiry();
        let expiry = aimed.map(tokio::time::sleep_until);
        let outcome = {
            let mut work = pin!(within(Arc::clone(&scope), work));
            let mut cancelled = pin!(cancelled(cancels));
            let mut expiry = pin!(expiry);
            // Whether the deadline has passed: first aimed again at the deadline net of the
            // waits a testing scope skipped meanwhile (never moved otherwise).
            let mut expired = |cx: &mut Context<'_>| {
                let Some(mut sleep) = expiry.as_mut().as_pin_mut() else {
                    return false;
                };
                let now_aimed = scope.expiry();
                if now_aimed != aimed
                    && let Some(at) = now_aimed
                {
                    aimed = now_aimed;
                    sleep.as_mut().reset(at);
                }
                sleep.poll(cx).is_ready()
            };
            // The turn first: when its deadline and an attempt's timeout fire together, the
            // turn wins. But the work is polled once before the deadline is first read, so a
            // ready future in a zero turn finishes on a paused clock as on a real one.
            let mut polled = false;
            poll_fn(|cx| {
                if cancelled.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(TurnOutcome::Cancelled);
                }
                let first = !std::mem::replace(&mut polled, true);
                if first && let Poll::Ready(output) = work.as_mut().poll(cx) {
                    return Poll::Ready(TurnOutcome::Finished(output));
                }
                if expired(cx) {
                    return Poll::Ready(TurnOutcome::Expired);
                }
                if !first && let Poll::Ready(output) = work.as_mut().poll(cx) {
                    return Poll::Ready(TurnOutcome::Finished(output));
                }
                // The work may have skipped waits of a testing scope: the deadline is nearer.
                if expired(cx) {
                    return Poll::Ready(TurnOutcome::Expired);
                }
                Poll::Pending
            })
            .await
            // The work is dropped here, with every call in flight: each reports itself.
        };
        let report = std::mem::take(&mut *lock(&scope.report));
        let end = match outcome {
            TurnOutcome::Finished(_) => None,
            TurnOutcome::Expired => Some(TurnEnd::Expired),
            TurnOutcome::Cancelled => Some(TurnEnd::Cancelled),
        };
        if let Some(end) = end {
            let ended = TurnEnded {
                end,
                elapsed: TokioClock.now().saturating_duration_since(now),
                in_flight: u32::try_from(report.in_flight.len()).unwrap_or(u32::MAX),
                cut_waits: u32::try_from(report.cut_waits.len()).unwrap_or(u32::MAX),
            };
            let hooks = scope.chain().filter_map(|turn| turn.hook.clone()).collect();
            notice::emit_to(hooks, &Notice::TurnEnded(ended));
        }
        (outcome, report)
    }
}

/// How a [`Turn`] ended: its work finished, or it was dropped at the deadline or on cancel.
///
/// ```
/// use retry_runtime::turn::TurnOutcome;
///
/// let finished = TurnOutcome::Finished(7);
/// assert!(finished.is_finished());
/// assert_eq!(finished.finished(), Some(&7));
/// assert_eq!(finished.into_finished(), Some(7));
/// assert_eq!(TurnOutcome::Finished(7).unwrap(), 7);
/// assert!(TurnOutcome::<u32>::Expired.is_expired());
/// assert_eq!(TurnOutcome::<u32>::Cancelled.into_finished(), None);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnOutcome<T> {
    /// The work finished inside the turn, with this output.
    Finished(T),
    /// The deadline passed first: the work was dropped.
    Expired,
    /// The turn (or one around it) was cancelled first: the work was dropped.
    Cancelled,
}

impl<T> TurnOutcome<T> {
    /// Whether the work finished.
    pub fn is_finished(&self) -> bool {
        matches!(self, TurnOutcome::Finished(_))
    }

    /// Whether the deadline passed first.
    pub fn is_expired(&self) -> bool {
        matches!(self, TurnOutcome::Expired)
    }

    /// Whether the turn was cancelled first.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TurnOutcome::Cancelled)
    }

    /// The work's output, if it finished.
    pub fn finished(&self) -> Option<&T> {
        match self {
            TurnOutcome::Finished(output) => Some(output),
            _ => None,
        }
    }

    /// The work's output, if it finished.
    pub fn into_finished(self) -> Option<T> {
        match self {
            TurnOutcome::Finished(output) => Some(output),
            _ => None,
        }
    }

    /// The work's output.
    ///
    /// # Panics
    ///
    /// If the turn ended before the work did.
    #[track_caller]
    pub fn unwrap(self) -> T {
        match self {
            TurnOutcome::Finished(output) => output,
            TurnOutcome::Expired => panic!("the turn expired before its work finished"),
            TurnOutcome::Cancelled => panic!("the turn was cancelled before its work finished"),
        }
    }
}

/// The turn a task is running in, to carry into a task it spawns.
///
/// ```
/// use retry_runtime::{testing, turn, Class, Policy, Retry, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let ((result, report), _) = testing::scope(Turn::new(Duration::from_secs(10)).run(async {
///     let handle = turn::current().expect("inside a turn");
///     let job = Retry::new(&Policy::OUTAGE).run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));
///     // Without the handle, the spawned ladder would wait its full 65 s.
///     tokio::spawn(handle.scope(job)).await.unwrap()
/// }))
/// .await;
/// assert_eq!(result.unwrap().unwrap_err().attempts(), 2); // 5 s fit in the 10 s turn; 15 s did not
/// assert_eq!(report.retries(), 1);
/// # }
/// ```
#[derive(Clone)]
pub struct TurnHandle {
    scope: Arc<Scope>,
}

impl TurnHandle {
    /// Run `work` inside the turn this handle was taken from: its deadline, cancellation,
    /// hooks and report.
    ///
    /// The task stays the spawner's: [`Turn::run`] cannot drop it at the deadline or on
    /// cancel. Its ladder stops before any wait once the turn is over, a wait in progress ends
    /// on cancel, and an attempt with a `timeout` is bounded by the rest of the turn; an
    /// attempt without one runs on until it ends by itself.
    pub async fn scope<F: Future>(self, work: F) -> F::Output {
        within(self.scope, work).await
    }
}

impl fmt::Debug for TurnHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnHandle")
            .field("deadline", &self.scope.deadline)
            .finish()
    }
}

/// The turn the current task runs in, if any.
pub fn current() -> Option<TurnHandle> {
    TURN.try_with(|scope| TurnHandle {
        scope: Arc::clone(scope),
    })
    .ok()
}

pub(super) fn lock(report: &Mutex<TurnReport>) -> std::sync::MutexGuard<'_, TurnReport> {
    report.lock().unwrap_or_else(|e| e.into_inner())
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn")
            .field("budget", &self.budget)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// Cancels a [`Turn`] from outside it. Cloneable and `Send`.
#[derive(Debug, Clone)]
pub struct Canceller {
    cancel: Arc<Cancel>,
}

impl Canceller {
    /// Cancel the turn: [`Turn::run`] drops its work now, attempts and waits in flight
    /// included; a ladder in a task carried in with [`TurnHandle::scope`] ends its wait and
    /// makes no further retry.
    pub fn cancel(&self) {
        self.cancel.cancelled.store(true, Ordering::Release);
        self.cancel.notify.notify_waiters();
    }
}

/// What the retries inside a turn cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnReport {
    pub(super) calls: u32,
    pub(super) attempts: u32,
    retries: [u32; Class::ALL.len()],
    pub(super) waiting: Duration,
    /// Streams that reached their commit point, and those restarted after it.
    commits: u32,
    restarts: u32,
    /// The working time of the calls not nested in another's attempt, each their whole
    /// elapsed time less their own waits...
    pub(super) working: Duration,
    /// ...and the waits of the nested ones, which that elapsed time includes.
    pub(super) nested_waiting: Duration,
    pub(super) gave_up: Vec<GaveUpRecord>,
    pub(super) in_flight: Vec<InFlight>,
    pub(super) cut_waits: Vec<CutWait>,
}

/// An operation's name as a turn's report keeps it: a literal, or a shared name made at run
/// time. It reads as a `&str`.
///
/// ```
/// use retry_runtime::turn::Op;
/// let op = Op::from("model");
/// assert_eq!(op, "model");
/// assert_eq!(op.as_str(), "model");
/// assert_eq!(Op::from(std::sync::Arc::<str>::from("tenant")).to_string(), "tenant");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Op(OpRepr);

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum OpRepr {
    Literal(&'static str),
    Shared(Arc<str>),
}

impl Op {
    /// The name.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            OpRepr::Literal(op) => op,
            OpRepr::Shared(op) => op,
        }
    }
}

impl From<&'static str> for Op {
    fn from(op: &'static str) -> Op {
        Op(OpRepr::Literal(op))
    }
}

impl From<Arc<str>> for Op {
    fn from(op: Arc<str>) -> Op {
        Op(OpRepr::Shared(op))
    }
}

impl std::ops::Deref for Op {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Op {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Op {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Op {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name a [`Retry`](crate::Retry) can carry: a literal (`&'static str`, free per call), an
/// `Arc<str>` (a reference-count increment per call in a turn), or a `String` (one allocation
/// per call in a turn: prefer `Arc<str>`).
pub trait OpName: AsRef<str> {
    /// The name as a turn's report keeps it.
    fn to_op(&self) -> Op;
}

impl OpName for &'static str {
    #[inline]
    fn to_op(&self) -> Op {
        Op(OpRepr::Literal(self))
    }
}

impl OpName for Arc<str> {
    fn to_op(&self) -> Op {
        Op(OpRepr::Shared(Arc::clone(self)))
    }
}

impl OpName for String {
    fn to_op(&self) -> Op {
        Op(OpRepr::Shared(Arc::from(self.as_str())))
    }
}

/// A call inside a turn whose ladder gave up.
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
    /// The retried calls made in the turn: those that finished, and those dropped in flight.
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

    /// Retries made after a failure of `class`.
    pub fn retries_of(&self, class: Class) -> u32 {
        self.retries[class.index()]
    }

    /// Time spent waiting between attempts: not the far side's time.
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

    /// The calls dropped in the middle of an attempt, in order: the attempt counts in
    /// [`attempts`](Self::attempts), since it was made.
    pub fn in_flight(&self) -> &[InFlight] {
        &self.in_flight
    }

    /// The waits cut short, in order: by a cancel, the deadline, or a call dropped while it
    /// waited. The time they did wait counts in [`waiting`](Self::waiting); the retries after
    /// them were never made and are not counted.
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

/// The sooner of two deadlines, where `None` is no deadline at all.
pub(crate) fn sooner(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What is left of the enclosing turn: `None` outside any turn (or in one without a
/// deadline), zero once it has passed. Pass it to a client's own timeout.
///
/// ```
/// use retry_runtime::{turn, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// assert_eq!(turn::remaining(), None);
/// let (outcome, _) = Turn::new(Duration::from_secs(180))
///     .run(async {
///         tokio::time::sleep(Duration::from_secs(30)).await;
///         turn::remaining()
///     })
///     .await;
/// assert_eq!(outcome.into_finished(), Some(Some(Duration::from_secs(150))));
/// # }
/// ```
pub fn remaining() -> Option<Duration> {
    let deadline = TURN.try_with(|scope| scope.deadline).ok().flatten()?;
    Some(deadline.saturating_duration_since(TokioClock.now()))
}

/// The instant, on tokio's time, at which the enclosing turn drops its work.
pub(crate) fn expiry() -> Option<Instant> {
    with_scope(|scope| scope.expiry()).flatten()
}

fn record(update: impl Fn(&mut TurnReport)) {
    let _ = with_scope(|scope| {
        for turn in scope.chain() {
            update(&mut lock(&turn.report));
        }
    });
}

pub(crate) fn record_retry(class: Class) {
    record(|report| {
        report.retries[class.index()] = report.retries[class.index()].saturating_add(1);
    });
}

/// A stream restarted after its commit point: counted apart from retries.
pub(crate) fn record_restart() {
    record(|report| report.restarts = report.restarts.saturating_add(1));
}

/// A stream reached its commit point: its output went to the caller.
#[cfg(feature = "stream")]
pub(crate) fn record_commit() {
    record(|report| report.commits = report.commits.saturating_add(1));
}

pub(crate) fn record_cut_wait(wait: CutWait) {
    record(|report| report.cut_waits.push(wait.clone()));
}

/// A future that resolves once the enclosing turn, or one around it, is cancelled; `None`
/// outside any turn. A wait listens to it ([`crate::wait`]).
pub(crate) fn cancel_listener() -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
    with_scope(|scope| listen(scope.chain().map(|turn| Arc::clone(&turn.cancel))))
}

/// One future that resolves once any of `cancels` is cancelled. A call in a single turn, the
/// common case, listens with one allocation; a chain of nested turns, with a few more.
fn listen(
    mut cancels: impl Iterator<Item = Arc<Cancel>>,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    let innermost = cancels.next();
    // Collecting an empty iterator allocates nothing.
    let outer: Vec<Arc<Cancel>> = cancels.collect();
    match innermost {
        Some(only) if outer.is_empty() => Box::pin(cancelled_one(only)),
        innermost => Box::pin(cancelled(innermost.into_iter().chain(outer).collect())),
    }
}

/// Resolves once `cancel` is cancelled (at once if it already is).
async fn cancelled_one(cancel: Arc<Cancel>) {
    let mut notified = pin!(cancel.notify.notified());
    // Register before reading the flag, so a cancel between the two is not missed.
    notified.as_mut().enable();
    if cancel.cancelled.load(Ordering::Acquire) {
        return;
    }
    notified.await;
}

/// Resolves once any of `cancels` is cancelled (at once if one already is); never, if there
/// are none.
async fn cancelled(cancels: Vec<Arc<Cancel>>) {
    let mut notified: Vec<_> = cancels
        .iter()
        .map(|cancel| Box::pin(cancel.notify.notified()))
        .collect();
    // Register before reading the flags, so a cancel between the two is not missed.
    for waiter in &mut notified {
        waiter.as_mut().enable();
    }
    if cancels.iter().any(|c| c.cancelled.load(Ordering::Acquire)) {
        return;
    }
    poll_fn(|cx| {
        if notified
            .iter_mut()
            .any(|waiter| waiter.as_mut().poll(cx).is_ready())
        {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}
