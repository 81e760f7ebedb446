//! Issue 21: streams at the HTTP layer of clients we do not own. A loopback server streams SSE
//! and counts requests; async-openai's `chat().create_stream()` goes through the README's
//! recipe (`RetryLayer`), and a plain `reqwest_middleware` client through `RetryMiddleware`.
//!
//! Real clock, waits recorded by `testing::scope` (see `async_openai.rs` for why).

use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequest,
    CreateChatCompletionRequestArgs,
};
use futures_util::StreamExt;
use reqwest_middleware::ClientBuilder;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::testing::{self, Recorded};
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Policy, Retry, Turn, TurnReport};
use retry_tests::event_server::{EventServer, Part};

const MODEL: Retry = Retry::new(&Policy::AVAILABILITY).named("model");

/// An OpenAI chat chunk whose delta is `delta` (a JSON object's inside).
fn chunk(delta: &str) -> Part {
    Part::data(&format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{{"index":0,"delta":{{{delta}}},"finish_reason":null}}]}}"#
    ))
}

/// OpenAI's first chunk: the role, and empty content. Not content.
fn role() -> Part {
    chunk(r#""role":"assistant","content":"""#)
}

fn text(text: &str) -> Part {
    chunk(&format!(r#""content":"{text}""#))
}

fn done() -> Part {
    Part::data("[DONE]")
}

fn overloaded() -> Part {
    Part::data(r#"{"error":{"type":"overloaded_error","message":"Overloaded"}}"#)
}

fn insufficient_quota() -> Part {
    Part::data(
        r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
    )
}

/// The bytes a script's body sends, in order.
fn bytes_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Bytes(bytes) => Some(bytes.as_str()),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// async-openai, through the README's recipe
// ---------------------------------------------------------------------------------------------

fn openai(server: &EventServer, layer: RetryLayer) -> async_openai::Client<OpenAIConfig> {
    let base = server.url().trim_end_matches("/v1/messages").to_owned();
    let config = OpenAIConfig::new()
        .with_api_base(base)
        .with_api_key("sk-test");
    async_openai::Client::with_config(config).with_http_service(
        tower::ServiceBuilder::new().layer(layer).service(
            async_openai::middleware::ReqwestService::new(reqwest::Client::new()),
        ),
    )
}

fn request() -> CreateChatCompletionRequest {
    CreateChatCompletionRequestArgs::default()
        .model("m")
        .messages([ChatCompletionRequestUserMessageArgs::default()
            .content("hello")
            .build()
            .unwrap()
            .into()])
        .build()
        .unwrap()
}

/// What async-openai's stream yielded: each chunk's content, or its error's text.
type Chunks = Vec<Result<String, String>>;

async fn chat_stream(
    bodies: impl IntoIterator<Item = Vec<Part>>,
    layer: RetryLayer,
) -> (Chunks, u32, TurnReport, Recorded) {
    let server = EventServer::start(bodies).await;
    let client = openai(&server, layer);
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(async {
            let mut stream = match client.chat().create_stream(request()).await {
                Ok(stream) => stream,
                Err(error) => return vec![Err(error.to_string())],
            };
            let mut seen = Vec::new();
            while let Some(item) = stream.next().await {
                seen.push(
                    item.map(|chunk| chunk.choices[0].delta.content.clone().unwrap_or_default())
                        .map_err(|error| error.to_string()),
                );
            }
            seen
        }))
        .await;
    let seen = outcome.into_finished().expect("the turn finishes");
    (seen, server.requests(), report, recorded)
}

#[tokio::test]
async fn async_openai_recovers_from_an_overloaded_event_before_its_first_token() {
    let (seen, requests, report, recorded) = chat_stream(
        [
            vec![overloaded()],
            vec![role(), text("Hel"), text("lo"), done()],
        ],
        RetryLayer::new(MODEL),
    )
    .await;
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), requests);
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
    // Only the second stream's chunks; async-openai never saw the error.
    assert_eq!(seen, [Ok(String::new()), Ok("Hel".into()), Ok("lo".into())]);
}

#[tokio::test]
async fn without_peeking_async_openai_meets_the_overloaded_event_as_a_decoding_error() {
    let (seen, requests, report, _) = chat_stream(
        [vec![overloaded()], vec![role(), text("Hel"), done()]],
        RetryLayer::new(MODEL).streams(false),
    )
    .await;
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), requests);
    assert_eq!(seen.len(), 1);
    assert!(seen[0].is_err(), "{seen:?}");
}

#[tokio::test]
async fn an_error_event_after_two_chunks_is_one_request_and_reaches_the_client_as_without_the_layer()
 {
    let body = vec![role(), text("one"), text("two"), overloaded()];
    let (with_layer, requests, report, recorded) =
        chat_stream([body.clone()], RetryLayer::new(MODEL)).await;
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), requests);
    assert!(recorded.waits().is_empty());
    let (without, _, _, _) = chat_stream([body], RetryLayer::new(MODEL).streams(false)).await;
    assert_eq!(with_layer, without);
    assert_eq!(
        with_layer[..3],
        [Ok(String::new()), Ok("one".into()), Ok("two".into())]
    );
    assert!(with_layer[3].is_err());
}

#[tokio::test]
async fn insufficient_quota_before_content_is_one_request_and_reaches_async_openai_unchanged() {
    let body = vec![insufficient_quota()];
    let (with_layer, requests, report, recorded) =
        chat_stream([body.clone()], RetryLayer::new(MODEL)).await;
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), requests);
    assert!(recorded.waits().is_empty());
    let (without, _, _, _) = chat_stream([body], RetryLayer::new(MODEL).streams(false)).await;
    assert_eq!(with_layer, without);
}

