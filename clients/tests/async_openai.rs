//! Issue 13: async-openai, a client that retries on its own, through the recipe
//! (`with_http_service` + `RetryLayer` + `ReqwestService`), against a real loopback server
//! that plays provider answers and counts requests: the library's own fault server
//! (`testing::FaultServer`, issue 47), which replaced this file's use of a hand-written one.
//!
//! The clock is tokio's real one: a paused clock auto-advances while the runtime waits on a
//! socket, which would expire the turn mid-request. Waits are recorded by
//! `testing::scope`, not slept (the layer's future runs in the test's own task: async-openai
//! spawns nothing), so the whole file runs in well under a second.

use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequest,
    CreateChatCompletionRequestArgs,
};
use retry_runtime::testing::{self, Act, FaultServer, Recorded, Script};
use retry_runtime::{Policy, Retry, Turn, TurnReport, retry};

const REPLY: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":0,"model":"m",
    "choices":[{"index":0,"message":{"role":"assistant","content":"reply"},"finish_reason":"stop"}]}"#;

/// The recipe, exactly as the README shows it.
fn client(server: &FaultServer) -> async_openai::Client<OpenAIConfig> {
    let config = OpenAIConfig::new()
        .with_api_base(server.url().trim_end_matches('/'))
        .with_api_key("sk-test");
    async_openai::Client::with_config(config).with_http_service(
        tower::ServiceBuilder::new()
            .layer(retry_runtime::tower::RetryLayer::new(
                Retry::new(&Policy::AVAILABILITY).named("model"),
            ))
            .service(async_openai::middleware::ReqwestService::new(
                reqwest::Client::new(),
            )),
    )
}

/// A fault server on 127.0.0.1 that plays `acts`, one a request.
async fn start(acts: impl IntoIterator<Item = Act>) -> FaultServer {
    FaultServer::start(Script::new(acts))
        .await
        .expect("start a fault server")
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

/// One chat completion through the recipe, in a 180 s turn, with waits recorded.
async fn chat(
    script: impl IntoIterator<Item = Act>,
) -> (Result<String, OpenAIError>, u32, TurnReport, Recorded) {
    let server = start(script).await;
    let client = client(&server);
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(async {
            let response = client.chat().create(request()).await?;
            Ok(response.choices[0]
                .message
                .content
                .clone()
                .unwrap_or_default())
        }))
        .await;
    let result = outcome.into_finished().expect("the turn finishes");
    (result, server.requests(), report, recorded)
}

fn api_error(result: Result<String, OpenAIError>) -> async_openai::error::ApiErrorResponse {
    match result {
        Err(OpenAIError::ApiError(error)) => error,
        other => panic!("expected the server's answer as an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_503_outage_is_four_requests_not_sixteen() {
    let (result, requests, report, recorded) =
        chat(Act::status(503).with_body("down").times(20)).await;
    assert_eq!(requests, 4);
    assert_eq!(report.attempts(), requests);
    assert_eq!(report.calls(), 1);
    assert_eq!(
        recorded.waits(),
        [250, 500, 1000].map(Duration::from_millis)
    );
    // The last response, handed back whole: the client reports it as it always does.
    let error = api_error(result);
    assert_eq!(error.status_code, 503);
    assert_eq!(error.api_error.message, "down");
}

#[tokio::test]
async fn a_one_day_retry_after_is_one_request_and_no_wait() {
    let (result, requests, report, recorded) =
        chat([Act::status(503).with_header("retry-after", "86400")]).await;
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), 1);
    assert!(recorded.waits().is_empty());
    assert_eq!(api_error(result).status_code, 503);
}

#[tokio::test]
async fn insufficient_quota_is_one_request_and_its_body_reaches_the_client() {
    let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let (result, requests, report, recorded) = chat([Act::status(429).with_body(body)]).await;
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), 1);
    assert!(recorded.waits().is_empty());
    let error = api_error(result);
    assert_eq!(error.status_code, 429);
    assert_eq!(error.api_error.code.as_deref(), Some("insufficient_quota"));
    assert_eq!(error.api_error.message, "You exceeded your current quota");
}

