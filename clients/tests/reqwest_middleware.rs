//! Issue 13: the same rows as `async_openai.rs`, through `RetryMiddleware` in a plain
//! `reqwest_middleware` client, against a real loopback server that counts requests.
//!
//! Real clock, waits recorded by `testing::scope` (see `async_openai.rs` for why).

use std::time::Duration;

use reqwest_middleware::ClientBuilder;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::testing::{self, Recorded};
use retry_runtime::{Policy, Retry, StopReason, Turn, TurnReport};
use retry_tests::{Server, Step};

/// A response as the caller saw it: status, the request number the server stamped on it, and
/// its body read in full.
#[derive(Debug)]
struct Seen {
    status: u16,
    request: Option<String>,
    url: String,
    body: String,
}

async fn get(script: impl IntoIterator<Item = Step>) -> (Seen, u32, TurnReport, Recorded) {
    let server = Server::start(script).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(
            Retry::new(&Policy::AVAILABILITY).named("model"),
        ))
        .build();
    let url = format!("{}v1/chat/completions?key=secret", server.url());
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(async {
            let response = client
                .post(&url)
                .body("{}")
                .send()
                .await
                .expect("an answer");
            let status = response.status().as_u16();
            let request = response
                .headers()
                .get(retry_tests::REQUEST_NUMBER)
                .map(|value| value.to_str().unwrap().to_owned());
            let url = response.url().to_string();
            let body = response.text().await.expect("the body, read in full");
            Seen {
                status,
                request,
                url,
                body,
            }
        }))
        .await;
    let seen = outcome.into_finished().expect("the turn finishes");
    assert_eq!(seen.url, url, "the response keeps its URL");
    (seen, server.requests(), report, recorded)
}

#[tokio::test]
async fn a_503_outage_is_four_requests_and_the_last_answer_is_handed_back() {
    let (seen, requests, report, recorded) =
        get(Step::status(503).with_body("down").times(20)).await;
    assert_eq!(requests, 4);
    assert_eq!(report.attempts(), requests);
    assert_eq!(
        recorded.waits(),
        [250, 500, 1000].map(Duration::from_millis)
    );
    assert_eq!(seen.status, 503);
    assert_eq!(seen.request.as_deref(), Some("4"));
    assert_eq!(seen.body, "down");
}

#[tokio::test]
async fn a_one_day_retry_after_is_one_request_and_no_wait() {
    let (seen, requests, report, recorded) =
        get([Step::status(503).with_header("retry-after", "86400")]).await;
    assert_eq!((seen.status, requests, report.attempts()), (503, 1, 1));
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn insufficient_quota_is_one_request_and_its_body_is_intact() {
    let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let (seen, requests, report, _) = get([Step::status(429).with_body(body)]).await;
    assert_eq!((seen.status, requests, report.attempts()), (429, 1, 1));
    assert_eq!(seen.body, body);
}

#[tokio::test]
async fn x_should_retry_false_is_one_request() {
    let (seen, requests, report, _) =
        get([Step::status(503).with_header("x-should-retry", "false")]).await;
    assert_eq!((seen.status, requests, report.attempts()), (503, 1, 1));
}

#[tokio::test]
async fn a_503_asking_for_two_seconds_waits_at_least_two() {
    let (seen, requests, report, recorded) = get([
        Step::status(503).with_header("retry-after", "2"),
        Step::ok("reply"),
    ])
    .await;
    assert_eq!((seen.status, requests, report.attempts()), (200, 2, 2));
    assert_eq!(seen.body, "reply");
    assert!(
        recorded.waits()[0] >= Duration::from_secs(2),
        "{:?}",
        recorded.waits()
    );
}

#[tokio::test]
async fn a_gateways_plain_text_429_is_retried() {
    let (seen, requests, report, _) = get([
        Step::status(429)
            .with_header("content-type", "text/plain")
            .with_body("Too Many Requests"),
        Step::ok("reply"),
    ])
    .await;
    assert_eq!((seen.status, requests, report.attempts()), (200, 2, 2));
}

#[tokio::test]
async fn a_529_overloaded_error_is_retried() {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let (seen, requests, report, _) =
        get([Step::status(529).with_body(body), Step::ok("reply")]).await;
    assert_eq!((seen.status, requests, report.attempts()), (200, 2, 2));
}

#[tokio::test]
async fn a_success_is_one_request() {
    let (seen, requests, report, recorded) = get([Step::ok("reply")]).await;
    assert_eq!((seen.status, requests, report.attempts()), (200, 1, 1));
    assert_eq!(seen.body, "reply");
    assert!(recorded.waits().is_empty());
}

/// A failed answer longer than the 4 KiB the table reads: the caller still gets every byte.
#[tokio::test]
async fn a_long_error_body_is_handed_back_whole() {
    let long = "x".repeat(20_000);
    let (seen, requests, _, _) = get([Step::status(400).with_body(&long)]).await;
    assert_eq!((seen.status, requests), (400, 1));
    assert_eq!(seen.body, long);
}

/// A streamed body cannot be sent twice: one request, and the answer as it came.
#[tokio::test]
async fn a_streamed_body_is_sent_once() {
    let server = Server::start(Step::status(503).times(4)).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY)))
        .build();
    let mut request = reqwest::Request::new(reqwest::Method::POST, server.url().parse().unwrap());
    *request.body_mut() = Some(reqwest::Body::wrap(String::from("streamed")));
    assert!(
        request.try_clone().is_none(),
        "a wrapped body does not clone"
    );
    let (response, recorded) = testing::scope(client.execute(request)).await;
    assert_eq!(response.unwrap().status(), 503);
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
}

