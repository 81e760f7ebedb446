//! A turn's ledger: its report as the calls' flights write it, and the calls still in flight
//! that count in it, each with its [`Progress`] so far. The report a turn takes when it ends
//! counts those calls as they stand then, so a call the turn cannot drop (one carried into a
//! task with [`TurnHandle::scope`](super::TurnHandle::scope)) is counted whole: its attempts,
//! its waits, and the attempt or the wait it is in, beside the retries it has already written
//! (issue 42: its retries were counted, its attempts lost). It owns that bookkeeping and a
//! call's arithmetic in the report; a flight writes it, under the turn's one lock with its
//! progress, and the turn reads it once. It reads no clock: it is handed every instant.

use std::time::Duration;

use tokio::time::Instant;

use super::report::{CallRecord, CutWait, InFlight, TurnReport};
use super::slab::Slab;
use crate::op::Op;
use crate::verdict::StopReason;

/// A turn's report, and the calls in flight that count in it.
#[derive(Debug)]
pub(super) struct Ledger {
    report: TurnReport,
    in_flight: Slab<Live>,
}

/// A call in flight, as its turn's ledger keeps it.
#[derive(Debug)]
struct Live {
    op: Op,
    progress: Progress,
}

/// A call's progress: what its turn's report counts of it, as it would if the call ended now.
/// Each event sets a field or two; the durations are worked out once, in its record.
#[derive(Debug, Clone, Copy)]
pub(super) struct Progress {
    /// When the call started.
    started: Instant,
    /// When the current attempt started.
    attempt_started: Instant,
    /// When the wait in progress started, if the call is in one.
    waiting_since: Option<Instant>,
    /// When a cancel cut the wait in progress short, if one did: it is over then, and the
    /// call about to give up.
    cut: Option<Instant>,
    /// The waits over so far, each as the report counts it: a wait that ran to its end as the
    /// wait chosen, exact to the nanosecond; one cut short (in progress until the call ends)
    /// as long as it lasted.
    waited: Duration,
    /// The wait chosen for the wait in progress.
    wanted: Duration,
    /// The attempts started so far.
    attempts: u32,
    /// The attempts in which a retried call nested in this one ran: that call counts them.
    hollow_attempts: u32,
    /// The call's last event: the instant its own clock gave, and tokio's then. A turn that
    /// ends with the call in flight reads tokio's clock, not the call's: the call's now is
    /// this instant and the time tokio says passed since.
    seen: (Instant, Instant),
}

/// How a call's record in a report ends.
#[derive(Debug, Clone, Copy)]
pub(super) enum End {
    /// It finished; `nested` in another's attempt, and given up for a reason, if it was.
    Finished {
        nested: bool,
        gave_up: Option<StopReason>,
    },
    /// It was dropped, or is still in flight when its turn ends: it is listed with the
    /// attempt or the wait it was in.
    InFlight,
}

impl Progress {
    /// A call started at `started` on its clock (`tokio`, on tokio's), before its first
    /// attempt.
    pub(super) fn new(started: Instant, tokio: Instant) -> Progress {
        Progress {
            started,
            attempt_started: started,
            waiting_since: None,
            cut: None,
            waited: Duration::ZERO,
            wanted: Duration::ZERO,
            attempts: 0,
            hollow_attempts: 0,
            seen: (started, tokio),
        }
    }

    /// The call's clock said `now` when tokio's said `tokio`.
    pub(super) fn seen(&mut self, now: Instant, tokio: Instant) {
        self.seen = (now, tokio);
    }

    /// The call's now on its own clock, when tokio's says `tokio`: its last instant, and what
    /// passed on tokio's since. Exact on the call's clock up to its last event, whatever that
    /// clock is; and exact for tokio's own.
    fn on_own_clock(&self, tokio: Instant) -> Instant {
        let (own, then) = self.seen;
        own.checked_add(tokio.saturating_duration_since(then))
            .unwrap_or(own)
    }

    /// When the call started.
    pub(super) fn started(&self) -> Instant {
        self.started
    }

    /// An attempt started at `now`.
    pub(super) fn attempt_started(&mut self, now: Instant) {
        self.attempts = self.attempts.saturating_add(1);
        self.attempt_started = now;
    }

    /// A retried call nested in the current attempt ran: it counts that attempt.
    pub(super) fn inner_ran(&mut self) {
        self.hollow_attempts = self.hollow_attempts.saturating_add(1);
    }

    /// A wait of `wanted` started at `now`.
    pub(super) fn wait_started(&mut self, now: Instant, wanted: Duration) {
        (self.waiting_since, self.wanted, self.cut) = (Some(now), wanted, None);
    }