#[tokio::test]
async fn x_should_retry_false_is_one_request() {
    let (result, requests, report, _) =
        chat([Act::status(503).with_header("x-should-retry", "false")]).await;
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), 1);
    assert_eq!(api_error(result).status_code, 503);
}

#[tokio::test]
async fn a_503_asking_for_two_seconds_waits_at_least_two() {
    let (result, requests, report, recorded) = chat([
        Act::status(503).with_header("retry-after", "2"),
        Act::ok(REPLY),
    ])
    .await;
    assert_eq!(result.unwrap(), "reply");
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), 2);
    assert_eq!(recorded.waits().len(), 1);
    assert!(
        recorded.waits()[0] >= Duration::from_secs(2),
        "{:?}",
        recorded.waits()
    );
    assert!(report.waiting() >= Duration::from_secs(2));
}

#[tokio::test]
async fn a_gateways_plain_text_429_is_retried() {
    let (result, requests, report, recorded) = chat([
        Act::status(429)
            .with_header("content-type", "text/plain")
            .with_body("Too Many Requests"),
        Act::ok(REPLY),
    ])
    .await;
    assert_eq!(result.unwrap(), "reply");
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), 2);
    assert_eq!(recorded.waits().len(), 1);
}

#[tokio::test]
async fn a_529_overloaded_error_is_retried() {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let (result, requests, report, _) =
        chat([Act::status(529).with_body(body), Act::ok(REPLY)]).await;
    assert_eq!(result.unwrap(), "reply");
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), 2);
}

/// Issue 47: an Anthropic-style overload, then the answer, scripted in one line each; the
/// fault server counts what it was asked.
#[tokio::test]
async fn an_overload_then_an_answer_is_two_requests_through_the_layer() {
    let (result, requests, report, recorded) =
        chat([Act::anthropic_overloaded(), Act::ok(REPLY)]).await;
    assert_eq!(result.unwrap(), "reply");
    assert_eq!(requests, 2);
    assert_eq!(report.attempts(), 2);
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
}

#[tokio::test]
async fn a_success_is_one_request() {
    let (result, requests, report, recorded) = chat([Act::ok(REPLY)]).await;
    assert_eq!(result.unwrap(), "reply");
    assert_eq!(requests, 1);
    assert_eq!(report.attempts(), 1);
    assert!(recorded.waits().is_empty());
}

/// The annotated function around the layered client: its own ladder stops when the layer's
/// gives up on the outage (the nesting rule), so the far side sees 4 requests, not 16.
#[derive(Debug)]
struct ModelError(OpenAIError);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl retry_runtime::Classify for ModelError {
    fn classify(&self) -> retry_runtime::Class {
        match &self.0 {
            OpenAIError::ApiError(error) if error.status_code.is_server_error() => {
                retry_runtime::Class::Unavailable { retry_after: None }
            }
            OpenAIError::Reqwest(_) => retry_runtime::Class::Transport,
            _ => retry_runtime::Class::Definitive,
        }
    }
}

#[retry(policy = "availability")]
async fn complete(client: &async_openai::Client<OpenAIConfig>) -> Result<String, ModelError> {
    let response = client.chat().create(request()).await.map_err(ModelError)?;
    Ok(response.choices[0]
        .message
        .content
        .clone()
        .unwrap_or_default())
}

#[tokio::test]
async fn an_annotated_function_around_the_layered_client_is_one_layer() {
    let server = start(Act::status(503).times(20)).await;
    let client = client(&server);
    let (result, recorded) = testing::scope(complete(&client)).await;
    assert!(result.is_err());
    assert_eq!(server.requests(), 4, "4 requests, not 16");
    assert_eq!(recorded.waits().len(), 3);
}

