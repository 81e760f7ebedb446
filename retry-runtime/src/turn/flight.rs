//! A call's record in its turn: from its first attempt until it finishes, the engine's `Run`
//! holds a [`Flight`] and tells it what happens (an attempt started, a nested call ran, a wait
//! started, ended or was cut short, a retry or a restart was made, a stream committed); the
//! flight writes that into the turn's report, and the call's totals when it finishes or is
//! dropped. Meanwhile it keeps the call's progress in the ledger of its turn (and of each turn
//! around it) with each write, under the same lock, so the report a turn takes when it ends
//! counts a call it could not drop as it stands. It is the report's one writer; it must not
//! decide or wait. The engine hands it every instant, on the call's own clock; beside each it
//! reads tokio's, so a turn that ends (on tokio's clock) with the call still in flight counts
//! it on the call's clock all the same.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use super::cancel::Listening;
use super::ledger::{End, Progress};
use super::report::TurnReport;
use super::scope::{Scope, with_scope};
use crate::class::Class;
use crate::clock::{Clock as _, TokioClock};
use crate::notice::{Hook, Reached};
use crate::op::Op;
use crate::verdict::StopReason;

/// A call in flight inside a turn: kept by the engine's `Run` from its first attempt until it
/// finishes. If the call is dropped before then, it reports itself to the turn: the attempt
/// it was in, or the wait it was in.
pub(crate) struct Flight {
    scope: Arc<Scope>,
    op: Op,
    progress: Progress,
    /// The failure the wait in progress followed: its class, and how far its attempt got,
    /// which a cut wait's give-up says. Not in the progress its turns keep, which need not
    /// know.
    waiting_after: Option<(Class, Reached)>,
    /// What the wait that just ended leads to, and the failure it followed: written with the
    /// next attempt's start, which follows it in the same poll, under one lock for both (or
    /// with the call's record). Until then its turns see the call still in that wait.
    made: Option<(AfterWait, Class)>,
    /// Its places in the ledgers of its turn and of each turn around it, innermost first:
    /// taken at its first attempt, given back when it has written its record.
    places: Places,
    /// The call's place among those who hear its turn's cancel: taken at its first wait,
    /// kept for the next.
    listening: Option<Listening>,
}

/// A flight's places in the ledgers of its turns, innermost first: the first held in place,
/// so a call in a turn that is not inside another allocates nothing for it.
#[derive(Default)]
struct Places {
    first: Option<usize>,
    outer: Vec<usize>,
}

/// What the attempt after a wait is, as a turn's report counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterWait {
    /// A retry of the call.
    Retry,
    /// A stream's restart after its commit point.
    #[cfg_attr(not(feature = "stream"), allow(dead_code))]
    Restart,
    /// A stream's resume from its cursor.
    #[cfg_attr(not(feature = "stream"), allow(dead_code))]
    Resume,
}

/// A call's flight, if it runs inside a turn; `start` (the instant, and the call's name) is
/// read only then.
#[inline]
pub(crate) fn flight(start: impl FnOnce() -> (Instant, Op)) -> Option<Box<Flight>> {
    with_scope(|scope| {
        let (started, op) = start();
        Box::new(Flight {
            scope: Arc::clone(scope),
            op,
            progress: Progress::new(started, TokioClock.now()),
            waiting_after: None,
            made: None,
            places: Places::default(),
            listening: None,
        })
    })
}

impl Flight {
    /// When the call started.
    pub(crate) fn started(&self) -> Instant {
        self.progress.started()
    }

