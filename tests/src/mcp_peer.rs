//! A real MCP server to test against: `tests/mcp/sdk-server.mjs`, on the official TypeScript
//! SDK (Streamable HTTP, stateful, with an event store, so its SSE events carry ids and a
//! `GET` with `Last-Event-ID` replays the events after one).
//!
//! [`SdkServer::start`] runs it with `node` when `tests/mcp/node_modules` holds the SDK
//! (`npm ci --prefix tests/mcp`). When it does not, the test is skipped: `start` says so on
//! stderr and returns `None`, unless `MCP_PEERS=required` is set, when it panics instead.
//!
//! ```no_run
//! use retry_tests::mcp_peer::SdkServer;
//!
//! # async fn example() {
//! let Some(server) = SdkServer::start().await else {
//!     return; // Not installed: the reason is on stderr.
//! };
//! let endpoint = server.url(); // http://127.0.0.1:PORT/mcp
//! # let _ = endpoint;
//! // ... initialize, call the `count` tool ...
//! assert_eq!(server.runs().await, 1);
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The environment variable that makes a missing install a failure: `MCP_PEERS=required`.
pub const REQUIRED_VAR: &str = "MCP_PEERS";

/// The directory of the Node peers: `tests/mcp`.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp")
}

/// Whether the SDK is installed under `tests/mcp/node_modules`.
pub fn installed() -> bool {
    peers_dir()
        .join("node_modules/@modelcontextprotocol/sdk")
        .is_dir()
}

/// The SDK's MCP server, run by `node`. It is killed when dropped.
///
/// It serves `POST`, `GET` and `DELETE` on `/mcp`, and `GET /runs`: `{"runs": N}`, how many
/// times its one tool, `count` `{ to = 10, delay_ms = 20 }`, has run. `count` sends `to`
/// progress notifications (progress 1..=`to`, for the call's `_meta.progressToken`), each
/// after a wait of `delay_ms`, on the call's own event stream, then answers
/// `counted to <to>`.
#[derive(Debug)]
pub struct SdkServer {
    port: u16,
    child: Child,
    http: reqwest::Client,
}

impl SdkServer {
    /// Start the server and wait until it listens. `None` if the SDK is not installed and
    /// `MCP_PEERS` is not `required` (the reason is printed on stderr).
    ///
    /// # Panics
    ///
    /// If the SDK is not installed and `MCP_PEERS=required`, or `node` fails to start it.
    pub async fn start() -> Option<SdkServer> {
        if !installed() {
            let dir = peers_dir();
            let why = format!(
                "the MCP SDK is not installed in {}: run `npm ci --prefix tests/mcp`",
                dir.join("node_modules").display()
            );
            assert!(
                std::env::var(REQUIRED_VAR).as_deref() != Ok("required"),
                "{REQUIRED_VAR}=required, but {why}"
            );
            eprintln!(
                "the MCP peer test was not run: {why} (set {REQUIRED_VAR}=required to fail instead)"
            );
            return None;
        }
        let script = peers_dir().join("sdk-server.mjs");
        let mut child = Command::new("node")
            .arg(&script)
            // It exits when its stdin closes: not left running if this process dies unwinding.
            .arg("--exit-on-stdin-close")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("run `node {}`: {error}", script.display()));
        let stdout = child.stdout.take().expect("the server's stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the SDK server says `listening <port>` within 30 s")
            .expect("read the SDK server's stdout")
            .expect("the SDK server says `listening <port>` before it exits");
        let port = line
            .strip_prefix("listening ")
            .and_then(|port| port.trim().parse().ok())
            .unwrap_or_else(|| {
                panic!("the SDK server's first line is `listening <port>`: {line:?}")
            });
        let http = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(0)
            .retry(reqwest::retry::never())
            .timeout(Duration::from_secs(10))
            .build()
            .expect("build a reqwest client");
        Some(SdkServer { port, child, http })
    }

    /// The server's origin: `http://127.0.0.1:PORT`, as a proxy's upstream.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The MCP endpoint: `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.origin())
    }

    /// How many times the `count` tool has run, across all sessions (`GET /runs`).
    ///
    /// # Panics
    ///
    /// If the server does not answer `{"runs": N}`.
    pub async fn runs(&self) -> u64 {
        let answer: serde_json::Value = self
            .http
            .get(format!("{}/runs", self.origin()))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .expect("GET /runs on the SDK server")
            .json()
            .await
            .expect("GET /runs answers JSON");
        answer["runs"]
            .as_u64()
            .unwrap_or_else(|| panic!("GET /runs answers {{\"runs\": N}}: {answer}"))
    }

    /// The `node` process's id, if it is still running.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}