/// The recipe's client spawns: the layer's future is `Send`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recipe_spawns_on_a_multi_thread_runtime() {
    let server = start([Act::status(502), Act::ok(REPLY)]).await;
    let client = client(&server);
    let spawned = tokio::spawn(async move {
        testing::scope(async move { client.chat().create(request()).await }).await
    });
    let (response, recorded) = spawned.await.unwrap();
    assert_eq!(
        response.unwrap().choices[0].message.content.as_deref(),
        Some("reply")
    );
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits().len(), 1);
}

/// Fallback from one base URL to another: the recipe's layer sent `across` two upstreams,
/// each attempt's request rewritten to its upstream's server.
mod across {
    use std::collections::HashMap;
    use std::sync::OnceLock;

    use super::*;
    use async_openai::middleware::HttpRequestFactory;
    use retry_runtime::http::Across;
    use retry_runtime::{Upstream, UpstreamPaused, Upstreams};

    static PRIMARY: Upstream = Upstream::new("primary");
    static SECONDARY: Upstream = Upstream::new("secondary");
    static BASES: Upstreams = Upstreams::new(&[&PRIMARY, &SECONDARY]);

    /// Each upstream's server, by name: the rewrite is a plain `fn`.
    static SERVERS: OnceLock<HashMap<&'static str, reqwest::Url>> = OnceLock::new();

    /// async-openai's request is a factory that rebuilds it for each attempt: the rewrite
    /// wraps it, pointing what it builds at the upstream's server.
    fn to_server(factory: &mut HttpRequestFactory, to: &'static Upstream) {
        let inner = factory.clone();
        *factory = HttpRequestFactory::new(move || {
            let inner = inner.clone();
            async move {
                let mut request = inner.build().await?;
                let base = &SERVERS.get().expect("the servers are started")[to.name()];
                let url = request.url_mut();
                let _ = url.set_host(base.host_str());
                let _ = url.set_port(base.port());
                Ok(request)
            }
        });
    }

    /// async-openai's error has no `From<UpstreamPaused>`: it holds one as a boxed error.
    fn held(paused: UpstreamPaused) -> OpenAIError {
        OpenAIError::from(tower::BoxError::from(paused))
    }

    #[tokio::test]
    async fn an_outage_of_the_primary_base_url_moves_the_call_to_the_secondary_at_once() {
        let primary = start(Act::status(503).with_body("down").times(20)).await;
        let secondary = start([Act::ok(REPLY)]).await;
        let servers = HashMap::from([
            ("primary", primary.url().parse().unwrap()),
            ("secondary", secondary.url().parse().unwrap()),
        ]);
        SERVERS.set(servers).unwrap();
        // The client is configured for the primary; the layer moves it.
        let config = OpenAIConfig::new()
            .with_api_base(primary.url().trim_end_matches('/'))
            .with_api_key("sk-test");
        let client = async_openai::Client::with_config(config).with_http_service(
            tower::ServiceBuilder::new()
                .layer(
                    retry_runtime::tower::RetryLayer::new(
                        Retry::new(&Policy::AVAILABILITY).named("model"),
                    )
                    .upstream_by(Across::new(&BASES, to_server, held)),
                )
                .service(async_openai::middleware::ReqwestService::new(
                    reqwest::Client::new(),
                )),
        );
        let ((outcome, report), recorded) =
            testing::scope(Turn::new(Duration::from_secs(180)).run(async {
                let response = client.chat().create(request()).await?;
                Ok::<_, OpenAIError>(response.choices[0].message.content.clone())
            }))
            .await;
        let reply = outcome.into_finished().unwrap().unwrap();
        assert_eq!(reply.as_deref(), Some("reply"));
        assert_eq!((primary.requests(), secondary.requests()), (1, 1));
        assert_eq!((report.attempts(), report.moves()), (2, 1), "{report}");
        assert!(recorded.waits().is_empty(), "a move waits nothing");
        PRIMARY.reset();
    }
}
