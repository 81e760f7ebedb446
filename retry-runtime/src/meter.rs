//! The metrics a retry publishes, named once: their names, their labels and every value a
//! label takes. With the `metrics` feature the engine records them through the
//! [`metrics`](https://docs.rs/metrics) facade, to whatever recorder the program installs
//! (Prometheus, OpenTelemetry, StatsD); without it, nothing is recorded and nothing is linked.
//!
//! | metric | kind | labels | what it counts |
//! |---|---|---|---|
//! | [`CALLS`] `retry_calls_total` | counter | `op`, `outcome` ([`OUTCOMES`]) | calls, by how they ended |
//! | [`ATTEMPTS`] `retry_attempts_total` | counter | `op`, `class` ([`ATTEMPT_CLASSES`]) | attempts, by their failure's class or `ok` |
//! | [`WAIT_SECONDS`] `retry_wait_seconds` | histogram | `op` | each wait taken, in seconds |
//! | [`GIVE_UPS`] `retry_give_ups_total` | counter | `op`, `reason` ([`REASONS`]) | give-ups, by [`StopReason`] |
//! | [`QUOTA_REFUSALS`] `retry_quota_refusals_total` | counter | `op` | retries the quota refused |
//! | [`STREAM_COMMITS`] `retry_stream_commits_total` | counter | `op` | streams that reached their commit point |
//! | [`STREAM_RESTARTS`] `retry_stream_restarts_total` | counter | `op` | streams restarted after it |
//! | [`STREAM_RESUMES`] `retry_stream_resumes_total` | counter | `op` | streams resumed from their cursor |
//! | [`UPSTREAM_WAITS`] `retry_upstream_waits_total` | counter | `upstream`, `kind` (`pause`, `gate`, `pace`, `budget`) | waits for an upstream (an `Upstream`) before an attempt |
//! | [`UPSTREAM_WAIT_SECONDS`] `retry_upstream_wait_seconds` | histogram | `upstream` | how long each lasted, in seconds |
//! | [`UPSTREAM_PAUSES`] `retry_upstream_pauses_total` | counter | `upstream` | pauses a provider's hint set or lengthened |
//! | [`UPSTREAM_GATE`] `retry_upstream_gate_total` | counter | `upstream`, `event` (`opened`, `closed`) | the outage gate opening (an outage) and closing |
//! | [`UPSTREAM_PROBES`] `retry_upstream_probes_total` | counter | `upstream` | probes sent through the open gate |
//! | [`UPSTREAM_PACED`] `retry_upstream_paced_total` | counter | `upstream` | pacers turned on: the key's limits heard, or a rate learned from its refusals |
//! | [`UPSTREAM_PACE_RATE`] `retry_upstream_pace_rate` | gauge | `upstream` | the rate the pacer holds the key to, per second |
//! | [`UPSTREAM_MOVES`] `retry_upstream_moves_total` | counter | `from`, `to` | calls moved from one upstream of an ordered set (`Upstreams`) to the next |
//! | [`FLEET_STORE`] `retry_fleet_store_total` | counter | `event` (`degraded`, `back`, `dropped`) | the fleet store skipping Redis after repeated failures, sharing again, and reports it dropped |
//!
//! Labels have low cardinality: the operation's name, and a value from the lists here; never
//! an error's text, a URL or an attempt number. An attempt in which a retried call nested in
//! it ran is counted once, at the innermost ladder, as a turn's report counts it. A call
//! `dropped` is one whose future was dropped unfinished, inside a turn or not.
//!
//! ```
//! use retry_runtime::meter;
//!
//! assert_eq!(meter::CALLS, "retry_calls_total");
//! assert!(meter::OUTCOMES.contains(&"gave_up_undetermined"));
//! assert!(meter::ATTEMPT_CLASSES.contains(&"unavailable"));
//! assert!(meter::REASONS.contains(&"quota"));
//! ```

use crate::class::Class;
use crate::verdict::StopReason;

/// Calls, by how they ended: `retry_calls_total{op, outcome}`.
pub const CALLS: &str = "retry_calls_total";
/// Attempts, by their failure's class or `ok`: `retry_attempts_total{op, class}`.
pub const ATTEMPTS: &str = "retry_attempts_total";
/// Each wait taken, in seconds: the histogram `retry_wait_seconds{op}`.
pub const WAIT_SECONDS: &str = "retry_wait_seconds";
/// Give-ups, by their reason: `retry_give_ups_total{op, reason}`.
pub const GIVE_UPS: &str = "retry_give_ups_total";
/// Retries the cross-call quota refused: `retry_quota_refusals_total{op}`.
pub const QUOTA_REFUSALS: &str = "retry_quota_refusals_total";
/// Streams that reached their commit point: `retry_stream_commits_total{op}`.
pub const STREAM_COMMITS: &str = "retry_stream_commits_total";
/// Streams restarted after their commit point: `retry_stream_restarts_total{op}`.
pub const STREAM_RESTARTS: &str = "retry_stream_restarts_total";
/// Streams resumed from their cursor after a cut, a stall or an early close (each resume
/// counts): `retry_stream_resumes_total{op}`.
pub const STREAM_RESUMES: &str = "retry_stream_resumes_total";

