//! The budget scope: a [`Turn`] runs a future with a deadline that every ladder inside it must
//! fit, and reports what the retries cost ([`TurnReport`]).

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
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
    static TURN: Scope;
}

struct Scope {
    deadline: Instant,
    hook: Option<Hook>,
    cancel: Arc<Cancel>,
    report: Mutex<TurnReport>,
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
/// ```
/// use retry_runtime::{testing, Class, Policy, Retry, StopReason, Turn};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let turn = Turn::new(Duration::from_secs(60)).on_notice(|event| eprintln!("{event}"));
/// let ((result, report), _) = testing::scope(turn.run(async {
///     Retry::new(&Policy::OUTAGE).run(async |_| Err::<(), _>(Class::Unavailable)).await
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
        let scope = Scope {
            deadline: TokioClock.now() + self.budget,
            hook: self.hook,
            cancel: self.cancel,
            report: Mutex::new(TurnReport::default()),
        };
        let mut scoped = pin!(TURN.scope(scope, work));
        let output = scoped.as_mut().await;
        let report = scoped
            .as_mut()
            .take_value()
            .map(|scope| scope.report.into_inner().unwrap_or_else(|e| e.into_inner()))
            .unwrap_or_default();
        (output, report)
    }
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

#[inline]
pub(crate) fn is_active() -> bool {
    TURN.try_with(|_| ()).is_ok()
}

pub(crate) fn deadline() -> Option<Instant> {
    TURN.try_with(|scope| scope.deadline).ok()
}

pub(crate) fn is_cancelled() -> bool {
    TURN.try_with(|scope| scope.cancel.cancelled.load(Ordering::Acquire))
        .unwrap_or(false)
}

pub(crate) fn hook() -> Option<Hook> {
    TURN.try_with(|scope| scope.hook.clone()).ok().flatten()
}

pub(crate) fn record_retry(class: Class) {
    let _ = TURN.try_with(|scope| {
        let mut report = scope.report.lock().unwrap_or_else(|e| e.into_inner());
        report.retries[class.index()] = report.retries[class.index()].saturating_add(1);
    });
}

pub(crate) fn record_call(call: Call) {
    let _ = TURN.try_with(|scope| {
        let mut report = scope.report.lock().unwrap_or_else(|e| e.into_inner());
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

/// Sleep, unless the turn is cancelled first; resolves to true if it was. Boxed: it is made
/// only when a retry waits, and keeps the cancellation machinery out of the caller's future.
pub(crate) fn sleep_or_cancel(mut sleep: Sleep) -> Pin<Box<dyn Future<Output = bool> + Send>> {
    let Some(cancel) = TURN.try_with(|scope| Arc::clone(&scope.cancel)).ok() else {
        return Box::pin(async move {
            sleep.await;
            false
        });
    };
    Box::pin(async move {
        let mut notified = pin!(cancel.notify.notified());
        // Register before reading the flag, so a cancel between the two is not missed.
        notified.as_mut().enable();
        if cancel.cancelled.load(Ordering::Acquire) {
            return true;
        }
        poll_fn(|cx| {
            if notified.as_mut().poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            sleep.as_mut().poll(cx).map(|()| false)
        })
        .await
    })
}
