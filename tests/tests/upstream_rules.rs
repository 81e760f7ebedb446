//! The upstream's rules in virtual time (tokio's clock paused): a pause's end never moves
//! earlier, a pause past the turn ends the call at once, a dropped or panicked probe frees the
//! gate (in every form: the attribute's calls keep their admission in their own state), and a
//! cancel ends a call waiting at the gate at once.

use std::time::Duration;

use retry_runtime::{
    Admission, Class, Classify, Policy, Retry, StopReason, Turn, Upstream, UpstreamPaused,
    UpstreamStatus, Upstreams, retry,
};
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error("unavailable")]
    Unavailable,
    #[error(transparent)]
    Paused(#[from] UpstreamPaused),
}

impl Classify for Failed {
    fn classify(&self) -> Class {
        match self {
            Failed::Unavailable => Class::Unavailable { retry_after: None },
            Failed::Paused(paused) => paused.classify(),
        }
    }
}

fn limited(after: Duration) -> Class {
    Class::RateLimited {
        retry_after: Some(after),
    }
}

const SEND: Admission = Admission::Send {
    probe: None,
    seen: UpstreamStatus::NOTHING,
};

static LONGER: Upstream = Upstream::new("longer");

#[tokio::test(start_paused = true)]
async fn a_shorter_hint_after_a_longer_one_does_not_shorten_the_pause() {
    let now = Instant::now();
    LONGER.failed(
        SEND,
        limited(Duration::from_secs(10)),
        now,
        &Policy::AVAILABILITY,
    );
    LONGER.failed(
        SEND,
        limited(Duration::from_secs(2)),
        now,
        &Policy::AVAILABILITY,
    );
    assert_eq!(LONGER.paused_for(), Some(Duration::from_secs(10)));
    // A later, longer one lengthens it.
    LONGER.failed(
        SEND,
        limited(Duration::from_secs(15)),
        now,
        &Policy::AVAILABILITY,
    );
    assert_eq!(LONGER.paused_for(), Some(Duration::from_secs(15)));
    // Capped at the policy's `max_retry_after`.
    LONGER.failed(
        SEND,
        limited(Duration::from_secs(600)),
        now,
        &Policy::AVAILABILITY,
    );
    assert_eq!(
        LONGER.paused_for(),
        Some(Policy::AVAILABILITY.max_retry_after())
    );
}

static LONG_PAUSE: Upstream = Upstream::new("long-pause");

#[tokio::test(start_paused = true)]
async fn a_pause_longer_than_the_turn_ends_the_call_at_once_with_budget() {
    let now = Instant::now();
    LONG_PAUSE.failed(
        SEND,
        limited(Duration::from_secs(15)),
        now,
        &Policy::AVAILABILITY,
    );
    let mut sent = 0;
    let outcome = Turn::new(Duration::from_secs(5))
        .run(
            Retry::new(&Policy::AVAILABILITY)
                .upstream(&LONG_PAUSE)
                .run(async |_| {
                    sent += 1;
                    Ok::<_, Failed>(())
                }),
        )
        .await;
    let retry_runtime::turn::TurnOutcome::Finished(Err(gave_up)) = outcome.0 else {
        panic!("the pause outlasts the turn: the call gives up");
    };
    assert_eq!(sent, 0, "never sent into the pause");
    assert!(
        matches!(gave_up.reason(), StopReason::Budget { .. }),
        "{gave_up:?}"
    );
    assert_eq!(gave_up.waited(), Duration::ZERO, "at once");
    assert!(gave_up.is_undetermined());
    assert!(
        matches!(gave_up.error(), Failed::Paused(paused) if paused.retry_after() == Some(Duration::from_secs(15)))
    );
    assert_eq!(Instant::now(), now, "no time passed");
}

/// Open `upstream`'s gate: three outage failures.
fn close(upstream: &Upstream) {
    for _ in 0..3 {
        upstream.failed(
            SEND,
            Class::Transport,
            Instant::now(),
            &Policy::AVAILABILITY,
        );
    }
    assert!(upstream.is_gated());
}

static DROPPED: Upstream = Upstream::new("dropped");

#[tokio::test(start_paused = true)]
async fn a_probe_dropped_mid_attempt_frees_the_gate_for_the_next_call() {
    close(&DROPPED);
    // The first probe may go after the ladder's first rung.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (probing, hang) = tokio::sync::oneshot::channel::<()>();
    let mut probing = Some(probing);
    let probe = tokio::spawn(Retry::new(&Policy::AVAILABILITY).upstream(&DROPPED).run_fn(
        move |_| {
            drop(probing.take());
            std::future::pending::<Result<(), Failed>>()
        },
    ));
    // The probe is out: another call's admission waits for it.
    let _ = hang.await;
    assert!(matches!(
        DROPPED.admit(Instant::now()),
        Admission::Gated { next_probe: None }
    ));
    probe.abort();
    let _ = probe.await;
    // Freed at once: the next call is the probe.
    assert!(matches!(
        DROPPED.admit(Instant::now()),
        Admission::Send { probe: Some(_), .. }
    ));
}

