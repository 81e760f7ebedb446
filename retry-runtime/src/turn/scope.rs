//! A turn's scope, as the task it runs in carries it: the task-local that a call finds its
//! turn through, the cheap test of whether there is one, the [`Scope`] itself (deadline,
//! hooks, cancels, ledger, and the turn around it), and what a task asks of it
//! ([`current`], [`remaining`]). It owns the plumbing; it must not run, cancel or report a
//! turn (`run.rs`, `cancel.rs`, `report.rs` do), nor retry, wait or decide.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::task::futures::TaskLocalFuture;
use tokio::time::Instant;

use super::cancel::{Cancel, Listening};
use super::ledger::Ledger;
use super::report::TurnReport;
use crate::clock::{Clock, TokioClock};
use crate::notice::Hook;

// The old home of an operation's name, for the files that still import it from here (the
// streams and the layers); the engine owns it now.

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
// Always inlined: on every call's first try (outside a turn, one thread-local read).
#[inline(always)]
pub(super) fn with_scope<R>(read: impl FnOnce(&Arc<Scope>) -> R) -> Option<R> {
    if POLLING_TURNS.get() == 0 {
        return None;
    }
    TURN.try_with(read).ok()
}

/// A turn's work, run inside its scope.
pub(super) type Within<F> = TaskLocalFuture<Arc<Scope>, Counted<F>>;

/// `work` run inside `scope`: the task-local for what a call needs of its turn, and the
/// counter that says cheaply whether there is one.
pub(super) fn within<F: Future>(scope: Arc<Scope>, work: F) -> Within<F> {
    TURN.scope(scope, Counted { work })
}

pin_project_lite::pin_project! {
    /// A turn's work, counted in [`POLLING_TURNS`] while it is polled.
    pub(super) struct Counted<F> {
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
    /// The report, and the calls in flight that count in it.
    ledger: Mutex<Ledger>,
    parent: Option<Arc<Scope>>,
    /// This turn's place among those who hear the enclosing turn's cancel.
    nested_at: Option<usize>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let (Some(parent), Some(at)) = (&self.parent, self.nested_at) {
            parent.cancel.release(at);
        }
    }
}

impl Scope {
    /// A turn of `budget` from `now`, inside the turn the current task runs in, if any.
    pub(super) fn open(
        now: Instant,
        budget: Duration,
        hook: Option<Hook>,
        cancel: Arc<Cancel>,
    ) -> Arc<Scope> {
        let parent = TURN.try_with(Arc::clone).ok();
        let own = now.checked_add(budget);
        // Cancelling the enclosing turn cancels this one.
        let nested_at = parent.as_ref().and_then(|p| p.cancel.nest(&cancel));
        Arc::new(Scope {
            deadline: sooner(own, parent.as_ref().and_then(|p| p.deadline)),
            hook,
            cancel,
            ledger: Mutex::new(Ledger::new()),
            parent,
            nested_at,
        })
    }

    /// The instant `Turn::run` drops the work, on tokio's own time: the deadline, less the
    /// waits a testing scope has skipped so far (they count as elapsed, as every deadline
    /// check counts them). An attempt timer bounded by the turn is set to this very instant,
    /// so the turn wins a tie.
    pub(super) fn expiry(&self) -> Option<Instant> {
        let deadline = self.deadline?;
        #[cfg(feature = "test-util")]
        let deadline = crate::test_scope::before_skipped(deadline);
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
        self.chain().any(|turn| turn.cancel.is_cancelled())
    }

    /// A place among those who hear this turn's cancel, which a cancel of a turn around it
    /// sets too.
    pub(super) fn listener(&self) -> Listening {
        Listening::new(Arc::clone(&self.cancel))
    }

    /// Call `each` with the hooks of this turn and of those around it, innermost first, in
    /// place: nothing is collected, so a retry in a turn allocates nothing to tell them.
    pub(super) fn for_each_hook(self: &Arc<Self>, each: &mut dyn FnMut(&Hook)) {
        for turn in self.chain() {
            if let Some(hook) = &turn.hook {
                each(hook);
            }
        }
    }

    /// This turn's report as it stands at `now`, with the calls still in flight in it (those
    /// carried into tasks, which the turn cannot drop) as they stand then; an empty one is
    /// left for what they write after.
    pub(super) fn take_report(&self, now: Instant) -> TurnReport {
        self.ledger().take(now)
    }

    /// This turn's ledger: a call's flight writes the report and keeps its progress in it
    /// under this one lock.
    pub(super) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // A flight never panics under the lock; a poisoned ledger is still a ledger.
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
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
    /// The task stays the spawner's: [`Turn::run`](crate::Turn::run) cannot drop it at the
    /// deadline or on cancel. Its ladder stops before any wait once the turn is over, a wait
    /// in progress ends on cancel, and an attempt with a `timeout` is bounded by the rest of
    /// the turn; an attempt without one runs on until it ends by itself. The report the turn
    /// takes when it ends counts the task's calls still in flight as they stand then.
    ///
    /// The future returned is `work` in the turn's task-local, no larger: not an `async fn`'s,
    /// which would keep `work` twice in every task that carries a turn.
    pub fn scope<F: Future>(self, work: F) -> impl Future<Output = F::Output> {
        within(self.scope, work)
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
