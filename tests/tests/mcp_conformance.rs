//! The MCP conformance suite's client scenario `sse-retry` (SEP-1699), run against the
//! repository's minimal MCP client (`src/bin/mcp_client.rs`, its `tools/call` stream resumed by
//! `RetryStream::resume`): the client reconnects with a `GET` after the server closes the
//! stream gracefully, waits the server's `retry:` (500 ms; the suite accepts 450 to 700), and
//! sends `Last-Event-ID`.
//!
//! The suite is the npm package `@modelcontextprotocol/conformance` 0.1.12 (Node 20), installed
//! by `npm ci --prefix tests/mcp`; without it this test says so and passes only the loopback
//! half, unless `MCP_PEERS=required` (as `.ci/run` sets) makes it fail. The loopback half
//! always runs: a server of this file's own plays the scenario's script, and measures the same
//! three things.

use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use retry_tests::mcp_peer::{REQUIRED_VAR, peers_dir};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const CLIENT: &str = env!("CARGO_BIN_EXE_mcp_client");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suites_sse_retry_scenario_passes_all_three_checks() {
    let suite = peers_dir().join("node_modules/.bin/conformance");
    if !suite.exists() {
        let why = "the MCP conformance suite is not installed: run `npm ci --prefix tests/mcp`";
        assert!(
            std::env::var(REQUIRED_VAR).as_deref() != Ok("required"),
            "{why}"
        );
        eprintln!("{why}; only the loopback script ran");
        return;
    }
    let output = tokio::process::Command::new(&suite)
        .args(["client", "--scenario", "sse-retry", "--command", CLIENT])
        .current_dir(peers_dir())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run the conformance suite");
    // The suite reports on stderr.
    let stdout = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    let checks = [
        "client-sse-graceful-reconnect",
        "client-sse-retry-timing",
        "client-sse-last-event-id",
    ];
    for check in checks {
        let line = stdout
            .lines()
            .find(|line| line.contains(check))
            .unwrap_or_else(|| panic!("no {check} in the suite's output:\n{stdout}"));
        assert!(line.contains("SUCCESS"), "{line}\n{stdout}");
    }
    assert!(stdout.contains("Passed: 3/3"), "{stdout}");
    assert!(output.status.success(), "{stdout}");
}

/// What the scripted server saw.
#[derive(Debug, Default)]
struct Seen {
    closed_at: Option<Instant>,
    gets: Vec<(Instant, Option<String>)>,
    tool_calls: u32,
}

type Shared = Arc<Mutex<Seen>>;

fn sse(body: Body) -> Response {
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    response
        .headers_mut()
        .insert("mcp-session-id", "session-1".parse().unwrap());
    response
}

fn json_answer(message: &Value) -> Response {
    let mut response = Response::new(Body::from(message.to_string()));
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    response
        .headers_mut()
        .insert("mcp-session-id", "session-1".parse().unwrap());
    response
}

/// The scenario's script: JSON answers to `initialize` and `tools/list`, a `tools/call` stream
/// of one priming event (`id: event-1`, `retry: 500`) closed 50 ms later, and a GET stream
/// with a priming event and the tool's response, held open.
async fn answer(
    State(seen): State<Shared>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::GET {
        let last_event_id = headers
            .get("last-event-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.gets.push((Instant::now(), last_event_id));
        let result = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [
            {"type": "text", "text": "Reconnection test completed successfully"}]}});
        let events = format!(
            "id: event-2\nretry: 500\ndata: \n\nevent: message\nid: event-3\ndata: {result}\n\n"
        );
        let (sender, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        tokio::spawn(async move {
            let _ = sender.send(Ok(Bytes::from(events))).await;
            // Held open, as the suite's server holds it, until the client goes.
            sender.closed().await;
        });
        return sse(Body::from_stream(tokio_stream(receiver)));
    }
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    match message["method"].as_str() {
        Some("initialize") => json_answer(&json!({"jsonrpc": "2.0", "id": message["id"],
            "result": {"protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                "serverInfo": {"name": "sse-retry-script", "version": "1.0.0"}}})),
        Some("tools/list") => json_answer(&json!({"jsonrpc": "2.0", "id": message["id"],
            "result": {"tools": [{"name": "test_reconnection", "inputSchema": {"type": "object"}}]}})),
        Some("tools/call") => {
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .tool_calls += 1;
            let (sender, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(1);
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let _ = sender
                    .send(Ok(Bytes::from("id: event-1\nretry: 500\ndata: \n\n")))
                    .await;
                // backoff-lint: allow(the scripted server's own pause before it closes its stream)
                tokio::time::sleep(Duration::from_millis(50)).await;
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .closed_at = Some(Instant::now());
                drop(sender);
            });
            sse(Body::from_stream(tokio_stream(receiver)))
        }
        _ => {
            let mut accepted = Response::new(Body::empty());
            *accepted.status_mut() = StatusCode::ACCEPTED;
            accepted
        }
    }
}

/// An mpsc receiver as a body stream.
fn tokio_stream(
    mut receiver: mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_plays_the_sse_retry_script_reconnecting_after_the_retry_field_with_the_last_id()
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen: Shared = Arc::default();
    let router = Router::new().fallback(answer).with_state(Arc::clone(&seen));
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let status = tokio::process::Command::new(CLIENT)
        .arg(&url)
        .stdin(Stdio::null())
        .status()
        .await
        .expect("run the MCP client");
    server.abort();
    assert!(
        status.success(),
        "the client exits 0 once it has the result"
    );
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
    assert_eq!(
        seen.tool_calls, 1,
        "the tools/call POST is never sent again"
    );
    assert_eq!(seen.gets.len(), 1, "one GET reconnects: {:?}", seen.gets);
    let (reconnected, last_event_id) = &seen.gets[0];
    assert_eq!(last_event_id.as_deref(), Some("event-1"));
    let delay = reconnected.duration_since(seen.closed_at.expect("the stream was closed"));
    // The suite's window for `retry: 500`.
    assert!(
        (Duration::from_millis(450)..=Duration::from_millis(700)).contains(&delay),
        "reconnected after {delay:?}"
    );
}