/// Signalled by a probe's attempt below when it is out, one for each test.
static OUT: tokio::sync::Notify = tokio::sync::Notify::const_new();
static OUT_ACROSS: tokio::sync::Notify = tokio::sync::Notify::const_new();

static DROPPED_ATTRIBUTE: Upstream = Upstream::new("dropped-attribute");

#[retry(policy = "availability", upstream = DROPPED_ATTRIBUTE)]
async fn hangs_on_its_upstream() -> Result<(), Failed> {
    OUT.notify_one();
    std::future::pending().await
}

static PANICKED_ATTRIBUTE: Upstream = Upstream::new("panicked-attribute");

#[retry(policy = "availability", upstream = PANICKED_ATTRIBUTE)]
async fn panics_on_its_upstream() -> Result<(), Failed> {
    panic!("the probe's attempt panics")
}

static PRIMARY: Upstream = Upstream::new("primary-probed");
static SECONDARY: Upstream = Upstream::new("secondary-probed");
static PROBED_SET: Upstreams = Upstreams::new(&[&PRIMARY, &SECONDARY]);

#[retry(policy = "availability", across = PROBED_SET)]
async fn hangs_on_the_primary() -> Result<(), Failed> {
    if Upstream::current().is_some_and(|to| to.name() == "primary-probed") {
        OUT_ACROSS.notify_one();
        std::future::pending::<()>().await;
    }
    Ok(())
}

/// After `probe` (a call that took `upstream`'s probe) ends with no outcome: the probe is
/// freed at once, and the next call's admission is the probe.
async fn the_probe_is_freed(
    upstream: &Upstream,
    probe: tokio::task::JoinHandle<Result<(), Failed>>,
) {
    probe.abort();
    let _ = probe.await;
    assert!(
        matches!(
            upstream.admit(Instant::now()),
            Admission::Send { probe: Some(_), .. }
        ),
        "{} is probed by the next call",
        upstream.name()
    );
}

#[tokio::test(start_paused = true)]
async fn the_attributes_probe_dropped_mid_attempt_frees_the_gate_for_the_next_call() {
    close(&DROPPED_ATTRIBUTE);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let probe = tokio::spawn(hangs_on_its_upstream());
    OUT.notified().await;
    assert!(matches!(
        DROPPED_ATTRIBUTE.admit(Instant::now()),
        Admission::Gated { next_probe: None }
    ));
    the_probe_is_freed(&DROPPED_ATTRIBUTE, probe).await;
}

