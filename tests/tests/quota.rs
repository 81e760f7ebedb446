//! The cross-call quota follows the AWS SDKs' standard mode. The sequences below are the
//! "Standard Mode" test cases of the AWS SDKs' "Retry Behavior 2.0" specification, as the
//! AWS SDK for Swift's `RetryIntegrationTests` (smithy-swift, `test_case1` to `test_case6`)
//! transcribes them: an initial capacity, then for each response the quota left and the wait.
//! Their backoff is 1 s doubling with no jitter (capped at 20 s, or 3 s in case 6), which the
//! `transient` policy's ladder gives with `Jitter::None`; a 500 and a 502 are both retried.

use std::sync::Mutex;
use std::time::Duration;

use retry_runtime::{Class, Jitter, Policy, Quota, Retry, StopReason, Turn, notice, testing};

/// A response in a sequence: an HTTP error status, or a success.
#[derive(Debug, Clone, Copy)]
enum Response {
    Error(u16),
    Success,
}

fn class_of(status: u16) -> Class {
    match status {
        500 => Class::ServerError,
        _ => Class::Unavailable { retry_after: None },
    }
}

/// Run one sequence: `max_retries` retries at most, the quota starting at `available`; returns
/// the quota left after each response, the waits, and how the call ended.
async fn replay(
    quota: &'static Quota,
    max_retries: u32,
    cap: Duration,
    responses: &[Response],
) -> (Vec<u32>, Vec<Duration>, Result<(), StopReason>) {
    // Made at run time: leaked, as a program leaks its configured policy once.
    let policy: &'static Policy = Box::leak(Box::new(
        Policy::TRANSIENT
            .with_attempts(max_retries + 1)
            .with_cap(cap)
            .with_jitter(Jitter::None),
    ));
    let seen = Mutex::new(Vec::new());
    let retry = Retry::new(policy).with_quota(quota);
    let (result, recorded) = testing::scope(retry.run(async |attempt| {
        // The quota after the previous response was handled, as the spec reads it.
        if attempt > 1 {
            seen.lock().unwrap().push(quota.available());
        }
        match responses[attempt as usize - 1] {
            Response::Error(status) => Err(class_of(status)),
            Response::Success => Ok(()),
        }
    }))
    .await;
    let mut seen = seen.into_inner().unwrap();
    seen.push(quota.available());
    (
        seen,
        recorded.waits().to_vec(),
        result.map_err(|gave_up| gave_up.reason()),
    )
}

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

#[tokio::test(flavor = "current_thread")]
async fn case_1_a_retry_that_succeeds_gives_its_cost_back() {
    static QUOTA: Quota = Quota::standard();
    let responses = [
        Response::Error(500),
        Response::Error(500),
        Response::Success,
    ];
    let (quota, waits, end) = replay(&QUOTA, 2, secs(20), &responses).await;
    assert_eq!(quota, [495, 490, 495]);
    assert_eq!(waits, [secs(1), secs(2)]);
    assert_eq!(end, Ok(()));
}

#[tokio::test(flavor = "current_thread")]
async fn case_2_max_attempts_reached_keeps_the_quota_spent() {
    static QUOTA: Quota = Quota::standard();
    let responses = [Response::Error(502); 3];
    let (quota, waits, end) = replay(&QUOTA, 2, secs(20), &responses).await;
    assert_eq!(quota, [495, 490, 490]);
    assert_eq!(waits, [secs(1), secs(2)]);
    assert_eq!(end, Err(StopReason::Exhausted { attempts: 3 }));
}

#[tokio::test(flavor = "current_thread")]
async fn case_3_the_quota_is_reached_after_a_single_retry() {
    static QUOTA: Quota = Quota::standard().starting_at(5);
    let responses = [Response::Error(500), Response::Error(502)];
    let (quota, waits, end) = replay(&QUOTA, 2, secs(20), &responses).await;
    assert_eq!(quota, [0, 0]);
    assert_eq!(waits, [secs(1)]);
    assert_eq!(end, Err(StopReason::Quota));
}

