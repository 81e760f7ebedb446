//! The budget scope: a [`Turn`] runs a future with a deadline that every ladder inside it must
//! fit, and reports what the retries cost ([`TurnReport`]).

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::class::Class;
use crate::clock::{Clock, Sleep, TokioClock};
use crate::notice::{Hook, RetryEvent};
use crate::verdict::StopReason;

tokio::task_local! {
    static TURN: Arc<Scope>;
}

/// One running turn. Shared (`Arc`) so a nested turn can reach the one around it and a
/// spawned task can carry it ([`TurnHandle`]).
struct Scope {
    /// Already the sooner of this turn's own deadline and the enclosing turn's; `None` when a
    /// budget is too large to be an instant (no deadline at all).
    deadline: Option<Instant>,
    hook: Option<Hook>,
    cancel: Arc<Cancel>,
    report: Mutex<TurnReport>,
    parent: Option<Arc<Scope>>,
}

impl Scope {
    /// This turn and every turn around it, innermost first.
    fn chain(self: &Arc<Self>) -> impl Iterator<Item = &Scope> {
        std::iter::successors(Some(&**self), |scope| scope.parent.as_deref())
    }
}

#[derive(Debug, Default)]
struct Cancel {
    cancelled: AtomicBool,
    notify: Notify,
}

/// A budget scope for a piece of work (a model turn, a request, a job).
///
/// Every retried call inside [`run`](Self::run) that uses `budget = "turn"` (the default)
/// checks the turn's deadline before each wait: a wait that would cross it is not taken, and
/// the failure is reported while the caller can still be told. An expired or cancelled turn is
/// never retried.
///
/// The turn does not abort an attempt that is still running when the deadline passes: that
/// attempt's own deadline is the caller's (give it a timeout). When it returns a failure, the
/// ladder sees the expired turn and gives up with [`StopReason::Cancelled`].
///
/// A turn run inside another is bounded by it too: its deadline is the sooner of the two,
/// cancelling the outer turn cancels it, and its retries count in both reports and reach both
/// hooks. A task spawned inside a turn is outside it (task-locals do not follow
/// `tokio::spawn`): carry the turn with [`TurnHandle::scope`].
///
/// ```
/// use retry_runtime::{testing, Class, Policy, Retry, StopReason, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let turn = Turn::new(Duration::from_secs(60)).on_notice(|event| eprintln!("{event}"));
/// let ((result, report), _) = testing::scope(turn.run(async {
///     Retry::new(&Policy::OUTAGE).run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })).await
/// }))
/// .await;
/// // 5 + 15 s fit in the minute; the 45 s wait would not.
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
    pub fn on_notice(mut self, hook: impl Fn(&RetryEvent<'_>) + Send + Sync + 'static) -> Turn {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// A handle that cancels the turn: a ladder waiting inside it stops at once and returns
    /// its last failure with [`StopReason::Cancelled`].
    pub fn canceller(&self) -> Canceller {
        Canceller {
            cancel: Arc::clone(&self.cancel),
        }
    }

    /// Run `work` within this turn; return its output and the report of its retries.
    pub async fn run<F: Future>(self, work: F) -> (F::Output, TurnReport) {
        let parent = TURN.try_with(Arc::clone).ok();
        let own = TokioClock.now().checked_add(self.budget);
        let deadline = sooner(own, parent.as_ref().and_then(|p| p.deadline));
        let scope = Arc::new(Scope {
            deadline,
            hook: self.hook,
            cancel: self.cancel,
            report: Mutex::new(TurnReport::default()),
            parent,
        });
        let output = TURN.scope(Arc::clone(&scope), work).await;
        let report = std::mem::take(&mut *lock(&scope.report));
        (output, report)
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
/// assert_eq!(result.unwrap_err().attempts(), 2); // 5 s fit in the 10 s turn; 15 s did not
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
    pub async fn scope<F: Future>(self, work: F) -> F::Output {
        TURN.scope(self.scope, work).await
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

fn lock(report: &Mutex<TurnReport>) -> std::sync::MutexGuard<'_, TurnReport> {
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
    /// Cancel the turn: waits end now, and no further retry is made.
    pub fn cancel(&self) {
        self.cancel.cancelled.store(true, Ordering::Release);
        self.cancel.notify.notify_waiters();
    }
}

/// What the retries inside a turn cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnReport {
    calls: u32,
    attempts: u32,
    retries: [u32; Class::ALL.len()],
    waiting: Duration,
    working: Duration,
    gave_up: Vec<GaveUpRecord>,
}

/// A call inside a turn whose ladder gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GaveUpRecord {
    /// The operation's name.
    pub op: &'static str,
    /// Why it gave up.
    pub reason: StopReason,
    /// The attempts it made.
    pub attempts: u32,
}

impl TurnReport {
    /// The retried calls that finished in the turn.
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// Attempts made in all, first attempts included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Retries made in all.
    pub fn retries(&self) -> u32 {
        self.retries.iter().sum()
    }

    /// Retries made after a failure of `class`.
    pub fn retries_of(&self, class: Class) -> u32 {
        self.retries[class.index()]
    }

    /// Time spent waiting between attempts: not the far side's time.
    pub fn waiting(&self) -> Duration {
        self.waiting
    }

    /// Time spent inside the attempts themselves.
    pub fn working(&self) -> Duration {
        self.working
    }

    /// The calls that gave up, in order.
    pub fn gave_up(&self) -> &[GaveUpRecord] {
        &self.gave_up
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
            self.working.as_millis(),
            self.waiting.as_millis()
        )?;
        for record in &self.gave_up {
            write!(
                f,
                "; `{}` gave up after {}: {}",
                record.op, record.attempts, record.reason
            )?;
        }
        Ok(())
    }
}

