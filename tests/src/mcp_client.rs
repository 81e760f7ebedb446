//! A minimal MCP client over the Streamable HTTP transport whose `tools/call` stream is
//! [`RetryStream::resume`](retry_runtime::RetryStream::resume): a stream cut, or closed before
//! its JSON-RPC response, continues with a `GET` carrying `Last-Event-ID` after the server's
//! `retry:` (SEP-1699), and the `POST` is never sent again. `src/bin/mcp_client.rs` runs it
//! for the MCP conformance suite; `tests/mcp_peer.rs` runs it against the TypeScript SDK's
//! server.
//!
//! ```no_run
//! use retry_tests::mcp_client::McpClient;
//!
//! # async fn example() {
//! let client = McpClient::connect("http://127.0.0.1:3000/mcp").await.unwrap();
//! let called = client.call_tool("count", serde_json::json!({"to": 3})).await.unwrap();
//! assert_eq!(called.progress, [1.0, 2.0, 3.0]);
//! # }
//! ```

use std::pin::pin;

use futures_util::StreamExt;
use retry_runtime::http::{HttpError, ModelEvents, ResponseExt, StreamError};
use retry_runtime::sse::Event;
use retry_runtime::{Classify, EndedEarly, GaveUp, Policy, ResumeFrom, Retry, TimedOut};
use serde_json::{Value, json};

/// The protocol version the client asks for: the first whose streams start with a priming
/// event, and whose clients must respect `retry:`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Why a request or its stream failed, classified by the library's own table.
#[derive(Debug, thiserror::Error, Classify)]
pub enum McpError {
    /// The server answered with a status that is not a success.
    #[error(transparent)]
    #[classify(from)]
    Http(#[from] HttpError),
    /// No answer, or a body cut mid-read.
    #[error(transparent)]
    #[classify(from)]
    Request(#[from] reqwest::Error),
    /// The event stream failed after its head.
    #[error(transparent)]
    #[classify(from)]
    Stream(#[from] StreamError),
    /// The stream closed before its response (a graceful close), or a resume brought nothing.
    #[error(transparent)]
    #[classify(from)]
    Ended(#[from] EndedEarly),
    /// A stall past the idle timeout.
    #[error(transparent)]
    #[classify(from)]
    TimedOut(#[from] TimedOut),
    /// The answer was not the JSON-RPC the protocol says.
    #[error("the server's answer is not JSON-RPC: {0}")]
    #[classify(invalid_output)]
    Protocol(String),
}

/// What a tool call brought: the progress values in the order they arrived, and the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Called {
    /// Each `notifications/progress`'s `progress`, in order.
    pub progress: Vec<f64>,
    /// The JSON-RPC response's `result`.
    pub result: Value,
}

/// A session with one MCP server.
#[derive(Debug, Clone)]
pub struct McpClient {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    protocol: String,
}

/// A JSON-RPC response (it has an `id` and a `result` or an `error`): the stream is complete.
fn is_response(event: &Event) -> bool {
    serde_json::from_str::<Value>(event.data()).is_ok_and(|message| {
        message.get("id").is_some()
            && (message.get("result").is_some() || message.get("error").is_some())
    })
}

/// An event with data: a priming event (an id, maybe a `retry:`, empty data) is held.
fn has_data(event: &Event) -> bool {
    !event.data().trim().is_empty()
}

impl McpClient {
    /// Initialize a session with the server at `url`: `initialize`, then
    /// `notifications/initialized`.
    pub async fn connect(url: &str) -> Result<McpClient, McpError> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(McpError::Request)?;
        let mut client = McpClient {
            http,
            url: url.to_owned(),
            session: None,
            protocol: PROTOCOL_VERSION.to_owned(),
        };
        let initialize = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "retry-runtime-mcp-client", "version": "0.1.0"},
            },
        });
        let response = client
            .post(&initialize)
            .send()
            .await?
            .check_status()
            .await?;
        client.session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let answer = read_answer(response).await?;
        if let Some(version) = answer["result"]["protocolVersion"].as_str() {
            version.clone_into(&mut client.protocol);
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        client
            .post(&initialized)
            .send()
            .await?
            .check_status()
            .await?;
        Ok(client)
    }

    /// The name of the server's first tool (`tools/list`).
    pub async fn first_tool(&self) -> Result<String, McpError> {
        let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
        let response = self.post(&list).send().await?.check_status().await?;
        let answer = read_answer(response).await?;
        answer["result"]["tools"][0]["name"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| McpError::Protocol(format!("no tool in {answer}")))
    }

    /// A POST of `message`, with the session's headers.
    fn post(&self, message: &Value) -> reqwest::RequestBuilder {
        self.with_session(self.http.post(&self.url))
            .header("accept", "application/json, text/event-stream")
            .json(message)
    }

    /// The GET that resumes a stream from `from`.
    fn resume_get(&self, from: &ResumeFrom) -> reqwest::RequestBuilder {
        let request = self
            .with_session(self.http.get(&self.url))
            .header("accept", "text/event-stream");
        match from.last_event_id() {
            Some(id) => request.header("last-event-id", id),
            None => request,
        }
    }

    fn with_session(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = request.header("mcp-protocol-version", &self.protocol);
        match &self.session {
            Some(session) => request.header("mcp-session-id", session),
            None => request,
        }
    }

    /// Call tool `name` with `arguments`, asking for progress: the call's stream is retried
    /// before its first event, and resumed from its last event ID after, never sent again.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Called, GaveUp<McpError>> {
        let call = json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": "call"}},
        });
        let stream = Retry::new(&Policy::AVAILABILITY)
            .named("tools/call")
            .stream(|_| send(self.post(&call)))
            .commit_when(has_data)
            .complete_when(is_response)
            .resume(|from| send(self.resume_get(&from)));
        let mut events = pin!(stream);
        let mut called = Called {
            progress: Vec::new(),
            result: Value::Null,
        };
        while let Some(event) = events.next().await {
            let event = event?;
            let Ok(message) = serde_json::from_str::<Value>(event.data()) else {
                continue;
            };
            if message["method"] == "notifications/progress" {
                called
                    .progress
                    .extend(message["params"]["progress"].as_f64());
            } else if message.get("result").is_some() {
                called.result = message["result"].clone();
            }
        }
        Ok(called)
    }
}

/// The POST's event stream, read as raw events (a priming event is a keep-alive).
async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, McpError> {
    Ok(request.send().await?.check_status().await?.events().raw())
}

/// A response answered as JSON, or as an event stream whose first response it is.
async fn read_answer(response: reqwest::Response) -> Result<Value, McpError> {
    let is_stream = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/event-stream"));
    if !is_stream {
        return Ok(response.json().await?);
    }
    let mut events = response.events().raw();
    while let Some(event) = events.next().await {
        let event = event?;
        if is_response(&event) {
            return serde_json::from_str(event.data())
                .map_err(|error| McpError::Protocol(error.to_string()));
        }
    }
    Err(McpError::Protocol(
        "the initialize stream ended without a response".to_owned(),
    ))
}
