//! gRPC through the one table, against a real tonic server on 127.0.0.1: tonic-health's
//! generated health service (no `protoc`), behind a server-side tower layer that answers the
//! next scripted status instead of the service, and counts the calls that reached it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use retry_runtime::{Class, Policy, Retry, StopReason, retry, testing};
use tokio::net::TcpListener;
use tonic::transport::{Channel, Server};
use tonic::{Code, Status};
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tonic_types::{ErrorDetails, StatusExt};

/// What the layer does with one call.
enum Answer {
    /// Answer this status instead of the service.
    Fail(Status),
    /// Let the service answer, and end its stream with this status after its first message.
    CutAfterFirst(Status),
}

/// What the layer answers: the next scripted answer, or (none left) the service.
#[derive(Clone, Default)]
struct Script {
    statuses: Arc<Mutex<VecDeque<Answer>>>,
    calls: Arc<Mutex<u32>>,
}

/// A response body that ends with `status` in its trailers after its first data frame.
struct CutAfterFirst {
    inner: tonic::body::Body,
    status: Option<Status>,
    sent: bool,
}

impl http_body::Body for CutAfterFirst {
    type Data = bytes::Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Status>>> {
        if self.sent {
            let Some(status) = self.status.take() else {
                return Poll::Ready(None);
            };
            let mut trailers = http::HeaderMap::new();
            let _ = status.add_header(&mut trailers);
            return Poll::Ready(Some(Ok(http_body::Frame::trailers(trailers))));
        }
        let frame = std::task::ready!(std::pin::Pin::new(&mut self.inner).poll_frame(cx));
        if matches!(&frame, Some(Ok(frame)) if frame.is_data()) {
            self.sent = true;
        }
        Poll::Ready(frame)
    }
}

impl Script {
    fn calls(&self) -> u32 {
        *self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Clone)]
struct Inject<S> {
    inner: S,
    script: Script,
}

impl<S> tower::Layer<S> for Script {
    type Service = Inject<S>;
    fn layer(&self, inner: S) -> Inject<S> {
        Inject {
            inner,
            script: self.clone(),
        }
    }
}

impl<S, B> tower::Service<http::Request<B>> for Inject<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures_util::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        *self
            .script
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += 1;
        let next = self
            .script
            .statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match next {
            Some(Answer::Fail(status)) => Box::pin(std::future::ready(Ok(status.into_http()))),
            Some(Answer::CutAfterFirst(status)) => {
                let answered = self.inner.call(request);
                Box::pin(async move {
                    let response = answered.await?;
                    Ok(response.map(|inner| {
                        tonic::body::Body::new(CutAfterFirst {
                            inner,
                            status: Some(status),
                            sent: false,
                        })
                    }))
                })
            }
            None => Box::pin(self.inner.call(request)),
        }
    }
}

