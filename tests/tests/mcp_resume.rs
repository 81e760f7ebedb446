//! The repository's MCP client (`retry_tests::mcp_client`, its `tools/call` stream resumed by
//! `RetryStream::resume`) against the official MCP TypeScript SDK's server with its event
//! store, behind a proxy that cuts the first `tools/call` stream after some of its events.
//! Whatever the cut, the caller gets every progress notification once and in order, and the
//! result; the server gets one `tools/call` POST, and runs the tool once.
//!
//! Needs `npm ci --prefix tests/mcp`; skipped without it, failed with `MCP_PEERS=required`.

use retry_tests::cutting_proxy::CuttingProxy;
use retry_tests::mcp_client::McpClient;
use retry_tests::mcp_peer::SdkServer;
use serde_json::json;

/// The events the SDK's `tools/call` stream carries for `count` to 10: a priming event, ten
/// progress notifications and the result.
const EVENTS: usize = 12;

/// Call `count` to 10 through a proxy that cuts the call's stream after `cut_after` events.
async fn call_cut_after(cut_after: usize) {
    let Some(server) = SdkServer::start().await else {
        return;
    };
    let proxy = CuttingProxy::start(&server.origin(), cut_after).await;
    let client = McpClient::connect(&proxy.url()).await.expect("initialize");
    let called = client
        .call_tool("count", json!({"to": 10, "delay_ms": 20}))
        .await
        .expect("the call completes");
    let expected: Vec<f64> = (1..=10).map(f64::from).collect();
    assert_eq!(called.progress, expected, "each progress once, in order");
    assert_eq!(called.result["content"][0]["text"], "counted to 10");
    assert_eq!(proxy.posts("tools/call"), 1, "the call is never sent again");
    assert_eq!(server.runs().await, 1, "the tool ran once");
    let resumed = usize::from(cut_after < EVENTS);
    assert_eq!(proxy.gets(), resumed, "{:?}", proxy.exchanges());
    assert_eq!(proxy.last_event_ids().len(), resumed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_after_its_priming_event_resumes_and_loses_nothing() {
    call_cut_after(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_after_four_events_resumes_after_the_third_progress_and_repeats_none() {
    call_cut_after(4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_after_all_its_progress_resumes_for_the_result() {
    call_cut_after(EVENTS - 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_stream_is_complete_before_the_cut_makes_no_get() {
    call_cut_after(EVENTS).await;
}
