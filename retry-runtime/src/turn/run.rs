//! Running a turn: [`Turn`], the budget scope a piece of work runs in, the [`TurnFuture`] its
//! `run` returns, which drops the work at the deadline or on cancel, and how it ended
//! ([`TurnOutcome`]). It owns the race of the work against the deadline and the cancel, and
//! the end's notice; it must not retry, wait or decide, and it writes no report (the calls'
//! flights do).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::cancel::{Cancel, Canceller, Listening};
use super::report::TurnReport;
use super::scope::{Scope, Within, within};
use crate::clock::{Clock, TokioClock};
use crate::notice::{self, Hook, Notice, TurnEnd, TurnEnded};

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
/// attempt's `timeout` fires). The report counts its calls still in flight as they stand when
/// the turn ends: their attempts and waits so far, and the attempt or the wait each is in.
///
/// [`remaining`]: super::remaining
/// [`TurnHandle::scope`]: super::TurnHandle::scope
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
    /// [`TurnOutcome::Cancelled`]. (A ladder in a task carried in with
    /// [`TurnHandle::scope`](super::TurnHandle::scope) stops waiting and returns its last
    /// failure with [`StopReason::Cancelled`](crate::StopReason::Cancelled).)
    pub fn canceller(&self) -> Canceller {
        Canceller::new(Arc::clone(&self.cancel))
    }

    /// Run `work` within this turn; the [`TurnFuture`] resolves to how it ended (its output,
    /// if it finished) and the report of its retries. The turn starts when that future is
    /// first polled, inside the turn the polling task runs in then, if any.
    ///
    /// At the deadline, or on cancel, the work is dropped before the future resolves.
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
    pub fn run<F: Future>(self, work: F) -> TurnFuture<F> {
        TurnFuture {
            state: TurnState::Ready { turn: self, work },
        }
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

pin_project_lite::pin_project! {
    /// The future [`Turn::run`] returns: the work inside its turn, raced against the turn's
    /// deadline and its cancel. It resolves to how the turn ended and its report; the work is
    /// dropped before it does. It is `Send` when the work is (and `Sync` when the work is), so
    /// it can be named in a field and spawned.
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Retry, Turn, TurnReport};
    /// use retry_runtime::turn::{TurnFuture, TurnOutcome};
    /// use std::future::Future;
    /// use std::pin::Pin;
    /// use std::time::Duration;
    ///
    /// type Work = Pin<Box<dyn Future<Output = u32> + Send>>;
    ///
    /// // A job that keeps its turn in a field of a named type.
    /// struct Job {
    ///     turn: TurnFuture<Work>,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let work: Work = Box::pin(async {
    ///     Retry::new(&Policy::AVAILABILITY)
    ///         .run(async |attempt| if attempt < 2 { Err(Class::Transport) } else { Ok(7) })
    ///         .await
    ///         .unwrap_or(0)
    /// });
    /// let job = Job { turn: Turn::new(Duration::from_secs(10)).run(work) };
    /// let spawned = tokio::spawn(job.turn);
    /// let (outcome, report): (TurnOutcome<u32>, TurnReport) = spawned.await.unwrap();
    /// assert_eq!(outcome.unwrap(), 7);
    /// assert_eq!(report.retries(), 1);
    /// # }
    /// ```
    #[must_use = "a turn does nothing unless it is awaited"]
    pub struct TurnFuture<F> {
        #[pin]
        state: TurnState<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    #[project_replace = StateOwned]
    enum TurnState<F> {
        // Not yet polled: the turn has not started.
        Ready { turn: Turn, work: F },
        Running {
            #[pin]
            work: Within<F>,
            // `None`: no deadline at all.
            #[pin]
            expiry: Option<Sleep>,
            watch: Watch,
        },
        Done,
    }
}

/// What a running turn watches besides its work: its scope, since when it runs, and its
/// cancel.
struct Watch {
    scope: Arc<Scope>,
    started: Instant,
    cancelled: Listening,
    /// Whether the work has been polled yet.
    polled: bool,
}

impl<F: Future> Future for TurnFuture<F> {
    type Output = (TurnOutcome<F::Output>, TurnReport);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                StateProj::Ready { .. } => {
                    if let StateOwned::Ready { turn, work } =
                        state.as_mut().project_replace(TurnState::Done)
                    {
                        state.set(TurnState::start(turn, work));
                    }
                }
                StateProj::Running {
                    work,
                    expiry,
                    watch,
                } => {
                    let outcome = ready!(watch.poll(work, expiry, cx));
                    let (scope, started) = (Arc::clone(&watch.scope), watch.started);
                    // The work is dropped here, with every call in flight: each reports itself.
                    state.set(TurnState::Done);
                    return Poll::Ready(ended(&scope, started, outcome));
                }
                StateProj::Done => panic!("a `TurnFuture` polled after it resolved"),
            }
        }
    }
}

