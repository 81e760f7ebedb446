//! The real MCP peers work: the TypeScript SDK's server (`tests/mcp/sdk-server.mjs`) behind
//! the cutting proxy, driven by plain `reqwest` (no retry library), resumes a cut `tools/call`
//! stream with `GET` + `Last-Event-ID` (SEP-1699), and runs the tool once. The proxy alone
//! is checked against a scripted SSE server, so its cut is proven without Node too.
//!
//! Run the SDK test with `npm ci --prefix tests/mcp` done first (it is skipped otherwise, or
//! fails with `MCP_PEERS=required`): `MCP_PEERS=required cargo test -p retry-tests --test mcp_peer`.

use std::time::Duration;

use retry_tests::cutting_proxy::CuttingProxy;
use retry_tests::event_server::{EventServer, Part};
use retry_tests::mcp_peer::SdkServer;
use serde_json::{Value, json};

/// The protocol version sent: the SDK's latest, the first whose streams start with a priming
/// event (an id and empty data).
const PROTOCOL_VERSION: &str = "2025-11-25";

/// One SSE event: its `id`, if it has one, and its data lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Event {
    id: Option<String>,
    data: String,
}

/// Reads the events of a body as its chunks arrive.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    fn new(response: reqwest::Response) -> Events {
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next complete event; `Ok(None)` when the body ends, `Err` when it is cut.
    async fn next(&mut self) -> reqwest::Result<Option<Event>> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event {
                    id: None,
                    data: String::new(),
                };
                let mut data = Vec::new();
                for line in block.lines() {
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    match field {
                        "id" => event.id = Some(value.to_owned()),
                        "data" => data.push(value),
                        _ => {}
                    }
                }
                event.data = data.join("\n");
                // A block of comments only (`: keepalive`) is no event.
                if event.id.is_some() || !data.is_empty() {
                    return Ok(Some(event));
                }
                continue;
            }
            let Some(chunk) = self.response.chunk().await? else {
                return Ok(None);
            };
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .retry(reqwest::retry::never())
        .build()
        .expect("build a reqwest client")
}

fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: &Value,
) -> reqwest::RequestBuilder {
    let request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(message);
    match session {
        Some(session) => request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", PROTOCOL_VERSION),
        None => request,
    }
}

/// The progress of a `notifications/progress`, if the message is one.
fn progress(message: &Value) -> Option<u64> {
    (message["method"] == "notifications/progress")
        .then(|| message["params"]["progress"].as_u64())?
}

/// Initialize a session: its `mcp-session-id`.
async fn initialize(client: &reqwest::Client, url: &str) -> String {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "retry-tests", "version": "0.0.0" }
        }
    });
    let response = post(client, url, None, &initialize).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut events = Events::new(response);
    let mut answered = false;
    while let Some(event) = events.next().await.unwrap() {
        if let Ok(message) = serde_json::from_str::<Value>(&event.data) {
            answered |= message["id"] == 1 && message["result"]["protocolVersion"].is_string();
        }
    }
    assert!(answered, "initialize is answered");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let response = post(client, url, Some(&session), &initialized)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_tool_call_resumes_from_its_last_event_id_on_the_sdk_server() {
    let Some(server) = SdkServer::start().await else {
        return;
    };
    let proxy = CuttingProxy::start(&server.origin(), 4).await;
    let url = proxy.url();
    let client = client();
    tokio::time::timeout(Duration::from_secs(30), async {
        let session = initialize(&client, &url).await;

        let call = json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {
                "name": "count",
                "arguments": { "to": 10, "delay_ms": 20 },
                "_meta": { "progressToken": "count-1" }
            }
        });
        let response = post(&client, &url, Some(&session), &call)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut posted = Vec::new();
        let mut events = Events::new(response);
        let cut = loop {
            match events.next().await {
                Ok(Some(event)) => posted.push(event),
                Ok(None) => break None,
                Err(error) => break Some(error),
            }
        };
        assert!(
            cut.is_some(),
            "the proxy cuts the call's stream: {posted:?}"
        );
        // The priming event (an id, empty data), then progress 1 to 3.
        assert_eq!(posted.len(), 4, "{posted:?}");
        assert!(
            posted[0].id.is_some() && posted[0].data.is_empty(),
            "{posted:?}"
        );
        assert!(posted.iter().all(|event| event.id.is_some()), "{posted:?}");
        let last_event_id = posted.last().unwrap().id.clone().unwrap();

        let response = client
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("last-event-id", &last_event_id)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let mut resumed = Vec::new();
        let mut events = Events::new(response);
        // The replay stream may stay open past the result: read up to it.
        let result = loop {
            let event = events
                .next()
                .await
                .unwrap()
                .expect("the result before the end");
            let message: Value = serde_json::from_str(&event.data).unwrap();
            resumed.push(event);
            if message["id"] == 2 {
                break message;
            }
        };

        let progress: Vec<u64> = posted
            .iter()
            .chain(&resumed)
            .filter_map(|event| serde_json::from_str(&event.data).ok())
            .filter_map(|message| progress(&message))
            .collect();
        assert_eq!(progress, (1..=10).collect::<Vec<_>>());
        assert_eq!(
            result["result"]["content"][0]["text"], "counted to 10",
            "{result}"
        );
        assert_eq!(proxy.posts("tools/call"), 1);
        assert_eq!(proxy.gets(), 1);
        assert_eq!(proxy.last_event_ids(), [last_event_id]);
        assert_eq!(proxy.cuts(), 1);
        assert_eq!(server.runs().await, 1);
    })
    .await
    .expect("the exchange ends within 30 s");
}

/// `cut_after = 0` forwards the head and cuts the body at once; only the first tools/call
/// stream is cut; everything passes through whole otherwise, and is recorded.
#[tokio::test]
async fn the_proxy_cuts_the_first_tool_call_stream_only() {
    let body = || vec![Part::Bytes("id: 1\ndata: {}\n\n".to_owned())];
    let upstream = EventServer::start([body(), body(), body()]).await;
    let origin = upstream.url().trim_end_matches("/v1/messages").to_owned();
    let proxy = CuttingProxy::start(&origin, 0).await;
    let client = client();
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {} });

    let cut = post(&client, &proxy.url(), Some("s"), &call)
        .send()
        .await
        .unwrap();
    assert_eq!(cut.status(), 200);
    assert!(
        cut.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(cut.bytes().await.is_err(), "the body is cut at once");

    let whole = post(&client, &proxy.url(), Some("s"), &call)
        .send()
        .await
        .unwrap();
    assert_eq!(whole.text().await.unwrap(), "id: 1\ndata: {}\n\n");
    let get = client
        .get(proxy.url())
        .header("last-event-id", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(get.text().await.unwrap(), "id: 1\ndata: {}\n\n");

    assert_eq!(proxy.posts("tools/call"), 2);
    assert_eq!(proxy.gets(), 1);
    assert_eq!(proxy.last_event_ids(), ["1"]);
    assert_eq!(proxy.cuts(), 1);
    assert_eq!(upstream.requests(), 3);
}
