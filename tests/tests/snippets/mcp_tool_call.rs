use futures_util::StreamExt;
use retry_runtime::http::{CallError, ModelEvents, ResponseExt, is_jsonrpc_response};
use retry_runtime::sse::Event;
use retry_runtime::{GaveUp, Policy, ResumeFrom, Retry};
use serde_json::Value;
use std::pin::pin;

/// Each JSON-RPC message of an MCP `tools/call`'s stream (progress, logs, the response last),
/// `call` POSTed to `url` in session `session` (Streamable HTTP). The POST is sent again only
/// before its stream has an event ID; after that, a cut, or a close before the response, is
/// resumed with a GET from the last event ID, after the server's `retry:`.
pub async fn call_tool(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    call: &Value,
) -> Result<Vec<Value>, GaveUp<CallError>> {
    let in_session = |request: reqwest::RequestBuilder| {
        request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let stream = Retry::new(&Policy::AVAILABILITY)
        .named("tools/call")
        .stream(|_| {
            let post = in_session(http.post(url)).json(call);
            send(post.header("accept", "application/json, text/event-stream"))
        })
        .commit_when(|event: &Event| !event.data().trim().is_empty()) // a priming event is held
        .complete_when(is_jsonrpc_response) // the JSON-RPC response ends the stream
        .resume(|from: ResumeFrom| {
            let get = in_session(http.get(url)).header("accept", "text/event-stream");
            send(match from.last_event_id() {
                Some(id) => get.header("last-event-id", id),
                None => get,
            })
        });
    let (mut stream, mut messages) = (pin!(stream), Vec::new());
    while let Some(event) = stream.next().await {
        messages.extend(event?.json::<Value>().ok()); // a priming event has no data
    }
    Ok(messages)
}

/// A request's event stream, read raw: a priming event (an ID, a `retry:`, no data) is a
/// keep-alive, not a malformed frame.
async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, CallError> {
    Ok(request.send().await?.check_status().await?.events().raw())
}