/// Waits for an upstream before an attempt, by why: `retry_upstream_waits_total{upstream, kind}`,
/// `kind` `pause` (a provider's hint) or `gate` (the outage gate).
pub const UPSTREAM_WAITS: &str = "retry_upstream_waits_total";
/// How long each wait for an upstream lasted, in seconds: `retry_upstream_wait_seconds{upstream}`.
pub const UPSTREAM_WAIT_SECONDS: &str = "retry_upstream_wait_seconds";
/// An upstream's pauses that a provider's hint set or lengthened:
/// `retry_upstream_pauses_total{upstream}`.
pub const UPSTREAM_PAUSES: &str = "retry_upstream_pauses_total";
/// Its outage gate opening (an outage) and closing (a recovery):
/// `retry_upstream_gate_total{upstream, event}`, `event` `opened` or `closed`.
pub const UPSTREAM_GATE: &str = "retry_upstream_gate_total";
/// Probes sent through its open gate: `retry_upstream_probes_total{upstream}`.
pub const UPSTREAM_PROBES: &str = "retry_upstream_probes_total";
/// Pacers turned on (an upstream heard its key's limits, or learned a rate from its
/// refusals): `retry_upstream_paced_total{upstream}`.
pub const UPSTREAM_PACED: &str = "retry_upstream_paced_total";
/// The rate an upstream's pacer holds its key to, per second:
/// `retry_upstream_pace_rate{upstream}`.
pub const UPSTREAM_PACE_RATE: &str = "retry_upstream_pace_rate";

/// Calls moved from one upstream of an ordered set to the next:
/// `retry_upstream_moves_total{from, to}`.
pub const UPSTREAM_MOVES: &str = "retry_upstream_moves_total";

/// The fleet store (feature `fleet`): Redis skipped after repeated failures (`degraded`),
/// shared again (`back`), and reports dropped (`dropped`): `retry_fleet_store_total{event}`.
pub const FLEET_STORE: &str = "retry_fleet_store_total";

/// What an upstream records: rare (a pause, a gate's change, a probe, a wait), so each is
/// registered as it happens, by the upstream's name.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum UpstreamSeries {
    /// A call waited `lasted` for the upstream: `kind` `pause`, `gate` or `pace`.
    Waited {
        kind: &'static str,
        lasted: std::time::Duration,
    },
    /// A provider's hint set or lengthened a pause.
    Paused,
    /// The outage gate opened: an outage.
    GateOpened,
    /// The outage gate closed: a recovery.
    GateClosed,
    /// A probe went through the open gate.
    Probe,
    /// The upstream's pacer turned on: it heard its key's limits, or learned a rate.
    Paced,
    /// The rate the pacer holds the key to, per second.
    PaceRate(f64),
}

/// Record `series` of the upstream `name`.
#[inline]
pub(crate) fn upstream(name: &'static str, series: UpstreamSeries) {
    #[cfg(feature = "metrics")]
    record::upstream(name, series);
    #[cfg(not(feature = "metrics"))]
    let _ = (name, series);
}

/// Record the fleet store's `event`: `degraded`, `back` or `dropped`.
#[inline]
#[cfg_attr(not(feature = "fleet"), allow(dead_code))]
pub(crate) fn fleet(event: &'static str) {
    #[cfg(feature = "metrics")]
    record::fleet(event);
    #[cfg(not(feature = "metrics"))]
    let _ = event;
}

/// Record a call's move from the upstream `from` to `to`.
#[inline]
pub(crate) fn moved(from: &'static str, to: &'static str) {
    #[cfg(feature = "metrics")]
    record::moved(from, to);
    #[cfg(not(feature = "metrics"))]
    let _ = (from, to);
}

// The label lists are slices, not arrays, so a new class or reason does not change their type.

/// Every value of the `outcome` label: a first-try success, a success after retries, a give-up
/// whose verdict is an answer or still undetermined (whatever the number of attempts), and a
/// call dropped unfinished.
pub const OUTCOMES: &[&str] = &[
    "first_try",
    "after_retries",
    "gave_up_answer",
    "gave_up_undetermined",
    "dropped",
];