/// A finished call, as the engine reports it to the turn.
pub(crate) struct Call {
    pub(crate) op: &'static str,
    pub(crate) attempts: u32,
    pub(crate) waiting: Duration,
    pub(crate) working: Duration,
    pub(crate) gave_up: Option<StopReason>,
}

/// The sooner of two deadlines, where `None` is no deadline at all.
pub(crate) fn sooner(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[inline]
pub(crate) fn is_active() -> bool {
    TURN.try_with(|_| ()).is_ok()
}

pub(crate) fn deadline() -> Option<Instant> {
    TURN.try_with(|scope| scope.deadline).ok().flatten()
}

/// Whether this turn, or one around it, was cancelled.
pub(crate) fn is_cancelled() -> bool {
    TURN.try_with(|scope| {
        scope
            .chain()
            .any(|turn| turn.cancel.cancelled.load(Ordering::Acquire))
    })
    .unwrap_or(false)
}

/// The hooks of this turn and of those around it, innermost first.
pub(crate) fn hooks() -> Vec<Hook> {
    TURN.try_with(|scope| scope.chain().filter_map(|turn| turn.hook.clone()).collect())
        .unwrap_or_default()
}

fn record(update: impl Fn(&mut TurnReport)) {
    let _ = TURN.try_with(|scope| {
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

pub(crate) fn record_call(call: Call) {
    record(|report| {
        report.calls = report.calls.saturating_add(1);
        report.attempts = report.attempts.saturating_add(call.attempts);
        report.waiting = report.waiting.saturating_add(call.waiting);
        report.working = report.working.saturating_add(call.working);
        if let Some(reason) = call.gave_up {
            report.gave_up.push(GaveUpRecord {
                op: call.op,
                reason,
                attempts: call.attempts,
            });
        }
    });
}

/// Sleep, unless the turn (or one around it) is cancelled first; resolves to true if it was.
/// Boxed: it is made only when a retry waits, and keeps the cancellation machinery out of the
/// caller's future.
pub(crate) fn sleep_or_cancel(mut sleep: Sleep) -> Pin<Box<dyn Future<Output = bool> + Send>> {
    let cancels: Vec<Arc<Cancel>> = TURN
        .try_with(|scope| scope.chain().map(|turn| Arc::clone(&turn.cancel)).collect())
        .unwrap_or_default();
    if cancels.is_empty() {
        return Box::pin(async move {
            sleep.await;
            false
        });
    }
    Box::pin(async move {
        let mut notified: Vec<_> = cancels
            .iter()
            .map(|cancel| Box::pin(cancel.notify.notified()))
            .collect();
        // Register before reading the flags, so a cancel between the two is not missed.
        for waiter in &mut notified {
            waiter.as_mut().enable();
        }
        if cancels.iter().any(|c| c.cancelled.load(Ordering::Acquire)) {
            return true;
        }
        poll_fn(|cx| {
            if notified
                .iter_mut()
                .any(|waiter| waiter.as_mut().poll(cx).is_ready())
            {
                return Poll::Ready(true);
            }
            sleep.as_mut().poll(cx).map(|()| false)
        })
        .await
    })
}
