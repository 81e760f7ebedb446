//! Issue 22: `RetryLayer` around a tower HTTP service that is not async-openai's: hyper-util's
//! client, whose requests (`http::Request<Full<Bytes>>`) are not `Clone`, rebuilt from their
//! parts for each attempt. Against a loopback server that counts requests; real clock, waits
//! recorded by `testing::scope`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Policy, Retry, StopReason, Turn, TurnReport, testing};
use retry_tests::{Server, Step};
use std::time::Duration;
use tower::{Service, ServiceExt};

fn request(server: &Server) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("{}v1/chat/completions", server.url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(b"{\"prompt\":\"hi\"}")))
        .unwrap()
}

#[tokio::test]
async fn a_hyper_util_client_is_retried_through_two_503s_to_a_200_in_three_requests() {
    let server = Server::start([Step::status(503), Step::status(503), Step::ok("reply")]).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    // Configuration made at run time, shared with the layer: no `'static` needed.
    let policy = std::sync::Arc::new(Policy::AVAILABILITY);
    let retry = Retry::new(policy).named_owned(std::sync::Arc::<str>::from("model"));
    let mut service = tower::ServiceBuilder::new()
        .layer(RetryLayer::new(retry).http_requests())
        .service(client);
    let (response, recorded) =
        testing::scope(async { service.ready().await.unwrap().call(request(&server)).await }).await;
    let response = response.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "reply");
    assert_eq!(server.requests(), 3);
    assert_eq!(recorded.waits(), [250, 500].map(Duration::from_millis));
}

#[tokio::test]
async fn a_request_that_cannot_be_copied_is_sent_once() {
    let server = Server::start([Step::status(503), Step::ok("reply")]).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut service = tower::ServiceBuilder::new()
        .layer(
            RetryLayer::new(Retry::new(&Policy::AVAILABILITY))
                .clone_request(|_: &http::Request<Full<Bytes>>| None),
        )
        .service(client);
    let (response, recorded) =
        testing::scope(async { service.ready().await.unwrap().call(request(&server)).await }).await;
    assert_eq!(response.unwrap().status(), 503);
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn a_request_that_cannot_be_copied_again_ends_the_ladder_with_the_failure_it_has() {
    let server = Server::start([Step::status(503), Step::ok("reply")]).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let copies = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&copies);
    let once = move |request: &http::Request<Full<Bytes>>| {
        use retry_runtime::tower::CloneRequest;
        (counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0)
            .then(|| retry_runtime::tower::HttpRequests.clone_request(request))
            .flatten()
    };
    let mut service = tower::ServiceBuilder::new()
        .layer(RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).clone_request(once))
        .service(client);
    let (response, recorded) =
        testing::scope(async { service.ready().await.unwrap().call(request(&server)).await }).await;
    assert_eq!(response.unwrap().status(), 503);
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
}

/// A call through `service` inside a turn: the status it got, and the turn's report.
async fn status_in_a_turn<S, B>(
    service: &mut S,
    request: http::Request<Full<Bytes>>,
) -> (u16, TurnReport)
where
    S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>>,
    S::Error: std::fmt::Debug,
{
    let (outcome, report) = Turn::new(Duration::from_secs(180))
        .run(async { service.ready().await.unwrap().call(request).await })
        .await;
    let response = outcome.into_finished().expect("the turn finishes").unwrap();
    (response.status().as_u16(), report)
}

#[tokio::test]
async fn a_request_that_cannot_be_copied_failing_transiently_ends_not_resendable() {
    let server = Server::start([Step::status(503), Step::ok("reply")]).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut service = tower::ServiceBuilder::new()
        .layer(
            RetryLayer::new(Retry::new(&Policy::AVAILABILITY))
                .clone_request(|_: &http::Request<Full<Bytes>>| None),
        )
        .service(client);
    let ((status, report), recorded) =
        testing::scope(status_in_a_turn(&mut service, request(&server))).await;
    assert_eq!((status, server.requests()), (503, 1));
    assert!(recorded.waits().is_empty());
    let gave_up = report.gave_up();
    assert_eq!(gave_up.len(), 1);
    assert_eq!(
        (gave_up[0].reason, gave_up[0].attempts),
        (StopReason::NotResendable, 1)
    );
}

#[tokio::test]
async fn a_request_that_cannot_be_copied_again_ends_not_resendable_after_its_one_attempt() {
    let server = Server::start([Step::status(503), Step::ok("reply")]).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let copies = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&copies);
    let once = move |request: &http::Request<Full<Bytes>>| {
        use retry_runtime::tower::CloneRequest;
        (counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0)
            .then(|| retry_runtime::tower::HttpRequests.clone_request(request))
            .flatten()
    };
    let mut service = tower::ServiceBuilder::new()
        .layer(RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).clone_request(once))
        .service(client);
    let ((status, report), _) =
        testing::scope(status_in_a_turn(&mut service, request(&server))).await;
    assert_eq!((status, server.requests()), (503, 1));
    let gave_up = report.gave_up();
    assert_eq!(
        (gave_up[0].reason, gave_up[0].attempts),
        (StopReason::NotResendable, 1)
    );
}

/// A request that cannot be copied whose failure is an answer stops as one: not resendable
/// says only that a retry was wanted and could not be made.
#[tokio::test]
async fn a_request_that_cannot_be_copied_answered_with_a_400_ends_definitive() {
    let server = Server::start([Step::status(400)]).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut service = tower::ServiceBuilder::new()
        .layer(
            RetryLayer::new(Retry::new(&Policy::AVAILABILITY))
                .clone_request(|_: &http::Request<Full<Bytes>>| None),
        )
        .service(client);
    let ((status, report), _) =
        testing::scope(status_in_a_turn(&mut service, request(&server))).await;
    assert_eq!(status, 400);
    assert_eq!(report.gave_up()[0].reason, StopReason::Definitive);
}