    /// The wait in progress ran to its end: counted as the wait chosen, which it returns.
    pub(super) fn wait_ended(&mut self) -> Option<Duration> {
        self.waiting_since.take()?;
        self.waited = self.waited.saturating_add(self.wanted);
        Some(self.wanted)
    }

    /// A cancel cut the wait in progress short at `now` (or earlier, if it already had): it
    /// counts as long as it lasted, which it returns, and stays for the call's record.
    pub(super) fn wait_lasted(&mut self, lasted: Duration) {
        if self.waiting_since.take().is_some() {
            self.waited = self.waited.saturating_add(lasted);
        }
    }

    pub(super) fn wait_cut(&mut self, now: Instant) -> Option<Duration> {
        let since = self.waiting_since?;
        Some(self.cut.get_or_insert(now).saturating_duration_since(since))
    }

    /// How long the wait in progress lasted by `now`, until it was cut if it was; `None` if
    /// the call is not in one.
    fn lasted(&self, now: Instant) -> Option<Duration> {
        let since = self.waiting_since?;
        Some(self.cut.unwrap_or(now).saturating_duration_since(since))
    }

    /// Count the call `op` in `report` as it stands at `now`, ending as `end`.
    pub(super) fn record(&self, report: &mut TurnReport, op: &Op, now: Instant, end: End) {
        let lasted = self.lasted(now);
        let waiting = self.waited.saturating_add(lasted.unwrap_or_default());
        let (nested, gave_up) = match end {
            End::Finished { nested, gave_up } => (nested, gave_up),
            End::InFlight => (false, None),
        };
        let elapsed = now.saturating_duration_since(self.started);
        report.add_call(&CallRecord {
            op: op.clone(),
            attempts: self.attempts,
            counted_attempts: self.attempts.saturating_sub(self.hollow_attempts),
            waiting,
            // A call nested in another's attempt counts no working time: that attempt's time
            // is the outer call's to report, and its waits, which the outer call's time
            // includes, are taken off it.
            working: if nested {
                Duration::ZERO
            } else {
                elapsed.saturating_sub(waiting)
            },
            nested,
            gave_up,
        });
        // A call still in flight is listed with what it is in; a finished one with the wait
        // a cancel cut, which it gave up after.
        match (lasted, end) {
            (Some(waited), End::InFlight) => report.add_cut_wait(self.cut_wait(op, waited)),
            (Some(waited), End::Finished { .. }) if self.cut.is_some() => {
                report.add_cut_wait(self.cut_wait(op, waited));
            }
            (None, End::InFlight) => report.add_in_flight(InFlight {
                op: op.clone(),
                attempt: self.attempts,
                running: now.saturating_duration_since(self.attempt_started),
            }),
            _ => {}
        }
    }

    /// The wait in progress, as a cut wait that lasted `waited`.
    fn cut_wait(&self, op: &Op, waited: Duration) -> CutWait {
        CutWait {
            op: op.clone(),
            after_attempt: self.attempts,
            waited,
            wanted: self.wanted,
        }
    }
}

impl Ledger {
    /// An empty ledger, with room for a turn's first calls in flight: they take their places
    /// without allocating.
    pub(super) fn new() -> Ledger {
        Ledger {
            report: TurnReport::default(),
            in_flight: Slab::with_room(),
        }
    }

    /// The report, to write.
    pub(super) fn report(&mut self) -> &mut TurnReport {
        &mut self.report
    }

    /// The call `op`, at `progress`, is in flight: its place, to keep its progress in.
    pub(super) fn enter(&mut self, op: Op, progress: Progress) -> usize {
        self.in_flight.insert(Live { op, progress })
    }

    /// The call in flight at `at` has made `progress`.
    pub(super) fn update(&mut self, at: usize, progress: Progress) {
        if let Some(live) = self.in_flight.get_mut(at) {
            live.progress = progress;
        }
    }

    /// The call at `at` is no longer in flight: it has written its record.
    pub(super) fn leave(&mut self, at: usize) {
        // Its name is dropped under the lock: an `Op` holds no code that could take it.
        self.in_flight.remove(at);
    }

    /// The report as it stands at `now` on tokio's clock, each call still in flight counted
    /// as it stands then, on its own clock; an empty one is left for what those calls write
    /// after.
    pub(super) fn take(&mut self, now: Instant) -> TurnReport {
        let mut report = std::mem::take(&mut self.report);
        for live in self.in_flight.iter() {
            let own = live.progress.on_own_clock(now);
            live.progress
                .record(&mut report, &live.op, own, End::InFlight);
        }
        report
    }
}