#[tokio::test]
async fn a_connection_dropped_before_the_first_event_is_retried_through_async_openai() {
    let (seen, requests, report, _) = chat_stream(
        [vec![Part::Cut], vec![role(), text("whole"), done()]],
        RetryLayer::new(MODEL),
    )
    .await;
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), requests);
    assert_eq!(seen, [Ok(String::new()), Ok("whole".into())]);
}

// ---------------------------------------------------------------------------------------------
// reqwest-middleware
// ---------------------------------------------------------------------------------------------

/// One streamed request through `RetryMiddleware`: the body's bytes as the client read them
/// (or the error it met), the requests the server counted, the turn's report and the waits.
async fn middleware_stream(
    bodies: impl IntoIterator<Item = Vec<Part>>,
    middleware: RetryMiddleware,
) -> (Result<String, String>, u32, TurnReport, Recorded) {
    let server = EventServer::start(bodies).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build();
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(async {
            let response = client
                .post(server.url())
                .body("{}")
                .send()
                .await
                .map_err(|error| error.to_string())?;
            assert_eq!(
                response.headers()["content-type"],
                "text/event-stream; charset=utf-8"
            );
            assert!(response.url().as_str().ends_with("/v1/messages"));
            response.text().await.map_err(|error| error.to_string())
        }))
        .await;
    let seen = outcome.into_finished().expect("the turn finishes");
    (seen, server.requests(), report, recorded)
}

#[tokio::test]
async fn a_plain_stream_is_one_request_and_its_bytes_are_the_servers() {
    let body = vec![role(), text("a"), text("b"), done()];
    let (seen, requests, report, recorded) =
        middleware_stream([body.clone()], RetryMiddleware::new(MODEL)).await;
    assert_eq!(seen.unwrap(), bytes_of(&body));
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), requests);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn a_preamble_over_64_kib_commits_at_the_limit_with_its_bytes_intact() {
    // Forty pings of 2 KiB, past 64 KiB in fewer than 64 events, then nothing: the layer
    // commits at the limit and hands the stream on, where a stall past `commit_timeout` would
    // have been retried.
    static PATIENT: Policy = Policy::AVAILABILITY.retrying(retry_runtime::Class::Timeout);
    let padding = "x".repeat(2048);
    let mut body: Vec<Part> = (0..40)
        .map(|_| Part::event("ping", &format!(r#"{{"type":"ping","pad":"{padding}"}}"#)))
        .collect();
    let preamble = bytes_of(&body);
    body.push(Part::Stall);
    let server = EventServer::start([body]).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(Retry::new(&PATIENT).named("model"))
                .commit_timeout(Duration::from_millis(300)),
        )
        .build();
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(async {
            let mut response = client.post(server.url()).send().await.unwrap();
            // What the layer read comes first, as it was sent: at least the 64 KiB limit.
            let first = response.chunk().await.unwrap().unwrap();
            assert!(first.len() >= 64 * 1024, "{}", first.len());
            first
        }))
        .await;
    let first = outcome.into_finished().expect("the turn finishes");
    assert_eq!(first, preamble.as_bytes()[..first.len()]);
    assert_eq!(server.requests(), 1);
    assert_eq!(report.attempts(), server.requests());
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn an_overloaded_event_before_content_is_retried_by_the_middleware() {
    let second = vec![role(), text("fine"), done()];
    let (seen, requests, report, recorded) = middleware_stream(
        [vec![role(), overloaded()], second.clone()],
        RetryMiddleware::new(MODEL),
    )
    .await;
    assert_eq!(seen.unwrap(), bytes_of(&second));
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), requests);
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
}

#[tokio::test]
async fn a_connection_dropped_before_the_first_event_is_retried_by_the_middleware() {
    let second = vec![role(), text("whole"), done()];
    let (seen, requests, report, _) = middleware_stream(
        [vec![role(), Part::Cut], second.clone()],
        RetryMiddleware::new(MODEL),
    )
    .await;
    assert_eq!(seen.unwrap(), bytes_of(&second));
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), requests);
}

#[tokio::test]
async fn a_connection_dropped_after_a_chunk_is_not_retried() {
    let (seen, requests, report, recorded) = middleware_stream(
        [
            vec![role(), text("partial"), Part::Cut],
            vec![role(), text("again"), done()],
        ],
        RetryMiddleware::new(MODEL),
    )
    .await;
    assert!(seen.is_err(), "the client meets the cut itself: {seen:?}");
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), requests);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn insufficient_quota_before_content_is_one_request_and_its_bytes_reach_the_client() {
    let body = vec![role(), insufficient_quota()];
    let (seen, requests, report, recorded) =
        middleware_stream([body.clone()], RetryMiddleware::new(MODEL)).await;
    assert_eq!(seen.unwrap(), bytes_of(&body));
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), requests);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn a_stall_before_content_is_a_timeout_at_commit_timeout_and_its_connection_is_closed() {
    static PATIENT: Policy = Policy::AVAILABILITY.retrying(retry_runtime::Class::Timeout);
    let second = vec![role(), text("late"), done()];
    let server = EventServer::start([vec![role(), Part::Stall], second.clone()]).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(Retry::new(&PATIENT).named("model"))
                .commit_timeout(Duration::from_millis(300)),
        )
        .build();
    let (seen, recorded) = testing::scope(async {
        let response = client.post(server.url()).send().await.unwrap();
        response.text().await.unwrap()
    })
    .await;
    assert_eq!(seen, bytes_of(&second));
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits().len(), 1);
    // The stalled attempt's connection was closed, not held across the wait.
    server.wait_for_closed(1).await;
}
