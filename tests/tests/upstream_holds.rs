//! A hold before an attempt (a provider's pause, an outage's gate) is bounded as every wait of
//! the call is: by its turn, its literal budget, its policy's `max_retry_after` and what its
//! ladder could still wait; and it ends strictly before a deadline. In virtual time (tokio's
//! clock paused), one upstream per test.

use std::time::Duration;

use retry_runtime::ladder::{self, Failure, HoldAsked};
use retry_runtime::{
    Admission, Class, Classify, Draw, Policy, Retry, StopReason, Turn, Upstream, UpstreamPaused,
    UpstreamStatus, Upstreams,
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

const SEND: Admission = Admission::Send {
    probe: None,
    seen: UpstreamStatus::NOTHING,
};

fn limited(after: Duration) -> Class {
    Class::RateLimited {
        retry_after: Some(after),
    }
}

static BATCH_KEY: Upstream = Upstream::new("batch-key");

/// A batch call's hint pauses the key for 60 s; an interactive call under `availability`,
/// which waits at most 18 s in all, ends at once, never sent, rather than stall for a minute.
#[tokio::test(start_paused = true)]
async fn a_shared_pause_past_the_policys_allowance_ends_the_call_at_once() {
    let start = Instant::now();
    BATCH_KEY.failed(
        SEND,
        limited(Duration::from_secs(60)),
        start,
        &Policy::TRANSIENT,
    );
    assert_eq!(BATCH_KEY.paused_for(), Some(Duration::from_secs(60)));
    let mut sent = 0;
    let gave_up = Retry::new(&Policy::AVAILABILITY)
        .upstream(&BATCH_KEY)
        .run(async |_| {
            sent += 1;
            Ok::<_, Failed>(())
        })
        .await
        .unwrap_err();
    assert_eq!(sent, 0, "never sent");
    assert!(
        matches!(gave_up.reason(), StopReason::RetryAfterTooLong { wanted, .. } if wanted == Duration::from_secs(60)),
        "{gave_up:?}"
    );
    assert!(gave_up.is_undetermined());
    assert_eq!(gave_up.waited(), Duration::ZERO);
    assert_eq!(Instant::now(), start, "at once");
    assert!(
        matches!(gave_up.error(), Failed::Paused(paused) if paused.retry_after() == Some(Duration::from_secs(60)))
    );
    BATCH_KEY.reset();
}

static HUNG: Upstream = Upstream::new("hung-probe");

/// Open `upstream`'s gate: three outage failures.
fn open_gate(upstream: &Upstream, policy: &Policy) {
    for _ in 0..3 {
        upstream.failed(SEND, Class::Transport, Instant::now(), policy);
    }
    assert!(upstream.is_gated());
}

/// Behind a probe that never answers, a call under `transient` waits what its ladder could
/// (484 s: four retries of at most 121 s), not 49 days, and its reason is the hold.
#[tokio::test(start_paused = true)]
async fn a_hold_behind_a_hung_probe_is_bounded_by_the_ladders_own_allowance() {
    open_gate(&HUNG, &Policy::TRANSIENT);
    // The probe goes after the ladder's first rung, and never answers.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let probe = tokio::spawn(
        Retry::new(&Policy::TRANSIENT)
            .upstream(&HUNG)
            .run_fn(|_| std::future::pending::<Result<(), Failed>>()),
    );
    tokio::task::yield_now().await;
    let start = Instant::now();
    let gave_up = Retry::new(&Policy::TRANSIENT)
        .upstream(&HUNG)
        .run(async |_| Ok::<_, Failed>(()))
        .await
        .unwrap_err();
    let held = start.elapsed();
    probe.abort();
    HUNG.reset();
    assert_eq!(gave_up.reason(), StopReason::Held, "{gave_up:?}");
    assert_eq!(gave_up.attempts(), 0);
    assert!(gave_up.is_undetermined());
    let allowance = ladder::hold_allowance(&Policy::TRANSIENT, Duration::ZERO);
    assert_eq!(allowance, Duration::from_secs(484));
    assert!(held <= allowance, "held {held:?}");
    assert!(held >= allowance - Duration::from_secs(1), "held {held:?}");
    assert!(gave_up.waited() <= allowance, "{gave_up:?}");
    assert!(gave_up.to_string().contains("held"), "{gave_up}");
}

static UNCAPPED: Upstream = Upstream::new("uncapped").max_pause(Duration::MAX);

/// A hint of `Duration::MAX` under an uncapped pause: no panic, a pause with no end, and a
/// call that cannot fit it ends at once.
#[tokio::test(start_paused = true)]
async fn a_hint_of_duration_max_pauses_without_end_and_never_panics() {
    let policy = Policy::TRANSIENT.with_max_retry_after(Duration::MAX);
    UNCAPPED.failed(SEND, limited(Duration::MAX), Instant::now(), &policy);
    let left = UNCAPPED.paused_for().expect("paused");
    assert!(left > Duration::from_secs(86_400 * 365), "{left:?}");
    let start = Instant::now();
    let gave_up = Retry::new(&Policy::AVAILABILITY)
        .upstream(&UNCAPPED)
        .run(async |_| Ok::<_, Failed>(()))
        .await
        .unwrap_err();
    assert!(
        matches!(gave_up.reason(), StopReason::RetryAfterTooLong { .. }),
        "{gave_up:?}"
    );
    assert_eq!(Instant::now(), start);
    UNCAPPED.reset();
}

static ZERO_HINT: Upstream = Upstream::new("zero-hint");