impl<F: Future> TurnState<F> {
    /// `turn` started now, with `work` inside it: on tokio's time, less what a testing scope
    /// skipped, and inside the turn the task runs in, if any.
    fn start(turn: Turn, work: F) -> TurnState<F> {
        let started = TokioClock.now();
        let scope = Scope::open(started, turn.budget, turn.hook, turn.cancel);
        TurnState::Running {
            expiry: scope.expiry().map(tokio::time::sleep_until),
            watch: Watch {
                cancelled: scope.listener(),
                scope: Arc::clone(&scope),
                started,
                polled: false,
            },
            work: within(scope, work),
        }
    }
}

impl Watch {
    /// How the turn ended, once it has. The turn first: when its deadline and an attempt's
    /// timeout fire together, the turn wins. But the work is polled once before the deadline
    /// is first read, so a ready future in a zero turn finishes on a paused clock as on a real
    /// one.
    fn poll<F: Future>(
        &mut self,
        mut work: Pin<&mut Within<F>>,
        mut expiry: Pin<&mut Option<Sleep>>,
        cx: &mut Context<'_>,
    ) -> Poll<TurnOutcome<F::Output>> {
        if self.cancelled.poll(cx).is_ready() {
            return Poll::Ready(TurnOutcome::Cancelled);
        }
        let first = !std::mem::replace(&mut self.polled, true);
        if first && let Poll::Ready(output) = work.as_mut().poll(cx) {
            return Poll::Ready(TurnOutcome::Finished(output));
        }
        if self.expired(expiry.as_mut(), cx) {
            return Poll::Ready(TurnOutcome::Expired);
        }
        if !first && let Poll::Ready(output) = work.poll(cx) {
            return Poll::Ready(TurnOutcome::Finished(output));
        }
        // The work may have skipped waits of a testing scope: the deadline is nearer.
        if self.expired(expiry, cx) {
            return Poll::Ready(TurnOutcome::Expired);
        }
        Poll::Pending
    }

    /// Whether the deadline has passed: first aimed again at the deadline net of the waits a
    /// testing scope skipped meanwhile (never moved otherwise).
    fn expired(&self, expiry: Pin<&mut Option<Sleep>>, cx: &mut Context<'_>) -> bool {
        let Some(mut sleep) = expiry.as_pin_mut() else {
            return false;
        };
        if let Some(at) = self.scope.expiry()
            && at != sleep.deadline()
        {
            sleep.as_mut().reset(at);
        }
        sleep.poll(cx).is_ready()
    }
}

/// The turn in `scope`, started at `started`, ended with `outcome`, its work dropped: its
/// report, and, if it ended before its work, the notice that says so.
fn ended<T>(
    scope: &Arc<Scope>,
    started: Instant,
    outcome: TurnOutcome<T>,
) -> (TurnOutcome<T>, TurnReport) {
    let now = TokioClock.now();
    let report = scope.take_report(now);
    let end = match outcome {
        TurnOutcome::Finished(_) => None,
        TurnOutcome::Expired => Some(TurnEnd::Expired),
        TurnOutcome::Cancelled => Some(TurnEnd::Cancelled),
    };
    if let Some(end) = end {
        let ended = TurnEnded {
            end,
            elapsed: now.saturating_duration_since(started),
            in_flight: u32::try_from(report.in_flight().len()).unwrap_or(u32::MAX),
            cut_waits: u32::try_from(report.cut_waits().len()).unwrap_or(u32::MAX),
        };
        notice::emit_to(|each| scope.for_each_hook(each), &Notice::TurnEnded(ended));
    }
    (outcome, report)
}

impl<F> fmt::Debug for TurnFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            TurnState::Ready { .. } => "ready",
            TurnState::Running { .. } => "running",
            TurnState::Done => "done",
        };
        f.debug_struct("TurnFuture").field("state", &state).finish()
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
