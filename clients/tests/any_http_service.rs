//! Issue 22: `RetryLayer` around a tower HTTP service that is not async-openai's: hyper-util's
//! client, whose requests (`http::Request<Full<Bytes>>`) are not `Clone`, rebuilt from their
//! parts for each attempt. Against a loopback server that counts requests; real clock, waits
//! recorded by `testing::scope`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Policy, Retry, testing};
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
