//! A call's record in its turn: from its first attempt until it finishes, the engine's `Run`
//! holds a [`Flight`] and tells it what happens (an attempt started, a nested call ran, a wait
//! started and ended); the flight turns that into the turn's report when the call finishes or
//! is dropped. It owns the report's per-call arithmetic; it must not decide or wait, and it
//! reads no clock: the engine hands it every instant.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::scope::{CutWait, GaveUpRecord, InFlight, Op, Scope, TurnReport, lock, with_scope};
use crate::class::Class;
use crate::notice::Hook;
use crate::verdict::StopReason;

/// A finished or dropped call, as its turn's report counts it.
struct Call {
    op: Op,
    /// The attempts this call's ladder made.
    attempts: u32,
    /// Those that count in the turn's total: not the attempts in which a retried call nested
    /// in this one made the attempts, so each attempt counts once, at the innermost ladder.
    counted_attempts: u32,
    waiting: Duration,
    working: Duration,
    /// Whether the call ran inside another's attempt, whose time includes its waits.
    nested: bool,
    gave_up: Option<StopReason>,
}

/// A call in flight inside a turn: kept by the engine's `Run` from its first attempt until it
/// finishes. If the call is dropped before then, it reports itself to the turn: the attempt
/// it was in, or the wait it was in.
pub(crate) struct Flight {
    scope: Arc<Scope>,
    /// When the call started.
    started: Instant,
    /// When the current attempt started.
    attempt_started: Instant,
    /// The wait in progress: since when, how long it was to be, and after what failure.
    waiting: Option<(Instant, Duration, Class)>,
    /// The attempts in which a retried call nested in this one ran: that call counts them.
    hollow_attempts: u32,
}

/// A call's flight, if it runs inside a turn; `now` is read only then.
#[inline]
pub(crate) fn flight(now: impl FnOnce() -> Instant) -> Option<Box<Flight>> {
    with_scope(|scope| {
        let started = now();
        Box::new(Flight {
            scope: Arc::clone(scope),
            started,
            attempt_started: started,
            waiting: None,
            hollow_attempts: 0,
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

    /// The hooks of the call's turn and of those around it, innermost first.
    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.scope.hooks()
    }

    /// An attempt started at `now`.
    pub(crate) fn attempt_started(&mut self, now: Instant) {
        self.attempt_started = now;
    }

    /// A retried call nested in the current attempt ran: it counts that attempt.
    pub(crate) fn inner_ran(&mut self) {
        self.hollow_attempts = self.hollow_attempts.saturating_add(1);
    }

    /// A wait of `wanted` after a `class` failure started at `now`.
    pub(crate) fn wait_started(&mut self, now: Instant, wanted: Duration, class: Class) {
        self.waiting = Some((now, wanted, class));
    }

    /// The wait in progress is over: since when, how long it was to be, after what failure.
    pub(crate) fn wait_over(&mut self) -> Option<(Instant, Duration, Class)> {
        self.waiting.take()
    }

    /// The call `op` finished at `now`, after `attempts` attempts and `waited` of waits, and
    /// gave up for `gave_up` (`None`: it succeeded). A call `nested` in another's attempt
    /// counts no working time: that attempt's time is the outer call's to report, and its
    /// waits, which the outer call's time includes, are taken off it.
    pub(crate) fn finished(
        &self,
        op: Op,
        attempts: u32,
        waited: Duration,
        now: Instant,
        nested: bool,
        gave_up: Option<StopReason>,
    ) {
        let call = self.call(op, attempts, waited, now, nested, gave_up);
        for turn in self.scope.chain() {
            add_call(&mut lock(&turn.report), &call);
        }
    }

    /// The call `op` was dropped at `now`, after `attempts` attempts and `waited` of finished
    /// waits: report what it did so far, and the attempt or the wait it was in.
    pub(crate) fn dropped_at(&self, op: Op, attempts: u32, waited: Duration, now: Instant) {
        let waiting = self
            .waiting
            .map_or(Duration::ZERO, |(since, _, _)| {
                now.saturating_duration_since(since)
            })
            .saturating_add(waited);
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
            Some((since, wanted, _)) => Stage::Waiting(CutWait {
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
        for turn in self.scope.chain() {
            let mut report = lock(&turn.report);
            add_call(&mut report, &call);
            match &stage {
                Stage::Waiting(wait) => report.cut_waits.push(wait.clone()),
                Stage::Working(call) => report.in_flight.push(call.clone()),
            }
        }
    }
}

/// What a dropped call was doing.
enum Stage {
    Working(InFlight),
    Waiting(CutWait),
}

/// Count `call` in `report`.
fn add_call(report: &mut TurnReport, call: &Call) {
    report.calls = report.calls.saturating_add(1);
    report.attempts = report.attempts.saturating_add(call.counted_attempts);
    report.waiting = report.waiting.saturating_add(call.waiting);
    report.working = report.working.saturating_add(call.working);
    if call.nested {
        report.nested_waiting = report.nested_waiting.saturating_add(call.waiting);
    }
    if let Some(reason) = call.gave_up {
        report.gave_up.push(GaveUpRecord {
            op: call.op.clone(),
            reason,
            attempts: call.attempts,
        });
    }
}