/// Every value of the `class` label of [`ATTEMPTS`]: `ok`, then [`Class::name`] of each class.
pub const ATTEMPT_CLASSES: &[&str] = &ATTEMPT_CLASS_NAMES;

/// [`ATTEMPT_CLASSES`]' values, built from [`Class::ALL`] so the two cannot differ.
const ATTEMPT_CLASS_NAMES: [&str; Class::ALL.len() + 1] = {
    let mut names = ["ok"; Class::ALL.len() + 1];
    let mut i = 0;
    while i < Class::ALL.len() {
        names[i + 1] = Class::ALL[i].name();
        i += 1;
    }
    names
};

/// Every value of the `reason` label of [`GIVE_UPS`]: [`StopReason::name`] of each reason.
pub const REASONS: &[&str] = &[
    "definitive",
    "not_retried",
    "exhausted",
    "budget",
    "retry_after_too_long",
    "quota",
    "cancelled",
    "nested",
    "committed",
    "not_resendable",
    "resume_failed",
    "held",
];

/// How a call ended, as the `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    FirstTry,
    AfterRetries,
    GaveUpAnswer,
    GaveUpUndetermined,
    Dropped,
}

impl Outcome {
    /// A success after `attempts`.
    pub(crate) const fn succeeded(attempts: u32) -> Outcome {
        if attempts > 1 {
            Outcome::AfterRetries
        } else {
            Outcome::FirstTry
        }
    }

    /// A give-up whose last failure was `class`: the verdict, not the count, decides.
    pub(crate) const fn gave_up(class: Class, reason: StopReason) -> Outcome {
        if class.is_transient() || matches!(reason, StopReason::ResumeFailed) {
            Outcome::GaveUpUndetermined
        } else {
            Outcome::GaveUpAnswer
        }
    }

    /// The label value, one of [`OUTCOMES`].
    pub(crate) const fn name(self) -> &'static str {
        OUTCOMES[self as usize]
    }
}

/// The index of `reason`'s name in [`REASONS`].
const fn reason_index(reason: StopReason) -> usize {
    match reason {
        StopReason::Definitive => 0,
        StopReason::NotRetried { .. } => 1,
        StopReason::Exhausted { .. } => 2,
        StopReason::Budget { .. } => 3,
        StopReason::RetryAfterTooLong { .. } => 4,
        StopReason::Quota => 5,
        StopReason::Cancelled => 6,
        StopReason::Nested => 7,
        StopReason::Committed => 8,
        StopReason::NotResendable => 9,
        StopReason::ResumeFailed => 10,
        StopReason::Held => 11,
    }
}

/// One series of one operation: which metric, and its label value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Series {
    Call(Outcome),
    /// An attempt's failure class, or `None` for `ok`.
    Attempt(Option<Class>),
    GiveUp(StopReason),
    QuotaRefusal,
    #[cfg_attr(not(feature = "stream"), allow(dead_code))]
    StreamCommit,
    StreamRestart,
    #[cfg_attr(not(feature = "stream"), allow(dead_code))]
    StreamResume,
}

impl Series {
    /// The metric's name and its one label besides `op`, if it has one.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    const fn parts(self) -> (&'static str, Option<(&'static str, &'static str)>) {
        match self {
            Series::Call(outcome) => (CALLS, Some(("outcome", outcome.name()))),
            Series::Attempt(class) => (
                ATTEMPTS,
                Some((
                    "class",
                    match class {
                        Some(class) => class.name(),
                        None => "ok",
                    },
                )),
            ),
            Series::GiveUp(reason) => (GIVE_UPS, Some(("reason", REASONS[reason_index(reason)]))),
            Series::QuotaRefusal => (QUOTA_REFUSALS, None),
            Series::StreamCommit => (STREAM_COMMITS, None),
            Series::StreamRestart => (STREAM_RESTARTS, None),
            Series::StreamResume => (STREAM_RESUMES, None),
        }
    }

    /// The series' slot in an operation's handles.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    const fn slot(self) -> usize {
        const ATTEMPT: usize = OUTCOMES.len();
        const GIVE_UP: usize = ATTEMPT + ATTEMPT_CLASSES.len();
        const REST: usize = GIVE_UP + REASONS.len();
        match self {
            Series::Call(outcome) => outcome as usize,
            Series::Attempt(None) => ATTEMPT,
            Series::Attempt(Some(class)) => ATTEMPT + 1 + class.index(),
            Series::GiveUp(reason) => GIVE_UP + reason_index(reason),
            Series::QuotaRefusal => REST,
            Series::StreamCommit => REST + 1,
            Series::StreamRestart => REST + 2,
            Series::StreamResume => REST + 3,
        }
    }
}

