//! The `availability` policy: retry what fails fast, and only that. Its numbers come from
//! seed 000 (incident #662).
//!
//! Four attempts, 250 ms doubling: under two seconds of waiting against a 180 s turn.
//! Retried: transport errors, 429, 502, 503, 504. Not retried: every other 4xx, and a cancelled
//! or expired turn. Every HTTP case goes through a real server on 127.0.0.1.

use std::time::Duration;

use retry_runtime::{Class, Draw, Policy, Retry, StopReason, Turn, testing};
use retry_tests::{Client, Server, Step, refused_url};

const TURN: Duration = Duration::from_secs(180);

// The bound is arithmetic, not taste: checked when this file compiles. The ladder's own waits
// stay under two seconds, and the whole ladder, `Retry-After` hints included, within a tenth
// of the turn ceiling.
const _: () = assert!(Policy::AVAILABILITY.worst_case_wait().as_nanos() < 2_000_000_000);
const _: () =
    assert!(Policy::AVAILABILITY.worst_case_wait_with_hints().as_nanos() * 10 <= TURN.as_nanos());

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

#[tokio::test]
async fn a_503_is_retried_at_250_500_1000_ms_and_given_up_after_4_attempts() {
    let server = Server::start(
        Step::status(503)
            .times(4)
            .into_iter()
            .chain([Step::ok("late")]),
    )
    .await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 4);
    assert_eq!(recorded.waits(), [ms(250), ms(500), ms(1000)]);
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    assert_eq!(gave_up.attempts(), 4);
    assert_eq!(gave_up.waited(), ms(1750));
    assert!(gave_up.is_undetermined());
}

#[tokio::test]
async fn the_error_given_up_on_is_the_last_503_unchanged() {
    let server = Server::start(Step::status(503).times(4)).await;
    let client = server.client();

    let (result, _) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let error = result.unwrap_err().into_error();
    assert_eq!(error.status(), Some(503));
    assert_eq!(error.request(), Some(4));
}

#[tokio::test]
async fn a_503_then_a_success_returns_the_success_after_one_250_ms_wait() {
    let server = Server::start([Step::status(503), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let reply = result.unwrap();
    assert_eq!(reply.body, "reply");
    assert_eq!(reply.request, Some(2));
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [ms(250)]);
}

#[tokio::test]
async fn a_502_a_504_a_429_and_a_dropped_connection_are_each_retried_like_a_503() {
    for failure in [
        Step::status(502),
        Step::status(504),
        Step::status(429),
        Step::Drop,
    ] {
        let server = Server::start([failure.clone(), Step::ok("reply")]).await;
        let client = server.client();

        let (result, recorded) =
            testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await))
                .await;

        assert_eq!(result.unwrap().body, "reply", "{failure:?}");
        assert_eq!(server.requests(), 2, "{failure:?}");
        assert_eq!(recorded.waits(), [ms(250)], "{failure:?}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_retried_at_250_500_1000_ms() {
    let client = Client::new(refused_url());
    let mut attempts = Vec::new();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |attempt| {
            attempts.push(attempt);
            client.get().await
        }))
        .await;

    let gave_up = result.unwrap_err();
    assert_eq!(attempts, [1, 2, 3, 4]);
    assert_eq!(recorded.waits(), [ms(250), ms(500), ms(1000)]);
    assert_eq!(gave_up.class(), Class::Transport);
    assert!(gave_up.error().is_request());
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    assert!(gave_up.is_undetermined());
}

#[tokio::test]
async fn a_400_is_attempted_once() {
    let server = Server::start([Step::status(400), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(gave_up.reason(), StopReason::Definitive);
    assert_eq!(gave_up.attempts(), 1);
    assert_eq!(gave_up.waited(), Duration::ZERO);
    assert!(!gave_up.is_undetermined());
    assert_eq!(gave_up.error().status(), Some(400));
}

#[tokio::test]
async fn a_7_s_retry_after_fits_under_the_ladders_18_s_total() {
    let server = Server::start([Step::rate_limited_for(7), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(recorded.waits(), [Duration::from_secs(7)]);
}

#[tokio::test]
async fn a_retry_after_that_would_cross_the_18_s_total_ends_the_ladder_naming_both_figures() {
    let script = [
        Step::rate_limited_for(10),
        Step::rate_limited_for(10),
        Step::ok("never"),
    ];
    let server = Server::start(script).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [Duration::from_secs(10)]);
    // 10 s waited, 8 s of the 18 s left: the second 10 s hint does not fit.
    assert_eq!(
        gave_up.reason(),
        StopReason::RetryAfterTooLong {
            wanted: Duration::from_secs(10),
            max: Duration::from_secs(8),
        }
    );
    assert_eq!(
        gave_up.reason().to_string(),
        "the far side asked to wait 10000 ms, longer than the policy allows (8000 ms)"
    );
}

#[tokio::test]
async fn a_retry_after_of_120_s_is_not_waited_inside_a_turn() {
    let server = Server::start([Step::rate_limited_for(120), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert!(matches!(
        gave_up.reason(),
        StopReason::RetryAfterTooLong { .. }
    ));
}

#[tokio::test]
async fn a_retry_after_on_a_429_replaces_the_doubling() {
    let server = Server::start([Step::rate_limited_for(3), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [Duration::from_secs(3)]);
}

#[tokio::test]
async fn a_cancelled_operation_is_not_retried() {
    let mut attempts = 0;

    let (result, recorded) = testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| {
        attempts += 1;
        Err::<(), _>(Class::Cancelled)
    }))
    .await;

    let gave_up = result.unwrap_err();
    assert_eq!(attempts, 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(gave_up.reason(), StopReason::Cancelled);
    assert_eq!(gave_up.attempts(), 1);
    assert_eq!(gave_up.into_error(), Class::Cancelled);
}

#[tokio::test]
async fn a_cancelled_turn_sends_no_request() {
    let server = Server::start([Step::status(503), Step::ok("never")]).await;
    let client = server.client();
    let turn = Turn::new(TURN);
    turn.canceller().cancel();

    let ((outcome, report), recorded) = testing::scope(
        turn.run(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)),
    )
    .await;

    assert!(outcome.is_cancelled());
    assert_eq!(server.requests(), 0);
    assert_eq!(recorded.waits(), []);
    assert_eq!(report.attempts(), 0);
}

#[test]
fn the_worst_case_wait_is_1750_ms_jitter_included() {
    assert_eq!(Policy::AVAILABILITY.worst_case_wait(), ms(1750));
}

#[tokio::test]
async fn the_longest_draw_waits_under_the_worst_case() {
    let server = Server::start(Step::status(503).times(4)).await;
    let client = server.client();

    let (result, recorded) = testing::scope_with_draw(
        Draw::from_bits(u32::MAX),
        Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await),
    )
    .await;

    assert_eq!(result.unwrap_err().attempts(), 4);
    // Equal jitter never waits longer than the ideal: each wait is just under it.
    for (wait, ideal) in recorded.waits().iter().zip([250, 500, 1000]) {
        assert!(*wait < ms(ideal) && *wait >= ms(ideal) - ms(1), "{wait:?}");
    }
    assert!(recorded.total() <= Policy::AVAILABILITY.worst_case_wait());
}

#[tokio::test]
async fn the_shortest_draw_halves_every_wait() {
    let server = Server::start(Step::status(503).times(4)).await;
    let client = server.client();

    let (_, recorded) = testing::scope_with_draw(
        Draw::from_unit(0.0),
        Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await),
    )
    .await;

    assert_eq!(recorded.waits(), [ms(125), ms(250), ms(500)]);
}