#[tokio::test(start_paused = true)]
async fn the_attributes_probe_that_panics_frees_the_gate_for_the_next_call() {
    close(&PANICKED_ATTRIBUTE);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let probe = tokio::spawn(panics_on_its_upstream());
    assert!(probe.await.unwrap_err().is_panic());
    assert!(matches!(
        PANICKED_ATTRIBUTE.admit(Instant::now()),
        Admission::Send { probe: Some(_), .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn a_probe_across_upstreams_dropped_mid_attempt_frees_the_gate_for_the_next_call() {
    close(&PRIMARY);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The primary's probe is due: the call tries it first.
    let probe = tokio::spawn(hangs_on_the_primary());
    OUT_ACROSS.notified().await;
    assert!(matches!(
        PRIMARY.admit(Instant::now()),
        Admission::Gated { next_probe: None }
    ));
    the_probe_is_freed(&PRIMARY, probe).await;
}

// An upstream named through the function's context (`Self::MODEL`, `T::MODEL`), which an
// item of the expansion cannot name: the call keeps it by pointer, with the same rules.

static CONTEXT: Upstream = Upstream::new("context");

struct Client;

impl Client {
    const MODEL: &'static Upstream = &CONTEXT;

    #[retry(policy = "availability", upstream = Self::MODEL)]
    async fn ask(&self) -> Result<u32, Failed> {
        Ok(1)
    }
}

trait HasModel {
    const MODEL: &'static Upstream;
}

struct Claude;

impl HasModel for Claude {
    const MODEL: &'static Upstream = &CONTEXT;
}

#[retry(policy = "availability", upstream = T::MODEL)]
async fn ask_generic<T: HasModel>() -> Result<u32, Failed> {
    Ok(2)
}

#[tokio::test(start_paused = true)]
async fn an_upstream_named_through_self_or_a_type_parameter_holds_its_calls_in_its_pause() {
    let started = Instant::now();
    CONTEXT.failed(
        SEND,
        limited(Duration::from_secs(2)),
        started,
        &Policy::AVAILABILITY,
    );
    assert_eq!(Client.ask().await.ok(), Some(1));
    let waited = Instant::now() - started;
    assert!(
        waited >= Duration::from_secs(2),
        "held for the pause: {waited:?}"
    );
    assert_eq!(ask_generic::<Claude>().await.ok(), Some(2));
    // Past the pause, at once.
    assert_eq!(Instant::now() - started, waited);
}

static CANCELLED: Upstream = Upstream::new("cancelled");

#[tokio::test(start_paused = true)]
async fn a_turn_cancelled_while_its_call_waits_at_the_gate_ends_at_once() {
    close(&CANCELLED);
    let turn = Turn::new(Duration::from_secs(600));
    let canceller = turn.canceller();
    let started = Instant::now();
    let call = tokio::spawn(
        turn.run(
            Retry::new(&Policy::AVAILABILITY)
                .upstream(&CANCELLED)
                .run_fn(|_| async { Err::<(), _>(Failed::Unavailable) }),
        ),
    );
    // The call waits at the gate (its first probe is due after the first rung, 250 ms).
    tokio::time::sleep(Duration::from_millis(100)).await;
    canceller.cancel();
    let (outcome, _) = call.await.unwrap();
    match outcome {
        retry_runtime::turn::TurnOutcome::Cancelled => {}
        retry_runtime::turn::TurnOutcome::Finished(Err(gave_up)) => {
            assert_eq!(gave_up.reason(), StopReason::Cancelled);
        }
        _ => panic!("the call ends with the cancel"),
    }
    assert_eq!(
        Instant::now() - started,
        Duration::from_millis(100),
        "at once"
    );
}

static ANSWERED: Upstream = Upstream::new("answered");

#[tokio::test(start_paused = true)]
async fn a_probes_success_closes_the_gate_and_wakes_the_waiting_calls() {
    close(&ANSWERED);
    let calls: Vec<_> = (0..5)
        .map(|_| {
            tokio::spawn(
                Retry::new(&Policy::AVAILABILITY)
                    .upstream(&ANSWERED)
                    .run_fn(|attempt| async move { Ok::<_, Failed>(attempt) }),
            )
        })
        .collect();
    for call in calls {
        assert_eq!(
            call.await.unwrap().unwrap(),
            1,
            "each call's first try, after the gate"
        );
    }
    assert!(!ANSWERED.is_gated());
}

static ANNOTATED: Upstream = Upstream::new("annotated");

/// The attribute's form: each attempt admitted by the upstream first.
#[retry_runtime::retry(policy = "availability", upstream = ANNOTATED)]
async fn annotated(sent: &std::sync::atomic::AtomicU32) -> Result<u32, Failed> {
    Ok(sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1)
}

#[tokio::test(start_paused = true)]
async fn an_annotated_call_waits_for_its_upstreams_pause_and_gives_up_where_it_outlasts_the_turn() {
    let sent = std::sync::atomic::AtomicU32::new(0);
    ANNOTATED.failed(
        SEND,
        limited(Duration::from_secs(15)),
        Instant::now(),
        &Policy::AVAILABILITY,
    );
    // Past the turn: at once, with the caller's own error, never sent.
    let (outcome, _) = Turn::new(Duration::from_secs(5))
        .run(annotated(&sent))
        .await;
    let retry_runtime::turn::TurnOutcome::Finished(Err(Failed::Paused(paused))) = outcome else {
        panic!("the pause outlasts the turn");
    };
    assert_eq!(paused.retry_after(), Some(Duration::from_secs(15)));
    assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Inside a testing scope, the pause is a wait recorded, not slept. The scope keeps its
    // upstreams' state apart from every other scope's and the process's: the pause is told
    // there.
    let (answer, recorded) = retry_runtime::testing::scope(async {
        ANNOTATED.failed(
            SEND,
            limited(Duration::from_secs(15)),
            Instant::now(),
            &Policy::AVAILABILITY,
        );
        annotated(&sent).await
    })
    .await;
    assert_eq!(answer.unwrap(), 1);
    assert_eq!(recorded.waits(), [Duration::from_secs(15)]);
}

static REPORTED: Upstream = Upstream::new("reported");

/// A call in a turn that waits for its upstream's pause counts the wait as waiting in the
/// turn's report, and makes no retry: its one attempt comes after the pause.
#[tokio::test(start_paused = true)]
async fn a_wait_for_the_upstream_counts_as_waiting_in_the_turns_report() {
    REPORTED.failed(
        SEND,
        limited(Duration::from_secs(3)),
        Instant::now(),
        &Policy::AVAILABILITY,
    );
    let turn = Turn::new(Duration::from_secs(60));
    let (outcome, report) = turn
        .run(
            Retry::new(&Policy::AVAILABILITY)
                .upstream(&REPORTED)
                .run(async |attempt| Ok::<_, Failed>(attempt)),
        )
        .await;
    REPORTED.reset();
    let retry_runtime::turn::TurnOutcome::Finished(Ok(attempt)) = outcome else {
        panic!("the call finishes after the pause");
    };
    assert_eq!(attempt, 1, "the first try, after the pause");
    assert_eq!(report.attempts(), 1);
    assert_eq!(report.retries(), 0);
    assert!(report.waiting() >= Duration::from_secs(3), "{report:?}");
}