/// How many counter series an operation has.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
const SLOTS: usize = OUTCOMES.len() + ATTEMPT_CLASSES.len() + REASONS.len() + 4;

/// Count one in `series` of `op`.
#[inline]
pub(crate) fn count(op: &str, series: Series) {
    #[cfg(feature = "metrics")]
    record::count(op, series);
    #[cfg(not(feature = "metrics"))]
    let _ = (op, series);
}

/// Count one in `series` of `op`, and in `also` if given, with one look-up of its handles.
#[inline]
pub(crate) fn count_with(op: &str, series: Series, also: Option<Series>) {
    #[cfg(feature = "metrics")]
    record::count_with(op, series, also);
    #[cfg(not(feature = "metrics"))]
    let _ = (op, series, also);
}

/// Record a wait of `wait` taken by `op`.
#[inline]
pub(crate) fn waited(op: &str, wait: std::time::Duration) {
    #[cfg(feature = "metrics")]
    record::waited(op, wait);
    #[cfg(not(feature = "metrics"))]
    let _ = (op, wait);
}

/// The recording, through the `metrics` facade.
///
/// The facade's macros build a key before they reach the recorder, and a key with a run-time
/// label allocates; so each operation's handles are registered once per thread and recorder,
/// on their first use, and kept in a thread-local table that a later call reads without
/// allocating. A change of recorder on the thread (a test's local one, say) empties the table.
#[cfg(feature = "metrics")]
mod record {
    use std::cell::RefCell;

    use metrics::{Counter, Histogram, Key, Label, Level, Metadata, Recorder, SharedString};

    use super::{SLOTS, Series, WAIT_SECONDS};

    const METADATA: Metadata<'static> = Metadata::new("retry", Level::INFO, Some(module_path!()));

    /// One operation's handles, each registered on its first use.
    struct Handles {
        op: Box<str>,
        counters: [Option<Counter>; SLOTS],
        wait: Option<Histogram>,
    }

    /// The handles of the operations seen on this thread, under the recorder they came from.
    #[derive(Default)]
    struct Table {
        recorder: usize,
        ops: Vec<Handles>,
    }

    thread_local! {
        static TABLE: RefCell<Table> = RefCell::default();
    }

    /// The recorder's address, which tells one recorder from another.
    fn identity(recorder: &dyn Recorder) -> usize {
        std::ptr::from_ref(recorder).cast::<()>() as usize
    }

    fn key(name: &'static str, op: &str, label: Option<(&'static str, &'static str)>) -> Key {
        let op = Label::new("op", SharedString::from(op.to_owned()));
        match label {
            Some((key, value)) => {
                Key::from_parts(name, vec![op, Label::from_static_parts(key, value)])
            }
            None => Key::from_parts(name, vec![op]),
        }
    }

    /// `use_handles` on `op`'s handles for the current recorder.
    fn with_handles(op: &str, use_handles: impl FnOnce(&mut Handles, &dyn Recorder)) {
        metrics::with_recorder(|recorder| {
            // A recorder's own code never calls back into a retry, but if one did, it is
            // skipped rather than panic on the borrow.
            let _ = TABLE.try_with(|table| {
                let Ok(mut table) = table.try_borrow_mut() else {
                    return;
                };
                let id = identity(recorder);
                if table.recorder != id {
                    table.recorder = id;
                    table.ops.clear();
                }
                // By text, not address: an owned name's memory may be reused by another.
                let index = match table.ops.iter().position(|handles| *handles.op == *op) {
                    Some(index) => index,
                    None => {
                        table.ops.push(Handles {
                            op: op.into(),
                            counters: [const { None }; SLOTS],
                            wait: None,
                        });
                        table.ops.len() - 1
                    }
                };
                use_handles(&mut table.ops[index], recorder);
            });
        });
    }

    pub(super) fn count(op: &str, series: Series) {
        count_with(op, series, None);
    }

    pub(super) fn count_with(op: &str, series: Series, also: Option<Series>) {
        with_handles(op, |handles, recorder| {
            increment(handles, recorder, op, series);
            if let Some(also) = also {
                increment(handles, recorder, op, also);
            }
        });
    }

    fn increment(handles: &mut Handles, recorder: &dyn Recorder, op: &str, series: Series) {
        handles.counters[series.slot()]
            .get_or_insert_with(|| {
                let (name, label) = series.parts();
                recorder.register_counter(&key(name, op, label), &METADATA)
            })
            .increment(1);
    }

