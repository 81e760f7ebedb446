//! `http::is_jsonrpc_response` as a resumable MCP stream's `complete_when`, against a real SSE
//! server on 127.0.0.1: a `notifications/message` at level `"error"` is a notification like
//! any other, and the stream goes on to its JSON-RPC response. (Issue 42.)

use std::time::Duration;

use retry_runtime::http::{CallError, ModelEvents, ResponseExt, is_jsonrpc_response};
use retry_runtime::sse::Event;
use retry_runtime::{Policy, Retry, testing};
use retry_tests::event_server::{EventServer, Part, client, resume_get as get};

const LOG: &str = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":"count","data":"one step failed, retrying it"}}"#;
const RESULT: &str =
    r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"counted to 3"}]}}"#;

/// The stream as MCP's Streamable HTTP sends it: raw events, a priming event a keep-alive.
async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, CallError> {
    Ok(request.send().await?.check_status().await?.events().raw())
}

/// The POST's stream: a priming event, an error-level log notification, then a clean close
/// before the response, which the server sends on the GET that resumes after the notification
/// (keeping that stream open, so only `complete_when` ends it).
#[tokio::test]
async fn an_error_level_log_notification_does_not_complete_the_call_and_its_result_arrives() {
    let server = EventServer::start([
        vec![
            Part::Bytes("id: prime-1\nretry: 20\ndata: \n\n".into()),
            Part::Bytes(format!("id: log-2\ndata: {LOG}\n\n")),
        ],
        vec![
            Part::Bytes(format!("id: result-3\ndata: {RESULT}\n\n")),
            Part::Stall,
        ],
    ])
    .await;
    let http = client();
    let url = server.url();
    let stream = Retry::new(&Policy::AVAILABILITY)
        .named("tools/call")
        .stream(|_| send(http.post(&url)))
        .commit_when(|event: &Event| !event.data().trim().is_empty())
        .complete_when(is_jsonrpc_response)
        .resume(|from| send(get(&http, &url, &from)));
    let (delivered, recorded) = testing::scope(testing::collect(stream)).await;
    let delivered: Vec<String> = delivered
        .into_iter()
        .map(|item| item.expect("no failure").data().to_owned())
        .collect();
    assert_eq!(delivered, ["", LOG, RESULT], "the result, after the log");
    assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
    assert_eq!(server.seen()[1].last_event_id.as_deref(), Some("log-2"));
    assert!(recorded.waits()[0] >= Duration::from_millis(20));
}