/// A health server behind the script, its reporter (to keep the service serving), its task,
/// and a client.
struct Peer {
    script: Script,
    client: HealthClient<Channel>,
    task: tokio::task::JoinHandle<()>,
    _reporter: tonic_health::server::HealthReporter,
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(statuses: Vec<Answer>) -> Peer {
    let script = Script {
        statuses: Arc::new(Mutex::new(statuses.into())),
        ..Script::default()
    };
    let (reporter, service) = tonic_health::server::health_reporter();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let layer = script.clone();
    let task = tokio::spawn(async move {
        let _ = Server::builder()
            .layer(layer)
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await;
    });
    let channel = Channel::from_shared(url)
        .expect("a valid URL")
        .connect()
        .await
        .expect("connect to the health server");
    let client = HealthClient::new(channel);
    Peer {
        script,
        client,
        task,
        _reporter: reporter,
    }
}

async fn check(
    peer: &Peer,
) -> (
    Result<tonic::Response<HealthCheckResponse>, retry_runtime::GaveUp<Status>>,
    testing::Recorded,
) {
    let client = peer.client.clone();
    testing::scope(
        Retry::new(&Policy::AVAILABILITY)
            .run(async |_| client.clone().check(HealthCheckRequest::default()).await),
    )
    .await
}

#[tokio::test]
async fn unavailable_twice_then_ok_is_three_calls() {
    let peer = serve(vec![
        Answer::Fail(Status::unavailable("down")),
        Answer::Fail(Status::unavailable("down")),
    ])
    .await;
    let (result, recorded) = check(&peer).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(peer.script.calls(), 3);
    assert_eq!(recorded.waits().len(), 2);
}

#[tokio::test]
async fn invalid_argument_is_one_call() {
    let peer = serve(vec![Answer::Fail(Status::invalid_argument(
        "no such field",
    ))])
    .await;
    let (result, _) = check(&peer).await;
    assert_eq!(result.unwrap_err().reason(), StopReason::Definitive);
    assert_eq!(peer.script.calls(), 1);
}

fn pushed_back(value: &str) -> Status {
    let mut status = Status::unavailable("busy");
    status
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", value.parse().unwrap());
    status
}

#[tokio::test]
async fn a_pushback_of_1500_ms_waits_at_least_that() {
    let peer = serve(vec![Answer::Fail(pushed_back("1500"))]).await;
    let (result, recorded) = check(&peer).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(peer.script.calls(), 2);
    assert!(
        recorded.waits()[0] >= Duration::from_millis(1500),
        "{:?}",
        recorded.waits()
    );
}

#[tokio::test]
async fn a_negative_pushback_stops_after_one_call() {
    let peer = serve(vec![Answer::Fail(pushed_back("-1"))]).await;
    let (result, recorded) = check(&peer).await;
    let gave_up = result.unwrap_err();
    assert!(
        matches!(gave_up.reason(), StopReason::RetryAfterTooLong { .. }),
        "{:?}",
        gave_up.reason()
    );
    assert!(gave_up.is_undetermined(), "a pushback is no answer");
    assert_eq!(peer.script.calls(), 1);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn resource_exhausted_with_a_per_day_quota_failure_is_one_call() {
    let details = ErrorDetails::with_quota_failure_violation(
        "projects/123",
        "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
    );
    let status = Status::with_error_details(Code::ResourceExhausted, "quota", details);
    let peer = serve(vec![Answer::Fail(status)]).await;
    let (result, _) = check(&peer).await;
    assert_eq!(result.unwrap_err().class(), Class::QuotaExhausted);
    assert_eq!(peer.script.calls(), 1);
}

#[tokio::test]
async fn resource_exhausted_with_retry_info_waits_its_delay() {
    let details = ErrorDetails::with_retry_info(Some(Duration::from_secs(2)));
    let status = Status::with_error_details(Code::ResourceExhausted, "slow down", details);
    let peer = serve(vec![Answer::Fail(status)]).await;
    let (result, recorded) = check(&peer).await;
    assert!(result.is_ok(), "{result:?}");
    assert!(
        recorded.waits()[0] >= Duration::from_secs(2),
        "{:?}",
        recorded.waits()
    );
}

#[tokio::test]
async fn a_watch_that_fails_before_its_first_message_is_retried_and_after_it_ends_committed() {
    let peer = serve(vec![
        Answer::Fail(Status::unavailable("down")),
        Answer::CutAfterFirst(Status::unavailable("gone")),
    ])
    .await;
    let client = peer.client.clone();
    let stream = Retry::new(&Policy::AVAILABILITY).stream(|_| {
        let mut client = client.clone();
        async move {
            let response = client.watch(HealthCheckRequest::default()).await?;
            Ok::<_, Status>(response.into_inner())
        }
    });
    let (items, _) = testing::scope(async {
        let mut stream = std::pin::pin!(stream);
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            items.push(item);
        }
        items
    })
    .await;
    assert_eq!(
        peer.script.calls(),
        2,
        "the failure before the first message was retried"
    );
    assert!(items[0].is_ok());
    let Some(Err(gave_up)) = items.last() else {
        panic!("the cut after the first message ends the stream: {items:?}")
    };
    assert_eq!(gave_up.reason(), StopReason::Committed);
    assert_eq!(gave_up.class(), Class::Unavailable { retry_after: None });
}

#[retry(policy = "availability")]
async fn check_health(
    client: &HealthClient<Channel>,
) -> Result<tonic::Response<HealthCheckResponse>, Status> {
    client.clone().check(HealthCheckRequest::default()).await
}

#[tokio::test]
async fn the_attribute_on_a_tonic_client_method_retries_unavailable() {
    let peer = serve(vec![
        Answer::Fail(Status::unavailable("down")),
        Answer::Fail(Status::invalid_argument("bad")),
    ])
    .await;
    let (result, recorded) = testing::scope(check_health(&peer.client)).await;
    assert_eq!(result.unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(peer.script.calls(), 2);
    assert_eq!(recorded.waits().len(), 1);
}

#[tokio::test]
async fn a_negative_pushback_stops_an_internal_error_that_transient_would_retry() {
    let mut status = Status::internal("broken");
    status
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", "-1".parse().unwrap());
    let peer = serve(vec![Answer::Fail(status)]).await;
    let client = peer.client.clone();
    let (result, _) = testing::scope(
        Retry::new(&Policy::TRANSIENT)
            .run(async |_| client.clone().check(HealthCheckRequest::default()).await),
    )
    .await;
    assert!(result.unwrap_err().is_undetermined());
    assert_eq!(peer.script.calls(), 1);
}

static HEALTH: retry_runtime::Upstream = retry_runtime::Upstream::new("health");
static ONCE: Policy = Policy::AVAILABILITY.with_attempts(1);

/// A pushback one call is given pauses every call on the upstream: the next call's first try
/// waits for it before it reaches the server.
#[tokio::test(start_paused = true)]
async fn a_pushback_pauses_every_call_on_the_upstream() {
    let peer = serve(vec![Answer::Fail(pushed_back("1500"))]).await;
    let client = peer.client.clone();
    let ((told, next), recorded) = testing::scope(async {
        let told = Retry::new(&ONCE)
            .upstream(&HEALTH)
            .run(async |_| client.clone().check(HealthCheckRequest::default()).await)
            .await;
        let calls_when_told = peer.script.calls();
        let next = Retry::new(&Policy::AVAILABILITY)
            .upstream(&HEALTH)
            .run(async |_| client.clone().check(HealthCheckRequest::default()).await)
            .await;
        ((told, calls_when_told), next)
    })
    .await;
    HEALTH.reset();
    assert!(
        told.0.is_err(),
        "the pushed-back call gives up after its one attempt"
    );
    assert_eq!(told.1, 1);
    assert!(next.is_ok(), "{next:?}");
    // The next call's first try waited out the pause, then reached the server once.
    assert_eq!(peer.script.calls(), 2);
    assert_eq!(recorded.waits().len(), 1);
    assert!(
        recorded.waits()[0] >= Duration::from_millis(1500),
        "{:?}",
        recorded.waits()
    );
}
