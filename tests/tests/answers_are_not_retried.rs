//! Answers are not retried: retry admission is gated by the failure's class. The rule comes
//! from seed 002 (bitfun #2691).
//!
//! A deterministic request error (400, 401, 403, 404, 413, 422) reaches the far side once; a
//! transient one keeps its retries; content-invalid output is retried only where a policy opts
//! in, because a new try may be valid. Every HTTP case goes through a real server on 127.0.0.1.

use std::time::Duration;

use retry_runtime::{Class, Policy, Retry, StopReason, testing};
use retry_tests::{Server, Step};

/// A policy that retries unusable output as well as availability failures.
const OPTED_IN: Policy = Policy::AVAILABILITY.retrying(Class::InvalidOutput);

#[tokio::test]
async fn a_403_reaches_the_server_once() {
    let server = Server::start([Step::status(403), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(gave_up.reason(), StopReason::Definitive);
    assert_eq!(gave_up.attempts(), 1);
    assert_eq!(gave_up.error().status(), Some(403));
    assert!(!gave_up.is_undetermined());
}

#[tokio::test]
async fn a_dropped_connection_then_a_403_reaches_the_server_twice() {
    let server = Server::start([Step::Drop, Step::status(403), Step::ok("never")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
    assert_eq!(gave_up.reason(), StopReason::Definitive);
    assert_eq!(gave_up.attempts(), 2);
    assert_eq!(gave_up.error().status(), Some(403));
    assert_eq!(gave_up.error().request(), Some(2));
    assert!(!gave_up.is_undetermined());
}

#[tokio::test]
async fn every_deterministic_request_error_reaches_the_server_once_under_every_policy() {
    for policy in &Policy::BUILT_IN {
        for status in [400, 401, 403, 404, 413, 422] {
            let server = Server::start([Step::status(status), Step::ok("never")]).await;
            let client = server.client();

            let (result, recorded) =
                testing::scope(Retry::new(policy).run(async |_| client.get().await)).await;

            let gave_up = result.unwrap_err();
            let case = format!("{} {status}", policy.name());
            assert_eq!(server.requests(), 1, "{case}");
            assert_eq!(recorded.waits(), [], "{case}");
            assert_eq!(gave_up.reason(), StopReason::Definitive, "{case}");
            assert!(!gave_up.is_undetermined(), "{case}");
        }
    }
}

#[tokio::test]
async fn invalid_output_is_not_retried_by_a_policy_that_did_not_opt_in() {
    for policy in &Policy::BUILT_IN {
        let server = Server::start([Step::ok(""), Step::ok("answer")]).await;
        let client = server.client();

        let (result, recorded) =
            testing::scope(Retry::new(policy).run(async |_| client.get().await?.nonempty())).await;

        let gave_up = result.unwrap_err();
        assert_eq!(server.requests(), 1, "{}", policy.name());
        assert_eq!(recorded.waits(), [], "{}", policy.name());
        assert_eq!(
            gave_up.reason(),
            StopReason::NotRetried {
                class: Class::InvalidOutput
            },
            "{}",
            policy.name()
        );
    }
}

#[tokio::test]
async fn invalid_output_is_retried_by_a_policy_that_opts_in() {
    let server = Server::start([Step::ok(""), Step::ok("answer")]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&OPTED_IN).run(async |_| client.get().await?.nonempty())).await;

    let reply = result.unwrap();
    assert_eq!(reply.body, "answer");
    assert_eq!(reply.request, Some(2));
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
}

#[tokio::test]
async fn opting_in_to_invalid_output_still_attempts_a_403_once() {
    let server = Server::start([Step::ok(""), Step::status(403), Step::ok("never")]).await;
    let client = server.client();

    let (result, _) =
        testing::scope(Retry::new(&OPTED_IN).run(async |_| client.get().await?.nonempty())).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 2);
    assert_eq!(gave_up.reason(), StopReason::Definitive);
    assert_eq!(gave_up.attempts(), 2);
}

#[tokio::test]
async fn a_policy_that_lists_definitive_among_its_retried_classes_still_attempts_a_400_once() {
    // Rule 1: retry availability, never answers; the properties hold for every policy.
    const CARELESS: Policy = Policy::AVAILABILITY.retrying(Class::Definitive);
    let server = Server::start(Step::status(400).times(4)).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(Retry::new(&CARELESS).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1, "the answer was asked for again");
    assert_eq!(recorded.waits(), []);
    assert_eq!(gave_up.reason(), StopReason::Definitive);
}