    /// The turn's deadline, already the sooner of its own and those around it. The flight
    /// holds its turn, so a call asks it directly, without a task-local lookup.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.scope.deadline()
    }

    /// Whether the call's turn, or one around it, was cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.scope.is_cancelled()
    }

    /// Call `each` with the hooks of the call's turn and of those around it, innermost first.
    pub(crate) fn for_each_hook(&self, each: &mut dyn FnMut(&Hook)) {
        self.scope.for_each_hook(each);
    }

    /// An attempt started at `now`: the first takes the call's places in its turns' ledgers.
    pub(crate) fn attempt_started(&mut self, now: Instant) {
        self.progress.attempt_started(now);
        self.progress.seen(now, TokioClock.now());
        let made = self.made.take();
        self.publish(|report| write_made(made, report));
    }

    /// A retried call nested in the current attempt ran: it counts that attempt.
    pub(crate) fn inner_ran(&mut self) {
        self.progress.inner_ran();
        self.publish(|_| {});
    }

    /// A wait of `wanted` started at `now`, after a `class` failure of an attempt that got as
    /// far as `reached`.
    pub(crate) fn wait_started(
        &mut self,
        now: Instant,
        wanted: Duration,
        class: Class,
        reached: Reached,
    ) {
        self.progress.wait_started(now, wanted);
        self.progress.seen(now, TokioClock.now());
        self.waiting_after = Some((class, reached));
        self.publish(|_| {});
    }

    /// A wait for the call's upstream (its pause or its gate) started at `now`, wanting up to
    /// `wanted`: waiting, in the turn's report, and no retry.
    pub(crate) fn upstream_wait_started(&mut self, now: Instant, wanted: Duration) {
        self.progress.wait_started(now, wanted);
        self.progress.seen(now, TokioClock.now());
        self.publish(|_| {});
    }

    /// The wait for the upstream ended after `lasted`: it counts as that long.
    pub(crate) fn upstream_wait_ended(&mut self, lasted: Duration) {
        self.progress.wait_lasted(lasted);
        self.publish(|_| {});
    }

    /// Ready once the call's turn, or one around it, is cancelled: what its wait listens to.
    /// Until then the task of `cx` is woken by a cancel; the place it is kept in is taken at
    /// the first wait and kept for the call's next ones, so no wait allocates.
    pub(crate) fn poll_cancelled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let scope = &self.scope;
        self.listening
            .get_or_insert_with(|| scope.listener())
            .poll(cx)
    }

    /// The wait in progress ran to its end, and the next attempt is `next`: the wait counts as
    /// the one chosen, and `next` in the report when that attempt starts. Returns that wait,
    /// and the failure it followed.
    pub(crate) fn wait_ended(&mut self, next: AfterWait) -> Option<(Duration, Class)> {
        let (wanted, (class, _)) = (self.progress.wait_ended()?, self.waiting_after.take()?);
        self.made = Some((next, class));
        Some((wanted, class))
    }

    /// A cancel cut the wait in progress short at `now`: it counts as long as it lasted, and
    /// is reported as cut with the call's record, when the call gives up. Returns that time,
    /// and the failure the wait followed: its class, and how far its attempt got.
    pub(crate) fn wait_cut(&mut self, now: Instant) -> Option<(Duration, Class, Reached)> {
        let (lasted, (class, reached)) = (self.progress.wait_cut(now)?, self.waiting_after?);
        self.progress.seen(now, TokioClock.now());
        self.publish(|_| {});
        Some((lasted, class, reached))
    }

    /// The call moved to the next upstream of its ordered set.
    pub(crate) fn moved(&self) {
        for turn in self.scope.chain() {
            turn.ledger().report().add_move();
        }
    }

    /// A stream reached its commit point: its output went to the caller.
    #[cfg(feature = "stream")]
    pub(crate) fn committed(&self) {
        for turn in self.scope.chain() {
            turn.ledger().report().add_commit();
        }
    }

    /// The call finished at `now`, and gave up for `gave_up` (`None`: it succeeded). A call
    /// `nested` in another's attempt counts no working time: that attempt's time is the outer
    /// call's to report.
    pub(crate) fn finished(&mut self, now: Instant, nested: bool, gave_up: Option<StopReason>) {
        self.leave(now, End::Finished { nested, gave_up });
    }

    /// The call was dropped at `now`: report what it did so far, and the attempt or the wait
    /// it was in.
    pub(crate) fn dropped_at(&mut self, now: Instant) {
        self.leave(now, End::InFlight);
    }

    /// The turns around the call's own, each with the call's place in its ledger.
    fn around(&self) -> impl Iterator<Item = (&Scope, usize)> {
        let outer = self.places.outer.iter().copied();
        self.scope.chain().skip(1).zip(outer)
    }

    /// `write` the report of the call's turn and of each turn around it, and keep its progress
    /// beside it, under that turn's lock: a turn that ends meanwhile counts the call once. The
    /// first write takes the call's places.
    fn publish(&mut self, mut write: impl FnMut(&mut TurnReport)) {
        let Some(first) = self.places.first else {
            return self.enter(write);
        };
        {
            let mut ledger = self.scope.ledger();
            write(ledger.report());
            ledger.update(first, self.progress);
        }
        for (turn, at) in self.around() {
            let mut ledger = turn.ledger();
            write(ledger.report());
            ledger.update(at, self.progress);
        }
    }

    /// Take the call's places in its turns' ledgers, after `write`.
    #[cold]
    fn enter(&mut self, mut write: impl FnMut(&mut TurnReport)) {
        let mut places = Places::default();
        for turn in self.scope.chain() {
            let mut ledger = turn.ledger();
            write(ledger.report());
            let at = ledger.enter(self.op.clone(), self.progress);
            match places.first {
                None => places.first = Some(at),
                Some(_) => places.outer.push(at),
            }
        }
        self.places = places;
    }

    /// Write the call's record at `now`, ended as `end`, and give its places back, under each
    /// turn's lock.
    fn leave(&mut self, now: Instant, end: End) {
        let made = self.made.take();
        let places = std::mem::take(&mut self.places);
        let outer = places.outer.iter().map(|&at| Some(at));
        // A place for each turn, as `enter` took them (none if it never ran).
        let places = std::iter::once(places.first)
            .chain(outer)
            .chain(std::iter::repeat(None));
        for (turn, at) in self.scope.chain().zip(places) {
            let mut ledger = turn.ledger();
            write_made(made, ledger.report());
            self.progress.record(ledger.report(), &self.op, now, end);
            if let Some(at) = at {
                ledger.leave(at);
            }
        }
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        // A flight the engine ends writes its record and gives its places back; one dropped
        // otherwise gives them back all the same, so its turns count nothing of it twice.
        if let Some(first) = self.places.first {
            let made = self.made.take();
            let mut ledger = self.scope.ledger();
            write_made(made, ledger.report());
            ledger.leave(first);
            drop(ledger);
            for (turn, at) in self.around() {
                let mut ledger = turn.ledger();
                write_made(made, ledger.report());
                ledger.leave(at);
            }
        }
    }
}

/// Count in `report` the attempt `made` after a wait, if one was.
fn write_made(made: Option<(AfterWait, Class)>, report: &mut TurnReport) {
    match made {
        Some((AfterWait::Retry, class)) => report.add_retry(class),
        Some((AfterWait::Restart, _)) => report.add_restart(),
        Some((AfterWait::Resume, _)) => report.add_resume(),
        None => {}
    }
}
