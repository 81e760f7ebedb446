//! The `transient` policy: a falling-off retry rate on every transient error. Its numbers
//! come from seed 004 (retry-backoff).
//!
//! Waits of 1, 2, 4, 8 s, the ideal capped at 16 s, each multiplied by a factor in [0.5, 1.5)
//! so that sessions failing together do not retry together; a `Retry-After` over the doubling;
//! exhausting the retries leaves the verdict "could not determine", never a pass. Every HTTP
//! case goes through a real server on 127.0.0.1.

use std::time::Duration;

use retry_runtime::{Class, Draw, Policy, Retry, StopReason, testing};
use retry_tests::{Client, Server, Step};

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

/// `transient` with enough attempts to reach the cap: six retries.
const LONGER: Policy = Policy::TRANSIENT.with_attempts(7);

#[tokio::test]
async fn transient_waits_1_2_4_8_s_and_gives_up_after_5_attempts() {
    let server = Server::start(Step::status(503).times(5)).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 5);
    assert_eq!(recorded.waits(), [secs(1), secs(2), secs(4), secs(8)]);
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 5 });
    assert_eq!(gave_up.attempts(), 5);
}

#[tokio::test]
async fn the_ideal_wait_is_capped_at_16_s() {
    let server = Server::start(Step::status(503).times(7)).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&LONGER).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap_err().attempts(), 7);
    assert_eq!(server.requests(), 7);
    assert_eq!(
        recorded.waits(),
        [secs(1), secs(2), secs(4), secs(8), secs(16), secs(16)]
    );
}

#[tokio::test]
async fn a_500_is_retried() {
    let server = Server::start([Step::status(500), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [secs(1)]);
}

#[tokio::test]
async fn a_timeout_is_retried() {
    let server = Server::start([Step::Stall, Step::ok("reply")]).await;
    let client = Client::with_timeout(server.url(), secs(30));

    let (result, recorded) = testing::scope(Retry::new(&Policy::TRANSIENT).run(async |attempt| {
        if attempt == 1 {
            server.time_out(client.get()).await
        } else {
            client.get().await
        }
    }))
    .await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [secs(1)]);
}

#[tokio::test]
async fn the_lowest_draw_halves_each_wait() {
    let server = Server::start(Step::status(503).times(5)).await;
    let client = server.client();

    let (_, recorded) = testing::scope_with_draw(
        Draw::from_unit(0.0),
        Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await),
    )
    .await;

    assert_eq!(
        recorded.waits(),
        [500, 1000, 2000, 4000].map(Duration::from_millis)
    );
}

#[tokio::test]
async fn the_middle_draw_waits_the_ideal() {
    let server = Server::start(Step::status(503).times(5)).await;
    let client = server.client();

    let (_, recorded) = testing::scope_with_draw(
        Draw::from_unit(0.5),
        Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await),
    )
    .await;

    assert_eq!(recorded.waits(), [secs(1), secs(2), secs(4), secs(8)]);
}

#[tokio::test]
async fn the_highest_draw_stays_below_one_and_a_half_times_the_ideal() {
    let server = Server::start(Step::status(503).times(5)).await;
    let client = server.client();

    let (_, recorded) = testing::scope_with_draw(
        Draw::from_bits(u32::MAX),
        Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await),
    )
    .await;

    assert_eq!(recorded.waits().len(), 4);
    for (wait, ideal) in recorded.waits().iter().zip([1, 2, 4, 8].map(secs)) {
        let bound = ideal * 3 / 2;
        assert!(*wait < bound, "{wait:?} for {ideal:?}");
        assert!(
            *wait > bound - Duration::from_micros(1),
            "{wait:?} for {ideal:?}"
        );
    }
}

#[tokio::test]
async fn a_jittered_wait_may_exceed_the_cap_by_up_to_half() {
    let server = Server::start(Step::status(503).times(7)).await;
    let client = server.client();

    let (_, recorded) = testing::scope_with_draw(
        Draw::from_bits(u32::MAX),
        Retry::new(&LONGER).run(async |_| client.get().await),
    )
    .await;

    let capped = &recorded.waits()[4..];
    assert_eq!(capped.len(), 2);
    for wait in capped {
        assert!(*wait > LONGER.cap(), "{wait:?}");
        assert!(*wait < secs(24), "{wait:?}");
    }
    assert!(recorded.total() <= LONGER.worst_case_wait());
}

#[tokio::test]
async fn a_retry_after_is_honoured_over_the_doubling() {
    let script = Step::status(503)
        .times(2)
        .into_iter()
        .chain([Step::rate_limited_for(30), Step::ok("reply")]);
    let server = Server::start(script).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 4);
    // The third wait would have been 4 s; the far side asked for 30.
    assert_eq!(recorded.waits(), [secs(1), secs(2), secs(30)]);
}

#[tokio::test]
async fn a_retry_after_shorter_than_the_doubling_does_not_shorten_it() {
    let script = Step::status(503)
        .times(3)
        .into_iter()
        .chain([Step::rate_limited_for(1), Step::ok("reply")]);
    let server = Server::start(script).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 5);
    // A hint is a floor: the far side's 1 s never cuts the ladder's 8 s short.
    assert_eq!(recorded.waits(), [secs(1), secs(2), secs(4), secs(8)]);
}

#[tokio::test]
async fn exhausting_the_retries_leaves_the_verdict_undetermined_never_a_pass() {
    let server = Server::start(Step::status(500).times(5)).await;
    let client = server.client();

    let (result, _) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await)).await;

    let gave_up = result.expect_err("an exhausted ladder is not a pass");
    assert!(gave_up.is_undetermined());
    assert_ne!(gave_up.reason(), StopReason::Definitive);
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 5 });
    assert_eq!(gave_up.class(), Class::ServerError);
    let error = gave_up.into_error();
    assert_eq!(error.status(), Some(500));
    assert_eq!(error.request(), Some(5));
}

#[tokio::test]
async fn a_quota_403_and_a_permission_403_are_reported_differently() {
    let quota = Server::start([Step::quota_exhausted(), Step::ok("never")]).await;
    let permission = Server::start([Step::status(403), Step::ok("never")]).await;
    let (quota_client, permission_client) = (quota.client(), permission.client());

    let (quota_result, quota_waits) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| quota_client.get().await))
            .await;
    let (permission_result, permission_waits) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| permission_client.get().await))
            .await;

    let (quota_gave_up, permission_gave_up) =
        (quota_result.unwrap_err(), permission_result.unwrap_err());
    // Neither is worth hammering...
    assert_eq!((quota.requests(), permission.requests()), (1, 1));
    assert_eq!(
        (quota_waits.waits(), permission_waits.waits()),
        ([].as_slice(), [].as_slice())
    );
    // ...and the reader's next move differs: wait for the reset, or fix the permission.
    assert_eq!(
        quota_gave_up.reason(),
        StopReason::NotRetried {
            class: Class::QuotaExhausted
        }
    );
    assert_eq!(permission_gave_up.reason(), StopReason::Definitive);
    assert!(quota_gave_up.is_undetermined());
    assert!(!permission_gave_up.is_undetermined());
}
