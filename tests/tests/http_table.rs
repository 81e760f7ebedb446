//! The one HTTP table, as users get it: `check_status` and the shipped classifiers, against a
//! real server on 127.0.0.1, with the requests counted on the server's side: the library's
//! fault server (`testing::FaultServer`, issue 47), which replaced the hand-written one.

use std::time::Duration;

use retry_runtime::testing::{Act, FaultServer, Script};
use retry_runtime::{Class, Classify, Policy, Retry, StopReason, testing};
use retry_tests::{CallError, Client};

/// A fault server on 127.0.0.1 that plays `acts`, one a request.
async fn start(acts: impl IntoIterator<Item = Act>) -> FaultServer {
    FaultServer::start(Script::new(acts))
        .await
        .expect("start a fault server")
}

const OPENAI_CONTEXT: &str = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
const ANTHROPIC_CONTEXT: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens > 200000 maximum"}}"#;
const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
const INSUFFICIENT_QUOTA: &str = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
const BILLING_LIMIT: &str = r#"{"error":{"message":"Billing hard limit has been reached","type":"invalid_request_error","code":"billing_hard_limit_reached"}}"#;

fn unavailable(hint: Option<u64>) -> Class {
    Class::Unavailable {
        retry_after: hint.map(Duration::from_secs),
    }
}

/// One request to a server that answers `step`: the error the client hands the ladder.
async fn failure(step: Act) -> CallError {
    let server = start([step]).await;
    let error = Client::new(server.url())
        .get()
        .await
        .expect_err("a failed response");
    assert_eq!(server.requests(), 1);
    error
}

#[tokio::test]
async fn every_row_of_the_table_classifies_a_real_response() {
    let rows: Vec<(Act, Class)> = vec![
        // `x-should-retry` first, both ways.
        (
            Act::status(400).with_header("x-should-retry", "true"),
            unavailable(None),
        ),
        (
            Act::status(503).with_header("x-should-retry", "false"),
            Class::Definitive,
        ),
        // Then the body's error type or code.
        (Act::status(500).with_body(OVERLOADED), unavailable(None)),
        (
            Act::status(429).with_body(INSUFFICIENT_QUOTA),
            Class::QuotaExhausted,
        ),
        (
            Act::status(400).with_body(BILLING_LIMIT),
            Class::QuotaExhausted,
        ),
        (
            Act::status(400).with_body(OPENAI_CONTEXT),
            Class::Definitive,
        ),
        (
            Act::status(413).with_body(ANTHROPIC_CONTEXT),
            Class::Definitive,
        ),
        // Then the status.
        (Act::status(502), unavailable(None)),
        (Act::status(503), unavailable(None)),
        (Act::status(504), unavailable(None)),
        (Act::status(529), unavailable(None)),
        (
            Act::status(503).with_header("retry-after", "3"),
            unavailable(Some(3)),
        ),
        (
            Act::rate_limited(Duration::from_secs(7)),
            Class::RateLimited {
                retry_after: Some(Duration::from_secs(7)),
            },
        ),
        (
            Act::status(429).with_header("retry-after-ms", "1500"),
            Class::RateLimited {
                retry_after: Some(Duration::from_millis(1500)),
            },
        ),
        (
            Act::status(429).with_header("retry-after", "0"),
            Class::RateLimited { retry_after: None },
        ),
        (
            Act::status(403).with_header("x-ratelimit-remaining", "0"),
            Class::QuotaExhausted,
        ),
        (Act::status(403), Class::Definitive),
        (Act::status(408), Class::Timeout),
        (Act::status(500), Class::ServerError),
        (Act::status(507), Class::ServerError),
        (Act::status(501), Class::Definitive),
        (Act::status(505), Class::Definitive),
        (Act::status(400), Class::Definitive),
        (Act::status(401), Class::Definitive),
        (Act::status(404), Class::Definitive),
        (Act::status(409), Class::Definitive),
        (Act::status(413), Class::Definitive),
        (Act::status(422), Class::Definitive),
    ];
    for (step, expected) in rows {
        let described = format!("{step:?}");
        let error = failure(step).await;
        assert_eq!(error.classify(), expected, "{described}");
    }
}

#[tokio::test]
async fn a_529_three_times_then_200_is_waited_out() {
    let script = Act::status(529).with_body(OVERLOADED).times(3);
    let server = start(script.into_iter().chain([Act::ok("reply")])).await;
    let client = Client::new(server.url());

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 4);
    assert_eq!(recorded.waits().len(), 3);
}