#[tokio::test(flavor = "current_thread")]
async fn case_4_no_retry_at_all_when_the_quota_is_empty() {
    static QUOTA: Quota = Quota::standard().starting_at(0);
    let responses = [Response::Error(500)];
    let (quota, waits, end) = replay(&QUOTA, 2, secs(20), &responses).await;
    assert_eq!(quota, [0]);
    assert_eq!(waits, []);
    assert_eq!(end, Err(StopReason::Quota));
}

#[tokio::test(flavor = "current_thread")]
async fn case_5_exponential_waits_and_the_quota_they_spend() {
    static QUOTA: Quota = Quota::standard();
    let responses = [Response::Error(500); 5];
    let (quota, waits, end) = replay(&QUOTA, 4, secs(20), &responses).await;
    assert_eq!(quota, [495, 490, 485, 480, 480]);
    assert_eq!(waits, [secs(1), secs(2), secs(4), secs(8)]);
    assert_eq!(end, Err(StopReason::Exhausted { attempts: 5 }));
}

#[tokio::test(flavor = "current_thread")]
async fn case_6_the_longest_wait_is_capped() {
    static QUOTA: Quota = Quota::standard();
    let responses = [Response::Error(500); 5];
    let (quota, waits, end) = replay(&QUOTA, 4, secs(3), &responses).await;
    assert_eq!(quota, [495, 490, 485, 480, 480]);
    assert_eq!(waits, [secs(1), secs(2), secs(3), secs(3)]);
    assert_eq!(end, Err(StopReason::Exhausted { attempts: 5 }));
}

#[tokio::test(flavor = "current_thread")]
async fn a_retry_after_a_timeout_costs_10_and_its_success_gives_10_back() {
    static QUOTA: Quota = Quota::standard();
    let seen = Mutex::new(Vec::new());
    let (result, _) = testing::scope(Retry::new(&Policy::TRANSIENT).with_quota(&QUOTA).run(
        async |attempt| {
            seen.lock().unwrap().push(QUOTA.available());
            if attempt == 1 {
                Err(Class::Timeout)
            } else {
                Ok(())
            }
        },
    ))
    .await;
    result.unwrap();
    assert_eq!(seen.into_inner().unwrap(), [500, 490]);
    assert_eq!(QUOTA.available(), 500);
}

#[tokio::test(flavor = "current_thread")]
async fn a_first_try_success_adds_one_up_to_the_capacity() {
    static QUOTA: Quota = Quota::standard().starting_at(498);
    for _ in 0..3 {
        Retry::new(&Policy::AVAILABILITY)
            .with_quota(&QUOTA)
            .run(async |_| Ok::<(), Class>(()))
            .await
            .unwrap();
    }
    assert_eq!(QUOTA.available(), 500);
}

#[tokio::test(flavor = "current_thread")]
async fn a_quota_refusal_is_reported_in_the_gave_up_the_notice_and_the_turn_report() {
    static QUOTA: Quota = Quota::standard().starting_at(0);
    let heard = std::sync::Arc::new(Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&heard);
    let turn = Turn::new(Duration::from_secs(180)).on_notice(move |notice: &notice::Notice<'_>| {
        if let Some(event) = notice.retry() {
            sink.lock().unwrap().push((event.action, event.to_string()));
        }
    });

    let ((outcome, report), _) = testing::scope(
        turn.run(
            Retry::new(&Policy::AVAILABILITY)
                .named("model")
                .with_quota(&QUOTA)
                .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })),
        ),
    )
    .await;

    let gave_up = outcome.into_finished().unwrap().unwrap_err();
    assert_eq!(gave_up.reason(), StopReason::Quota);
    assert_eq!(gave_up.attempts(), 1);
    let heard = heard.lock().unwrap();
    assert_eq!(heard.len(), 1);
    assert_eq!(
        heard[0].0,
        notice::Action::GiveUp {
            reason: StopReason::Quota
        }
    );
    assert!(
        heard[0]
            .1
            .ends_with("the retry quota is spent; not retrying during an outage")
    );
    assert_eq!(report.gave_up().len(), 1);
    assert_eq!(report.gave_up()[0].reason, StopReason::Quota);
}