/// A hint of zero is no hint: an `Unavailable` carrying one counts toward the gate as the
/// outage's own does.
#[tokio::test(start_paused = true)]
async fn an_unavailable_with_a_zero_hint_counts_toward_the_gate() {
    let zero = Class::Unavailable {
        retry_after: Some(Duration::ZERO),
    };
    for _ in 0..3 {
        ZERO_HINT.failed(SEND, zero, Instant::now(), &Policy::AVAILABILITY);
    }
    assert!(ZERO_HINT.is_gated());
    ZERO_HINT.reset();
}

/// No wait may end on the deadline it must beat: a hint as long as the time left, or a pause
/// ending at the turn's end, stops the call now (`Budget`) instead of racing the turn's timer.
#[test]
fn a_wait_that_would_end_on_the_deadline_is_not_taken() {
    let ms = Duration::from_millis;
    let hinted = Failure::new(2, limited(ms(3_250))).with_remaining(Some(ms(3_250)));
    let policy = Policy::AVAILABILITY
        .with_attempts(6)
        .with_max_retry_after(Duration::from_secs(10))
        .with_max_total_wait(Duration::from_secs(60));
    for draw in [Draw::IDEAL, Draw::from_bits(0), Draw::from_bits(u32::MAX)] {
        let decision = ladder::decide(&policy, hinted).with_draw(draw);
        assert!(
            matches!(decision.step.stop_reason(), Some(StopReason::Budget { .. })),
            "{decision:?}"
        );
    }
    // A millisecond before it, the wait fits.
    let hinted = Failure::new(2, limited(ms(3_249))).with_remaining(Some(ms(3_250)));
    let decision = ladder::decide(&policy, hinted).with_draw(Draw::IDEAL);
    assert_eq!(decision.step.wait(), Some(ms(3_249)));
    // A pause ending at the deadline, or within its last millisecond.
    for pause in [ms(3_250), ms(3_249) + Duration::from_micros(500)] {
        let held = HoldAsked {
            pause: Some(pause),
            waited: Duration::ZERO,
            remaining: Some(ms(3_250)),
            cancelled: false,
            budget_spent: false,
        };
        let refused = ladder::hold(&policy, held, Draw::IDEAL);
        assert!(
            matches!(refused, Err(StopReason::Budget { .. })),
            "{refused:?}"
        );
    }
}

static PAUSE_AT_END: Upstream = Upstream::new("pause-at-end");

/// A pause ending exactly at the turn's deadline ends the call with `Budget`, never the turn
/// `Expired`.
#[tokio::test(start_paused = true)]
async fn a_pause_ending_on_the_turns_deadline_ends_the_call_not_the_turn() {
    let turn = Duration::from_millis(3_250);
    PAUSE_AT_END.failed(SEND, limited(turn), Instant::now(), &Policy::AVAILABILITY);
    let (outcome, _) = Turn::new(turn)
        .run(
            Retry::new(&Policy::AVAILABILITY)
                .upstream(&PAUSE_AT_END)
                .run(async |_| Ok::<_, Failed>(())),
        )
        .await;
    PAUSE_AT_END.reset();
    let retry_runtime::turn::TurnOutcome::Finished(Err(gave_up)) = outcome else {
        panic!("the call ends itself, before the turn: {outcome:?}");
    };
    assert!(
        matches!(gave_up.reason(), StopReason::Budget { .. }),
        "{gave_up:?}"
    );
}

static PREFERRED: Upstream = Upstream::new("preferred");
static SPARE: Upstream = Upstream::new("spare");
static PREFERRED_FIRST: Upstreams = Upstreams::new(&[&PREFERRED, &SPARE]);

/// A call across upstreams waiting for the one that frees soonest hears the preferred one
/// reopen: its probe succeeds at 102 ms, and the call goes there then, not at the other's
/// probe at 250 ms.
#[tokio::test(start_paused = true)]
async fn a_call_across_upstreams_hears_the_preferred_one_reopen() {
    // Both gated; the preferred one's probe is out, the spare's next probe is at 250 ms.
    open_gate(&PREFERRED, &Policy::AVAILABILITY);
    tokio::time::sleep(Duration::from_millis(250)).await;
    let (answer, answered) = tokio::sync::oneshot::channel::<()>();
    let mut answered = Some(answered);
    let probe = tokio::spawn(
        Retry::new(&Policy::AVAILABILITY)
            .upstream(&PREFERRED)
            .run_fn(move |_| {
                let answered = answered.take();
                async move {
                    if let Some(answered) = answered {
                        let _ = answered.await;
                    }
                    Ok::<_, Failed>(())
                }
            }),
    );
    tokio::task::yield_now().await;
    assert!(PREFERRED.is_gated());
    open_gate(&SPARE, &Policy::AVAILABILITY);
    let start = Instant::now();
    let answering = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(102)).await;
        let _ = answer.send(());
    });
    let answered = Retry::new(&Policy::AVAILABILITY)
        .across(&PREFERRED_FIRST)
        .run(async |to| Ok::<_, Failed>(to.name()))
        .await
        .unwrap();
    let took = start.elapsed();
    probe.await.unwrap().unwrap();
    answering.await.unwrap();
    PREFERRED.reset();
    SPARE.reset();
    assert_eq!(answered.upstream().name(), "preferred");
    assert!(took < Duration::from_millis(250), "went at {took:?}");
}

/// An exhausted call's give-up says that the outcome is unknown, as its verdict does.
#[tokio::test(start_paused = true)]
async fn an_exhausted_give_up_says_the_outcome_is_unknown() {
    let gave_up = Retry::new(&Policy::AVAILABILITY)
        .run(async |_| Err::<(), _>(Failed::Unavailable))
        .await
        .unwrap_err();
    assert!(gave_up.is_undetermined());
    assert!(
        gave_up.to_string().contains("the outcome is unknown"),
        "{gave_up}"
    );
}