    pub(super) fn upstream(name: &'static str, series: super::UpstreamSeries) {
        use super::UpstreamSeries::{
            GateClosed, GateOpened, PaceRate, Paced, Paused, Probe, Waited,
        };
        use super::{
            UPSTREAM_GATE, UPSTREAM_PACED, UPSTREAM_PAUSES, UPSTREAM_PROBES, UPSTREAM_WAITS,
        };
        let upstream = || Label::from_static_parts("upstream", name);
        if let PaceRate(rate) = series {
            let key = Key::from_parts(super::UPSTREAM_PACE_RATE, vec![upstream()]);
            metrics::with_recorder(|recorder| recorder.register_gauge(&key, &METADATA).set(rate));
            return;
        }
        let (metric, also) = match series {
            Paced => (UPSTREAM_PACED, ("", "")),
            PaceRate(_) => return,
            Waited { kind, .. } => (UPSTREAM_WAITS, ("kind", kind)),
            Paused => (UPSTREAM_PAUSES, ("", "")),
            GateClosed => (UPSTREAM_GATE, ("event", "closed")),
            GateOpened => (UPSTREAM_GATE, ("event", "opened")),
            Probe => (UPSTREAM_PROBES, ("", "")),
        };
        let mut labels = vec![upstream()];
        if !also.0.is_empty() {
            labels.push(Label::from_static_parts(also.0, also.1));
        }
        metrics::with_recorder(|recorder| {
            recorder
                .register_counter(&Key::from_parts(metric, labels), &METADATA)
                .increment(1);
            if let Waited { lasted, .. } = series {
                let key = Key::from_parts(super::UPSTREAM_WAIT_SECONDS, vec![upstream()]);
                recorder
                    .register_histogram(&key, &METADATA)
                    .record(lasted.as_secs_f64());
            }
        });
    }

    pub(super) fn fleet(event: &'static str) {
        let labels = vec![Label::from_static_parts("event", event)];
        metrics::with_recorder(|recorder| {
            recorder
                .register_counter(&Key::from_parts(super::FLEET_STORE, labels), &METADATA)
                .increment(1);
        });
    }

    pub(super) fn moved(from: &'static str, to: &'static str) {
        let labels = vec![
            Label::from_static_parts("from", from),
            Label::from_static_parts("to", to),
        ];
        metrics::with_recorder(|recorder| {
            recorder
                .register_counter(&Key::from_parts(super::UPSTREAM_MOVES, labels), &METADATA)
                .increment(1);
        });
    }

    pub(super) fn waited(op: &str, wait: std::time::Duration) {
        with_handles(op, |handles, recorder| {
            handles
                .wait
                .get_or_insert_with(|| {
                    recorder.register_histogram(&key(WAIT_SECONDS, op, None), &METADATA)
                })
                .record(wait.as_secs_f64());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_the_stop_reasons_names_in_order() {
        let reasons = [
            StopReason::Definitive,
            StopReason::NotRetried {
                class: Class::Timeout,
            },
            StopReason::Exhausted { attempts: 1 },
            StopReason::Budget {
                wanted: std::time::Duration::ZERO,
                remaining: std::time::Duration::ZERO,
            },
            StopReason::RetryAfterTooLong {
                wanted: std::time::Duration::ZERO,
                max: std::time::Duration::ZERO,
            },
            StopReason::Quota,
            StopReason::Cancelled,
            StopReason::Nested,
            StopReason::Committed,
            StopReason::NotResendable,
            StopReason::ResumeFailed,
            StopReason::Held,
        ];
        for reason in reasons {
            assert_eq!(REASONS[reason_index(reason)], reason.name());
        }
    }

    #[test]
    fn every_series_has_its_own_slot() {
        let mut series: Vec<Series> = Vec::new();
        series.extend(
            [
                Outcome::FirstTry,
                Outcome::AfterRetries,
                Outcome::GaveUpAnswer,
                Outcome::GaveUpUndetermined,
                Outcome::Dropped,
            ]
            .map(Series::Call),
        );
        series.push(Series::Attempt(None));
        series.extend(Class::ALL.iter().map(|&class| Series::Attempt(Some(class))));
        series.extend([
            Series::QuotaRefusal,
            Series::StreamCommit,
            Series::StreamRestart,
            Series::StreamResume,
        ]);
        let mut slots: Vec<usize> = series.iter().map(|s| s.slot()).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), series.len());
        assert!(slots.iter().all(|&slot| slot < SLOTS));
    }
}