/// A request with a streamed body, which `try_clone` cannot copy.
fn streamed(url: &str) -> reqwest::Request {
    let mut request = reqwest::Request::new(reqwest::Method::POST, url.parse().unwrap());
    *request.body_mut() = Some(reqwest::Body::wrap(String::from("streamed")));
    request
}

/// A streamed body that meets a 503 ends its ladder as not resendable, not as an answer, and
/// the caller gets that 503 itself: its status, request number and body.
#[tokio::test]
async fn a_streamed_body_failing_transiently_ends_not_resendable_with_its_own_503() {
    let server = Server::start(Step::status(503).with_body("down").times(4)).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(
            Retry::new(&Policy::AVAILABILITY).named("model"),
        ))
        .build();
    let request = streamed(&server.url());
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(async {
            let response = client.execute(request).await.expect("the 503 itself");
            let number = response.headers()[retry_tests::REQUEST_NUMBER].to_owned();
            (
                response.status().as_u16(),
                number,
                response.text().await.unwrap(),
            )
        }))
        .await;
    let (status, number, body) = outcome.into_finished().expect("the turn finishes");
    assert_eq!(
        (status, number.to_str().unwrap(), body.as_str()),
        (503, "1", "down")
    );
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
    let gave_up = report.gave_up();
    assert_eq!(gave_up.len(), 1);
    assert_eq!(
        (gave_up[0].reason, gave_up[0].attempts),
        (StopReason::NotResendable, 1)
    );
}

/// A streamed body whose connection is refused: the connect error itself comes back, not one
/// the middleware made up.
#[tokio::test]
async fn a_streamed_body_whose_connection_is_refused_gets_the_connect_error_back() {
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY)))
        .build();
    let request = streamed(&retry_tests::refused_url());
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(client.execute(request))).await;
    match outcome.into_finished().expect("the turn finishes") {
        Err(reqwest_middleware::Error::Reqwest(error)) => assert!(error.is_connect()),
        other => panic!("expected the connect error, got {other:?}"),
    }
    assert!(recorded.waits().is_empty());
    assert_eq!(report.gave_up()[0].reason, StopReason::NotResendable);
}

/// A connection refused is `Transport`: retried, and the last error handed back unchanged.
#[tokio::test]
async fn a_refused_connection_is_retried_and_its_error_handed_back() {
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY)))
        .build();
    let (result, recorded) = testing::scope(client.get(retry_tests::refused_url()).send()).await;
    match result {
        Err(reqwest_middleware::Error::Reqwest(error)) => assert!(error.is_connect()),
        other => panic!("expected the connect error, got {other:?}"),
    }
    assert_eq!(recorded.waits().len(), 3);
}

/// Fallback through the middleware: a per-day quota on the primary moves the call to the
/// secondary's server at once; a 400 on it would not.
mod across {
    use std::collections::HashMap;
    use std::sync::OnceLock;

    use super::*;
    use retry_runtime::{Upstream, Upstreams};

    static PRIMARY: Upstream = Upstream::new("mw-primary");
    static SECONDARY: Upstream = Upstream::new("mw-secondary");
    static KEYS: Upstreams = Upstreams::new(&[&PRIMARY, &SECONDARY]);

    static SERVERS: OnceLock<HashMap<&'static str, reqwest::Url>> = OnceLock::new();

    fn to_server(request: &mut reqwest::Request, to: &'static Upstream) {
        let base = &SERVERS.get().expect("the servers are started")[to.name()];
        let url = request.url_mut();
        let _ = url.set_host(base.host_str());
        let _ = url.set_port(base.port());
    }

    #[tokio::test]
    async fn a_per_day_quota_on_the_primary_moves_the_call_to_the_secondary() {
        let primary = Server::start([Step::quota_exhausted()]).await;
        let secondary = Server::start([Step::ok("answer")]).await;
        let servers = HashMap::from([
            ("mw-primary", primary.url().parse().unwrap()),
            ("mw-secondary", secondary.url().parse().unwrap()),
        ]);
        SERVERS.set(servers).unwrap();
        let client = ClientBuilder::new(reqwest::Client::new())
            .with(
                RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY).named("model"))
                    .across(&KEYS, to_server),
            )
            .build();
        let url = format!("{}v1/chat/completions", primary.url());
        let ((outcome, report), recorded) =
            testing::scope(Turn::new(Duration::from_secs(180)).run(async {
                let response = client.post(&url).body("{}").send().await.unwrap();
                (response.status().as_u16(), response.text().await.unwrap())
            }))
            .await;
        let (status, body) = outcome.into_finished().unwrap();
        assert_eq!((status, body.as_str()), (200, "answer"));
        assert_eq!((primary.requests(), secondary.requests()), (1, 1));
        assert_eq!((report.attempts(), report.moves()), (2, 1), "{report}");
        assert!(recorded.waits().is_empty());
    }
}
