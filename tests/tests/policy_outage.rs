//! The `outage` policy: wait out an outage, never fail on one. Its numbers come from seed 001
//! (incident #116).
//!
//! A 502, 503 or 504, or a dropped connection, waits 5, 15 and 45 s before the call fails.
//! Not retried: a 500 (it may be the request's fault), a timeout (it already had its time), a
//! budget refusal (it won't clear by waiting). A rate limit keeps its single 20 s retry. Every
//! HTTP case goes through a real server on 127.0.0.1.

use std::time::Duration;

use retry_runtime::{Class, Policy, Retry, StopReason, testing};
use retry_tests::{Client, Server, Step};

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

#[tokio::test]
async fn an_outage_of_three_502s_is_waited_out_at_5_15_45_s_and_succeeds() {
    let script = Step::status(502)
        .times(3)
        .into_iter()
        .chain([Step::ok("reply")]);
    let server = Server::start(script).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    let reply = result.unwrap();
    assert_eq!(reply.body, "reply");
    assert_eq!(reply.request, Some(4));
    assert_eq!(server.requests(), 4);
    assert_eq!(recorded.waits(), [secs(5), secs(15), secs(45)]);
}

#[tokio::test]
async fn an_outage_that_outlasts_the_ladder_is_reported_exhausted_and_still_undetermined() {
    let script = Step::status(502)
        .times(4)
        .into_iter()
        .chain([Step::ok("late")]);
    let server = Server::start(script).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 4);
    assert_eq!(recorded.waits(), [secs(5), secs(15), secs(45)]);
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    assert_eq!(gave_up.attempts(), 4);
    assert_eq!(gave_up.waited(), secs(65));
    assert!(gave_up.is_undetermined());
    assert_eq!(gave_up.class(), Class::Unavailable { retry_after: None });
    let error = gave_up.into_error();
    assert_eq!(error.status(), Some(502));
    assert_eq!(error.request(), Some(4));
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    let server = Server::start([Step::Drop, Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [secs(5)]);
}

#[tokio::test]
async fn connections_dropped_throughout_end_as_a_transport_failure_still_undetermined() {
    let server = Server::start(Step::Drop.times(4)).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 4);
    assert_eq!(recorded.waits(), [secs(5), secs(15), secs(45)]);
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    assert_eq!(gave_up.class(), Class::Transport);
    assert!(gave_up.error().is_request());
    assert!(gave_up.is_undetermined());
}

#[tokio::test]
async fn a_500_is_not_retried() {
    let server = Server::start([Step::status(500), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(
        gave_up.reason(),
        StopReason::NotRetried {
            class: Class::ServerError
        }
    );
    assert_eq!(gave_up.attempts(), 1);
    assert_eq!(gave_up.error().status(), Some(500));
}

#[tokio::test]
async fn a_timeout_is_not_retried() {
    let server = Server::start([Step::Stall, Step::ok("never")]).await;
    let client = Client::with_timeout(server.url(), secs(30));

    let (result, recorded) = testing::scope(
        Retry::new(&Policy::OUTAGE).run(async |_| server.time_out(client.get()).await),
    )
    .await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert!(gave_up.error().is_timeout(), "{:?}", gave_up.error());
    assert_eq!(
        gave_up.reason(),
        StopReason::NotRetried {
            class: Class::Timeout
        }
    );
    assert_eq!(gave_up.attempts(), 1);
}

#[tokio::test]
async fn a_quota_refusal_is_not_waited_on() {
    let server = Server::start([Step::quota_exhausted(), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(gave_up.waited(), Duration::ZERO);
    assert_eq!(
        gave_up.reason(),
        StopReason::NotRetried {
            class: Class::QuotaExhausted
        }
    );
    assert_eq!(gave_up.class(), Class::QuotaExhausted);
}

#[tokio::test]
async fn a_429_gets_a_single_retry_after_20_s() {
    let server = Server::start([Step::status(429), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [secs(20)]);
}

#[tokio::test]
async fn a_second_429_is_not_retried() {
    let server = Server::start([Step::status(429), Step::status(429), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [secs(20)]);
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 2 });
    assert_eq!(gave_up.attempts(), 2);
    assert_eq!(gave_up.error().request(), Some(2));
    assert!(gave_up.is_undetermined());
}

#[tokio::test]
async fn a_429_with_a_longer_retry_after_waits_the_hint_instead_of_20_s() {
    let server = Server::start([Step::rate_limited_for(30), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [secs(30)]);
}

#[tokio::test]
async fn a_429_with_a_shorter_retry_after_still_waits_20_s_because_a_hint_is_a_floor() {
    let server = Server::start([Step::rate_limited_for(7), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [secs(20)]);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_policy_honours_ends_the_ladder_now() {
    let server = Server::start([Step::rate_limited_for(172_800), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(
        gave_up.reason(),
        StopReason::RetryAfterTooLong {
            wanted: secs(172_800),
            max: secs(120),
        }
    );
}

#[test]
fn the_outage_ladders_rungs_are_at_least_5_15_45_s_and_at_most_a_fifth_longer() {
    let ideal: Vec<Duration> = (1..Policy::OUTAGE.attempts())
        .map(|retry| retry_runtime::ladder::ideal_wait(&Policy::OUTAGE, retry))
        .collect();
    let longest: Vec<Duration> = (1..Policy::OUTAGE.attempts())
        .map(|retry| retry_runtime::ladder::max_wait(&Policy::OUTAGE, retry))
        .collect();
    assert_eq!(ideal, [secs(5), secs(15), secs(45)]);
    assert_eq!(longest, [secs(6), secs(18), secs(54)]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(10_000))]

    /// Seed 001: "about a minute in all", so an outage of a minute is waited out, whatever the
    /// draws: the whole ladder is never shorter than 65 s.
    #[test]
    fn every_draw_of_the_outage_ladder_waits_at_least_65_s(draws in proptest::array::uniform3(proptest::prelude::any::<u32>())) {
        let total: Duration = (1..=3)
            .map(|retry| {
                let draw = retry_runtime::Draw::from_bits(draws[retry as usize - 1]);
                let failure = retry_runtime::ladder::Failure::new(retry, Class::Unavailable { retry_after: None });
                let step = retry_runtime::ladder::decide(&Policy::OUTAGE, failure).with_draw(draw).step;
                step.wait().expect("an outage is retried up to its last attempt")
            })
            .sum();
        proptest::prop_assert!(total >= secs(65), "{total:?}");
        proptest::prop_assert!(total < secs(78), "{total:?}");
    }
}

#[tokio::test]
async fn a_rate_limit_followed_by_an_outage_waits_no_longer_than_the_worst_case() {
    // The single 20 s rate-limit retry takes the first rung, and the outage climbs the rest:
    // 20 + 15 + 45 s.
    let script = [Step::status(429)]
        .into_iter()
        .chain(Step::status(502).times(3));
    let server = Server::start(script).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::OUTAGE).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap_err().attempts(), 4);
    assert_eq!(recorded.waits(), [secs(20), secs(15), secs(45)]);
    assert!(
        recorded.total() <= Policy::OUTAGE.worst_case_wait(),
        "waited {:?}, but the policy's worst case says {:?}",
        recorded.total(),
        Policy::OUTAGE.worst_case_wait()
    );
}