#[tokio::test]
async fn a_503_with_retry_after_3_waits_at_least_3_s() {
    let script = [
        Act::status(503).with_header("retry-after", "3"),
        Act::ok("reply"),
    ];
    let server = start(script).await;
    let client = Client::new(server.url());

    let (result, recorded) = testing::scope_with_draw(
        retry_runtime::Draw::from_unit(0.0),
        Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await),
    )
    .await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits().len(), 1);
    assert!(
        recorded.waits()[0] >= Duration::from_secs(3),
        "{recorded:?}"
    );
}

#[tokio::test]
async fn an_insufficient_quota_429_is_one_request_and_no_wait() {
    let script = [
        Act::status(429)
            .with_header("retry-after", "20")
            .with_body(INSUFFICIENT_QUOTA),
        Act::ok("never"),
    ];
    let server = start(script).await;
    let client = Client::new(server.url());

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(gave_up.class(), Class::QuotaExhausted);
    assert_eq!(
        gave_up.reason(),
        StopReason::NotRetried {
            class: Class::QuotaExhausted
        }
    );
}

#[tokio::test]
async fn a_context_overflow_is_one_request_and_says_so() {
    for body in [OPENAI_CONTEXT, ANTHROPIC_CONTEXT] {
        let server = start([Act::status(400).with_body(body), Act::ok("never")]).await;
        let client = Client::new(server.url());

        let (result, recorded) =
            testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| client.get().await)).await;

        let gave_up = result.unwrap_err();
        assert_eq!(server.requests(), 1);
        assert_eq!(recorded.waits(), []);
        assert_eq!(gave_up.reason(), StopReason::Definitive);
        let http = gave_up.error().http().expect("an HTTP error");
        assert!(http.is_context_overflow(), "{body}");
    }
}

#[tokio::test]
async fn x_should_retry_true_retries_a_400() {
    let script = [
        Act::status(400).with_header("x-should-retry", "true"),
        Act::ok("reply"),
    ];
    let server = start(script).await;
    let client = Client::new(server.url());

    let (result, _) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn x_should_retry_false_stops_a_503() {
    let script = [
        Act::status(503).with_header("x-should-retry", "false"),
        Act::ok("never"),
    ];
    let server = start(script).await;
    let client = Client::new(server.url());

    let (result, _) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap_err().reason(), StopReason::Definitive);
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn a_response_cut_off_mid_body_is_transport_and_retried() {
    let server = start([Act::reset_mid_body(), Act::ok("reply")]).await;
    let client = Client::new(server.url());
    let mut classes = Vec::new();

    let (result, _) = testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| {
        let result = client.get().await;
        classes.extend(result.as_ref().err().map(Classify::classify));
        result
    }))
    .await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
    assert_eq!(classes, [Class::Transport]);
}

#[tokio::test]
async fn a_malformed_json_body_is_one_request_and_definitive() {
    let server = start([Act::ok("{\"choices\": [oops"), Act::ok("{}")]).await;
    let client = Client::new(server.url());

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| client.get_json().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(server.requests(), 1);
    assert_eq!(recorded.waits(), []);
    assert_eq!(gave_up.class(), Class::Definitive);
    assert!(gave_up.error().is_request());
}

#[tokio::test]
async fn a_host_under_invalid_is_transport_through_reqwest_and_stays_undetermined() {
    let client = Client::new("http://model.retry-runtime.invalid/v1/chat");

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    let gave_up = result.unwrap_err();
    assert_eq!(gave_up.class(), Class::Transport, "{}", gave_up.error());
    assert_eq!(gave_up.attempts(), 4);
    assert_eq!(recorded.waits().len(), 3);
    assert!(gave_up.is_undetermined());
}

#[tokio::test]
async fn a_host_under_invalid_is_transport_through_tcp_connect_and_stays_undetermined() {
    let (result, recorded) = testing::scope(
        Retry::new(&Policy::AVAILABILITY)
            .run(async |_| tokio::net::TcpStream::connect("model.retry-runtime.invalid:80").await),
    )
    .await;

    let gave_up = result.unwrap_err();
    assert_eq!(gave_up.class(), Class::Transport, "{:?}", gave_up.error());
    assert_eq!(gave_up.attempts(), 4);
    assert_eq!(recorded.waits().len(), 3);
    assert!(gave_up.is_undetermined());
}

#[tokio::test]
async fn a_retry_after_of_zero_is_no_hint_and_the_ladder_waits_its_own() {
    let script = [
        Act::status(503).with_header("retry-after", "0"),
        Act::status(429).with_header("retry-after-ms", "0"),
        Act::ok("reply"),
    ];
    let server = start(script).await;
    let client = Client::new(server.url());

    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(
        recorded.waits(),
        [Duration::from_millis(250), Duration::from_millis(500)]
    );
}
