//! A call's record in its turn: from its first attempt until it finishes, the engine's `Run`
//! holds a [`Flight`] and tells it what happens (an attempt started, a nested call ran, a wait
//! started, ended or was cut short, a retry or a restart was made, a stream committed); the
//! flight writes that into the turn's report, and the call's totals when it finishes or is
//! dropped. It is the report's one writer, and owns its per-call arithmetic; it must not
//! decide or wait, and it reads no clock: the engine hands it every instant.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use super::cancel::Listening;
use super::report::{Call, CutWait, InFlight};
use super::scope::{Scope, with_scope};
use crate::class::Class;
use crate::notice::{Hook, Reached};
use crate::op::Op;
use crate::verdict::StopReason;

/// A call in flight inside a turn: kept by the engine's `Run` from its first attempt until it
/// finishes. If the call is dropped before then, it reports itself to the turn: the attempt
/// it was in, or the wait it was in.
pub(crate) struct Flight {
    scope: Arc<Scope>,
    /// When the call started.
    started: Instant,
    /// When the current attempt started.
    attempt_started: Instant,
    /// The waits over so far, each as the report counts it: a wait that ran to its end as the
    /// wait chosen, exact to the nanosecond; one cut short as long as it lasted.
    waited: Duration,
    /// The wait in progress: since when, how long it was to be, and after what failure (its
    /// class, and how far its attempt got, which a cut wait's give-up says).
    waiting: Option<(Instant, Duration, Class, Reached)>,
    /// The attempts in which a retried call nested in this one ran: that call counts them.
    hollow_attempts: u32,
    /// The call's place among those who hear its turn's cancel: taken at its first wait,
    /// kept for the next.
    listening: Option<Listening>,
}

/// A call's flight, if it runs inside a turn; `now` is read only then.
/// What the attempt after a wait is, as a turn's report counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// A retry of the call.
    Retry,
    /// A stream's restart after its commit point.
    Restart,
    /// A stream's resume from its cursor.
    #[cfg_attr(not(feature = "stream"), allow(dead_code))]
    Resume,
}

#[inline]
pub(crate) fn flight(now: impl FnOnce() -> Instant) -> Option<Box<Flight>> {
    with_scope(|scope| {
        let started = now();
        Box::new(Flight {
            scope: Arc::clone(scope),
            started,
            attempt_started: started,
            waited: Duration::ZERO,
            waiting: None,
            hollow_attempts: 0,
            listening: None,
        })
    })
}

impl Flight {
    /// When the call started.
    pub(crate) fn started(&self) -> Instant {
        self.started
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

    /// An attempt started at `now`.
    pub(crate) fn attempt_started(&mut self, now: Instant) {
        self.attempt_started = now;
    }

    /// A retried call nested in the current attempt ran: it counts that attempt.
    pub(crate) fn inner_ran(&mut self) {
        self.hollow_attempts = self.hollow_attempts.saturating_add(1);
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
        self.waiting = Some((now, wanted, class, reached));
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

    /// The wait in progress ran to its end, and the next attempt is `next`: counted in the
    /// report, the wait as the one chosen. Returns that wait, and the failure it followed.
    pub(crate) fn wait_ended(&mut self, next: Next) -> Option<(Duration, Class)> {
        let (_, wanted, class, _) = self.waiting.take()?;
        self.waited = self.waited.saturating_add(wanted);
        self.scope.write(|report| match next {
            Next::Retry => report.add_retry(class),
            Next::Restart => report.add_restart(),
            Next::Resume => report.add_resume(),
        });
        Some((wanted, class))
    }

    /// A cancel cut the wait in progress short at `now`, after `op`'s attempt `after_attempt`:
    /// reported as cut, counted as long as it lasted. Returns that time, and the failure the
    /// wait followed: its class, and how far its attempt got.
    pub(crate) fn wait_cut(
        &mut self,
        op: Op,
        after_attempt: u32,
        now: Instant,
    ) -> Option<(Duration, Class, Reached)> {
        let (since, wanted, class, reached) = self.waiting.take()?;
        let waited = now.saturating_duration_since(since);
        self.waited = self.waited.saturating_add(waited);
        let cut = CutWait {
            op,
            after_attempt,
            waited,
            wanted,
        };
        self.scope.write(|report| report.add_cut_wait(cut.clone()));
        Some((waited, class, reached))
    }

    /// A stream reached its commit point: its output went to the caller.
    #[cfg(feature = "stream")]
    pub(crate) fn committed(&self) {
        self.scope.write(super::report::TurnReport::add_commit);
    }

    /// The call `op` finished at `now`, after `attempts` attempts, and gave up for `gave_up`
    /// (`None`: it succeeded). A call `nested` in another's attempt counts no working time:
    /// that attempt's time is the outer call's to report, and its waits, which the outer
    /// call's time includes, are taken off it.
    pub(crate) fn finished(
        &self,
        op: Op,
        attempts: u32,
        now: Instant,
        nested: bool,
        gave_up: Option<StopReason>,
    ) {
        let call = self.call(op, attempts, self.waited, now, nested, gave_up);
        self.scope.write(|report| report.add_call(&call));
    }

    /// The call `op` was dropped at `now`, after `attempts` attempts: report what it did so
    /// far, and the attempt or the wait it was in.
    pub(crate) fn dropped_at(&self, op: Op, attempts: u32, now: Instant) {
        let waiting = self
            .waiting
            .map_or(Duration::ZERO, |(since, _, _, _)| {
                now.saturating_duration_since(since)
            })
            .saturating_add(self.waited);
        let call = self.call(op, attempts, waiting, now, false, None);
        self.dropped(call, now);
    }

    /// The call `op` as the report counts it at `now`: its working time is what it did not
    /// spend `waiting`, none if it was `nested` in another's attempt.
    fn call(
        &self,
        op: Op,
        attempts: u32,
        waiting: Duration,
        now: Instant,
        nested: bool,
        gave_up: Option<StopReason>,
    ) -> Call {
        let elapsed = now.saturating_duration_since(self.started);
        Call {
            op,
            attempts,
            counted_attempts: attempts.saturating_sub(self.hollow_attempts),
            waiting,
            working: if nested {
                Duration::ZERO
            } else {
                elapsed.saturating_sub(waiting)
            },
            nested,
            gave_up,
        }
    }

    /// Report the call as dropped at `now`: its counts so far, and what it was doing.
    fn dropped(&self, call: Call, now: Instant) {
        let stage = match self.waiting {
            Some((since, wanted, _, _)) => Stage::Waiting(CutWait {
                op: call.op.clone(),
                after_attempt: call.attempts,
                waited: now.saturating_duration_since(since),
                wanted,
            }),
            None => Stage::Working(InFlight {
                op: call.op.clone(),
                attempt: call.attempts,
                running: now.saturating_duration_since(self.attempt_started),
            }),
        };
        self.scope.write(|report| {
            report.add_call(&call);
            match &stage {
                Stage::Waiting(wait) => report.add_cut_wait(wait.clone()),
                Stage::Working(call) => report.add_in_flight(call.clone()),
            }
        });
    }
}

/// What a dropped call was doing.
enum Stage {
    Working(InFlight),
    Waiting(CutWait),
}
