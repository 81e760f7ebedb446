//! A JSON-RPC error response on an MCP request's stream, read through `ModelEvents`, against a
//! real SSE server on 127.0.0.1: it is the server's answer to the request (`Definitive`), so
//! the `tools/call` is never sent again, under any policy; a provider's own error event is
//! still classified as before. (Issue 56, item 3.)

use retry_runtime::http::{CallError, ModelEvents, ResponseExt, is_jsonrpc_response};
use retry_runtime::sse::Event;
use retry_runtime::{Class, Classify, Policy, Retry, testing};
use retry_tests::event_server::{EventServer, Part, client, resume_get as get};

const UNKNOWN_TOOL: &str =
    r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool: cuont"}}"#;

/// The stream as MCP's Streamable HTTP sends it: raw events, a priming event a keep-alive.
async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, CallError> {
    Ok(request.send().await?.check_status().await?.events().raw())
}

/// A `tools/call` whose stream is a priming event, then the server's JSON-RPC error response.
/// Under `transient`, which retries a server error before the commit point, the POST is sent
/// once, and the call ends with that answer, classed `Definitive`.
#[tokio::test]
async fn a_jsonrpc_error_response_is_an_answer_and_the_tools_call_is_not_sent_again() {
    let body = || {
        vec![
            Part::Bytes("id: prime-1\nretry: 20\ndata: \n\n".into()),
            Part::Bytes(format!("id: error-2\ndata: {UNKNOWN_TOOL}\n\n")),
            Part::Stall,
        ]
    };
    let server = EventServer::start([body(), body(), body(), body()]).await;
    let http = client();
    let url = server.url();
    let stream = Retry::new(&Policy::TRANSIENT)
        .named("tools/call")
        .stream(|_| send(http.post(&url)))
        .commit_when(|event: &Event| !event.data().trim().is_empty())
        .complete_when(is_jsonrpc_response)
        .resume(|from| send(get(&http, &url, &from)));
    let (delivered, _) = testing::scope(testing::collect(stream)).await;
    assert_eq!(server.count("POST"), 1, "{:?}", server.seen());
    assert_eq!(server.count("GET"), 0);
    let failed = delivered
        .into_iter()
        .find_map(Result::err)
        .expect("the call ends with the server's answer");
    assert_eq!(failed.classify(), Class::Definitive, "{failed:?}");
    assert_eq!(failed.attempts(), 1);
    let CallError::Stream(error) = failed.error() else {
        panic!("a stream error, not {failed:?}")
    };
    let answer = error.http_error().expect("the answer, kept");
    assert_eq!(answer.rule().name(), "jsonrpc_error");
    assert_eq!(answer.body(), UNKNOWN_TOOL);
}
