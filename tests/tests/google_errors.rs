//! Google's error details through the one HTTP table, against a real server on 127.0.0.1 read
//! with reqwest: `RetryInfo.retryDelay` is the hint, a per-day quota is an answer of its own
//! (`QuotaExhausted`), a per-minute one is a rate limit to wait out, the array-wrapped
//! envelope reads the same, and a Gemini stream's error event before content is retried. The
//! server is the library's fault server (`testing::FaultServer`, issue 47), playing each
//! scripted answer; it replaced the hand-written ones these tests began with.

use std::time::Duration;

use retry_runtime::http::{HintSource, ResponseExt};
use retry_runtime::testing::{Act, FaultServer, Script, ScriptedEvent};
use retry_runtime::{Class, Classify, Policy, Retry, StopReason, sse, testing};
use retry_tests::{CallError, Client};

/// A fault server on 127.0.0.1 that plays `acts`, one a request.
async fn start(acts: impl IntoIterator<Item = Act>) -> FaultServer {
    FaultServer::start(Script::new(acts))
        .await
        .expect("start a fault server")
}

/// A Gemini 429: `RESOURCE_EXHAUSTED`, a `QuotaFailure` naming `quota`, and `retryDelay`.
fn gemini_429(quota: &str, retry_delay: &str) -> String {
    format!(
        r#"{{"error": {{"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Please retry in {retry_delay}.",
  "details": [
    {{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
      {{"quotaId": "{quota}", "quotaValue": "20"}}]}},
    {{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "{retry_delay}"}}]}}}}"#
    )
}

const PER_MINUTE: &str = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier";
const PER_DAY: &str = "GenerateRequestsPerDayPerProjectPerModel-FreeTier";

async fn call(
    server: &FaultServer,
) -> (
    Result<String, retry_runtime::GaveUp<CallError>>,
    testing::Recorded,
) {
    let client = Client::new(server.url());
    let (result, recorded) = testing::scope(
        Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await.map(|reply| reply.body)),
    )
    .await;
    (result, recorded)
}

#[tokio::test]
async fn a_per_minute_429_waits_its_retry_delay_then_succeeds() {
    let server = start([
        Act::status(429).with_body(&gemini_429(PER_MINUTE, "2s")),
        Act::ok("generated"),
    ])
    .await;
    let (result, recorded) = call(&server).await;
    assert_eq!(result.unwrap(), "generated");
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits().len(), 1);
    assert!(
        recorded.waits()[0] >= Duration::from_secs(2),
        "{:?}",
        recorded.waits()
    );
}

#[tokio::test]
async fn a_per_day_429_is_one_request_no_wait_and_quota_exhausted() {
    let server = start([Act::status(429).with_body(&gemini_429(PER_DAY, "36s"))]).await;
    let (result, recorded) = call(&server).await;
    let gave_up = result.unwrap_err();
    assert_eq!(gave_up.class(), Class::QuotaExhausted);
    let http = gave_up.error().http().expect("an HTTP error");
    assert_eq!(http.quota_id(), Some(PER_DAY));
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn a_retry_delay_over_max_retry_after_stops_at_once() {
    let server = start([Act::status(429).with_body(&gemini_429(PER_MINUTE, "600s"))]).await;
    let (result, recorded) = call(&server).await;
    let gave_up = result.unwrap_err();
    assert!(
        matches!(gave_up.reason(), StopReason::RetryAfterTooLong { wanted, .. } if wanted == Duration::from_secs(600)),
        "{:?}",
        gave_up.reason()
    );
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn the_array_wrapped_envelope_is_read_the_same() {
    let wrapped = format!("[{}]", gemini_429(PER_MINUTE, "2s"));
    let server = start([Act::status(429).with_body(&wrapped), Act::ok("generated")]).await;
    let (result, recorded) = call(&server).await;
    assert_eq!(result.unwrap(), "generated");
    assert_eq!(server.requests(), 2);
    assert!(recorded.waits()[0] >= Duration::from_secs(2));
}

#[tokio::test]
async fn the_hint_says_it_came_from_retry_info() {
    let server = start([Act::status(429).with_body(&gemini_429(PER_MINUTE, "2.5s"))]).await;
    let error = Client::new(server.url()).get().await.unwrap_err();
    let http = error.http().expect("an HTTP error");
    assert_eq!(http.hint_source(), Some(HintSource::RetryInfo));
    assert_eq!(
        error.classify(),
        Class::RateLimited {
            retry_after: Some(Duration::from_millis(2500))
        }
    );
}

#[tokio::test]
async fn a_vertex_429_with_no_details_is_retried_on_the_ladder() {
    let vertex = r#"{"error": {"code": 429, "message": "Resource exhausted. Please try again later.", "status": "RESOURCE_EXHAUSTED"}}"#;
    let server = start([Act::status(429).with_body(vertex), Act::ok("generated")]).await;
    let (result, recorded) = call(&server).await;
    assert_eq!(result.unwrap(), "generated");
    assert_eq!(server.requests(), 2);
    // No hint: the wait is the ladder's own first rung, at most 250 ms.
    assert!(
        recorded.waits()[0] <= Duration::from_millis(250),
        "{:?}",
        recorded.waits()
    );
}

#[derive(Debug, thiserror::Error, Classify)]
enum StreamFailed {
    #[error(transparent)]
    #[classify(from)]
    Http(#[from] retry_runtime::http::HttpError),
    #[error(transparent)]
    #[classify(from)]
    Request(#[from] reqwest::Error),
    #[error(transparent)]
    #[classify(from)]
    Stream(#[from] retry_runtime::http::StreamError),
    #[error(transparent)]
    #[classify(from)]
    Ended(#[from] retry_runtime::EndedEarly),
}

#[tokio::test]
async fn a_per_minute_error_inside_a_gemini_stream_before_content_is_retried_after_its_delay() {
    let text = r#"{"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}}]}"#;
    let server = start([
        Act::events([ScriptedEvent::data(
            &gemini_429(PER_MINUTE, "2s").replace('\n', " "),
        )]),
        Act::events([ScriptedEvent::data(text)]),
    ])
    .await;
    let http = reqwest::Client::new();
    let url = server.url();
    let stream =
        Retry::new(&Policy::AVAILABILITY)
            .stream(|_| {
                let request = http.post(&url);
                async move {
                    Ok::<_, StreamFailed>(request.send().await?.check_status().await?.events())
                }
            })
            .commit_when(sse::is_content);
    let (items, recorded) = testing::scope(testing::collect(stream)).await;
    let data: Vec<String> = items
        .into_iter()
        .map(|item| item.unwrap().data().to_owned())
        .collect();
    assert_eq!(data, [text]);
    assert_eq!(server.requests(), 2);
    assert!(
        recorded.waits()[0] >= Duration::from_secs(2),
        "{:?}",
        recorded.waits()
    );
}
