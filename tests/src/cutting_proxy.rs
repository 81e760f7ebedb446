//! A real HTTP proxy on 127.0.0.1 that cuts one MCP tool call's event stream mid-read.
//!
//! [`CuttingProxy`] forwards every request (method, path and query, headers but the hop-by-hop
//! ones, body) to an upstream server, with its own `reqwest` client (no retries, no pooled
//! connections, no redirects followed), and streams each answer back chunk by chunk, headers
//! included. The first `POST` whose JSON-RPC method is `tools/call` and whose answer is
//! `text/event-stream` is cut after `cut_after` complete SSE events: the proxy forwards
//! exactly those bytes, then ends the body with an error, so the client sees the connection
//! cut mid-read, and drops the upstream answer, so the server sees its client gone. Every other
//! answer passes through whole.
//!
//! It records every request: its method, the JSON-RPC `method` of a `POST`'s body, and the
//! `Last-Event-ID` of a `GET`, so a test asserts what the client sent to resume.
//!
//! ```no_run
//! use retry_tests::cutting_proxy::CuttingProxy;
//!
//! # async fn example() {
//! // In front of an MCP server listening on 127.0.0.1:3000 at `/mcp`.
//! let proxy = CuttingProxy::start("http://127.0.0.1:3000", 4).await;
//! let endpoint = proxy.url(); // http://127.0.0.1:PORT/mcp
//! # let _ = endpoint;
//! // ... initialize, call a tool (its stream is cut after 4 events), GET with Last-Event-ID ...
//! assert_eq!(proxy.posts("tools/call"), 1);
//! assert_eq!(proxy.gets(), 1);
//! assert_eq!(proxy.cuts(), 1);
//! # }
//! ```

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One request the proxy received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The HTTP method.
    pub method: Method,
    /// The path and query.
    pub path: String,
    /// The JSON-RPC `method` of a `POST`'s body, if the body is a JSON object that has one.
    pub rpc_method: Option<String>,
    /// The `Last-Event-ID` header of a `GET`, if it has one.
    pub last_event_id: Option<String>,
}

#[derive(Debug)]
struct Shared {
    /// The upstream's origin, with no trailing `/`: `http://127.0.0.1:PORT`.
    upstream: String,
    client: reqwest::Client,
    cut_after: usize,
    /// Whether a tools/call stream was chosen to be cut: only the first is.
    cut_chosen: AtomicBool,
    /// Every request, in the order it arrived.
    exchanges: watch::Sender<Vec<Exchange>>,
    /// How many answers were cut.
    cuts: watch::Sender<usize>,
}

/// The proxy. It runs as a task of the test's runtime and stops when dropped.
#[derive(Debug)]
pub struct CuttingProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl CuttingProxy {
    /// Start a proxy on a free port of 127.0.0.1 in front of `upstream`, an origin such as
    /// `http://127.0.0.1:PORT`, that cuts the first `tools/call` event stream after
    /// `cut_after` complete events (`0`: right after the response head; `usize::MAX`: never).
    pub async fn start(upstream: &str, cut_after: usize) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a listener on 127.0.0.1");
        let addr = listener.local_addr().expect("read the listener's address");
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(0)
            .retry(reqwest::retry::never())
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .build()
            .expect("build a reqwest client");
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client,
            cut_after,
            cut_chosen: AtomicBool::new(false),
            exchanges: watch::channel(Vec::new()).0,
            cuts: watch::channel(0).0,
        });
        let router = Router::new()
            .fallback(forward)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        CuttingProxy { addr, shared, task }
    }

    /// The MCP endpoint through the proxy: `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Every request received so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared.exchanges.borrow().clone()
    }

    /// How many `POST`s carried a JSON-RPC message with this `method`.
    pub fn posts(&self, method: &str) -> usize {
        self.shared
            .exchanges
            .borrow()
            .iter()
            .filter(|exchange| {
                exchange.method == Method::POST && exchange.rpc_method.as_deref() == Some(method)
            })
            .count()
    }

    /// How many `GET`s were received.
    pub fn gets(&self) -> usize {
        self.shared
            .exchanges
            .borrow()
            .iter()
            .filter(|exchange| exchange.method == Method::GET)
            .count()
    }

    /// The `Last-Event-ID` of each `GET` that had one, in order.
    pub fn last_event_ids(&self) -> Vec<String> {
        self.shared
            .exchanges
            .borrow()
            .iter()
            .filter(|exchange| exchange.method == Method::GET)
            .filter_map(|exchange| exchange.last_event_id.clone())
            .collect()
    }

    /// How many answers the proxy has cut (0 or 1).
    pub fn cuts(&self) -> usize {
        *self.shared.cuts.borrow()
    }

    /// Wait (in real time) until `count` requests have reached the proxy.
    pub async fn wait_for_requests(&self, count: usize) {
        let mut exchanges = self.shared.exchanges.subscribe();
        let _ = exchanges.wait_for(|seen| seen.len() >= count).await;
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The headers that belong to one connection, not to the message (RFC 9110, 7.6.1), and the
/// ones the forwarding client sets itself (`host`, `content-length`).
fn is_hop_by_hop(name: &header::HeaderName) -> bool {
    [
        header::CONNECTION,
        header::HOST,
        header::CONTENT_LENGTH,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ]
    .contains(name)
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let mut kept = HeaderMap::new();
    for (name, value) in headers {
        if !is_hop_by_hop(name) {
            kept.append(name.clone(), value.clone());
        }
    }
    kept
}

/// The JSON-RPC `method` of a body that is a JSON object with one.
fn rpc_method(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(value.as_object()?.get("method")?.as_str()?.to_owned())
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/event-stream"))
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(error) => return bad_gateway(&format!("reading the request's body: {error}")),
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), ToString::to_string);
    let exchange = Exchange {
        method: parts.method.clone(),
        path: path.clone(),
        rpc_method: (parts.method == Method::POST)
            .then(|| rpc_method(&body))
            .flatten(),
        last_event_id: (parts.method == Method::GET)
            .then(|| parts.headers.get("last-event-id"))
            .flatten()
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
    };
    let is_tools_call =
        exchange.method == Method::POST && exchange.rpc_method.as_deref() == Some("tools/call");
    shared
        .exchanges
        .send_modify(|exchanges| exchanges.push(exchange));

    let upstream = shared
        .client
        .request(parts.method, format!("{}{path}", shared.upstream))
        .headers(end_to_end(&parts.headers))
        .body(body)
        .send()
        .await;
    let upstream = match upstream {
        Ok(upstream) => upstream,
        Err(error) => return bad_gateway(&format!("forwarding to the upstream: {error}")),
    };

    let cut = is_tools_call
        && shared.cut_after != usize::MAX
        && is_event_stream(upstream.headers())
        && shared
            .cut_chosen
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
    let status = upstream.status();
    let headers = end_to_end(upstream.headers());
    let cutter = cut.then(|| Cutter::new(shared.cut_after));
    let body = futures_util::stream::unfold(
        Relay {
            upstream: Some(upstream),
            cutter,
            shared: Arc::clone(&shared),
        },
        Relay::next,
    );
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

fn bad_gateway(detail: &str) -> Response {
    let mut response = Response::new(Body::from(format!("cutting proxy: {detail}")));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The body being relayed: the upstream's answer, read chunk by chunk, and the cutter if this
/// answer is the one to cut.
struct Relay {
    /// `None` once the body has ended, or was cut.
    upstream: Option<reqwest::Response>,
    cutter: Option<Cutter>,
    shared: Arc<Shared>,
}

impl Relay {
    async fn next(mut self) -> Option<(io::Result<Bytes>, Relay)> {
        if self.cutter.as_ref().is_some_and(Cutter::due) {
            return Some((Err(self.cut().await), self));
        }
        let upstream = self.upstream.as_mut()?;
        match upstream.chunk().await {
            Ok(Some(chunk)) => {
                let Some(cutter) = self.cutter.as_mut() else {
                    return Some((Ok(chunk), self));
                };
                let keep = cutter.feed(&chunk);
                // The forwarded part now; the cut on the next poll (`due`).
                Some((Ok(chunk.slice(..keep)), self))
            }
            // The upstream ended before the cut: the client sees that cut instead.
            Ok(None) if self.cutter.is_some() => Some((Err(self.cut().await), self)),
            Ok(None) => {
                self.upstream = None;
                None
            }
            Err(error) => {
                self.upstream = None;
                Some((Err(io::Error::other(error)), self))
            }
        }
    }

    /// Drop the upstream answer (the server sees its client gone) and count the cut.
    ///
    /// It first yields once: hyper flushes what it has buffered (the response head, the last
    /// chunk forwarded) when the body is pending, and drops it unsent when the body fails in
    /// the same poll.
    async fn cut(&mut self) -> io::Error {
        tokio::task::yield_now().await;
        self.upstream = None;
        self.cutter = None;
        self.shared.cuts.send_modify(|cuts| *cuts += 1);
        io::Error::new(io::ErrorKind::ConnectionReset, "cut by the cutting proxy")
    }
}

/// Counts complete SSE events in a byte stream and says where the cut falls.
///
/// An event ends at a blank line: a line ending (`\n`, `\r\n` or `\r`) right after another.
/// An event with empty data (a priming event) or a comment (`: keepalive`) counts as one.
#[derive(Debug)]
struct Cutter {
    /// Events still to forward before the cut.
    left: usize,
    /// The last byte seen ended a line.
    line_ended: bool,
    /// The last byte seen was `\r`: a `\n` next is part of the same line ending.
    after_cr: bool,
    /// The last event ended at a `\r`: forward a `\n` that follows, then cut.
    finishing: bool,
    /// Cut on the next poll.
    cut_now: bool,
}

impl Cutter {
    fn new(cut_after: usize) -> Cutter {
        Cutter {
            left: cut_after,
            line_ended: false,
            after_cr: false,
            finishing: false,
            cut_now: cut_after == 0,
        }
    }

    /// Whether the cut is due before anything more is forwarded.
    fn due(&self) -> bool {
        self.cut_now
    }

    /// How many bytes of `chunk` to forward; past them the cut is due.
    fn feed(&mut self, chunk: &[u8]) -> usize {
        for (index, &byte) in chunk.iter().enumerate() {
            if self.finishing {
                self.finishing = false;
                self.cut_now = true;
                return if byte == b'\n' { index + 1 } else { index };
            }
            if byte == b'\n' && self.after_cr {
                self.after_cr = false;
                continue;
            }
            self.after_cr = byte == b'\r';
            if byte != b'\n' && byte != b'\r' {
                self.line_ended = false;
                continue;
            }
            if !self.line_ended {
                self.line_ended = true;
                continue;
            }
            // A blank line: an event is complete. Counting starts over as at the stream's
            // start, so blank lines are counted in pairs, as `\n\n` would be.
            self.line_ended = false;
            self.left -= 1;
            if self.left == 0 {
                if byte == b'\r' {
                    self.finishing = true;
                    self.after_cr = false;
                    continue;
                }
                self.cut_now = true;
                return index + 1;
            }
        }
        chunk.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Cutter;

    /// The bytes forwarded from `chunks` before the cut, and whether the cut fell.
    fn forwarded(cut_after: usize, chunks: &[&str]) -> (String, bool) {
        let mut cutter = Cutter::new(cut_after);
        let mut out = String::new();
        for chunk in chunks {
            if cutter.due() {
                break;
            }
            let keep = cutter.feed(chunk.as_bytes());
            out.push_str(&chunk[..keep]);
        }
        (out, cutter.due())
    }

    #[test]
    fn cuts_after_complete_events_across_chunks() {
        let chunks = [
            "id: 1\ndata: \n",
            "\nid: 2\ndata: a\n\nid",
            ": 3\ndata: b\n\n",
        ];
        assert_eq!(
            forwarded(2, &chunks),
            ("id: 1\ndata: \n\nid: 2\ndata: a\n\n".to_owned(), true)
        );
        assert_eq!(forwarded(0, &chunks), (String::new(), true));
        let whole = chunks.concat();
        assert_eq!(forwarded(3, &chunks), (whole.clone(), true));
        assert_eq!(forwarded(4, &chunks), (whole, false));
    }

    #[test]
    fn a_crlf_blank_line_is_forwarded_whole() {
        assert_eq!(
            forwarded(1, &["data: a\r\n\r", "\ndata: b\r\n\r\n"]),
            ("data: a\r\n\r\n".to_owned(), true)
        );
        assert_eq!(
            forwarded(2, &["data: a\r\n\r\ndata: b\r\n\r\n"]),
            ("data: a\r\n\r\ndata: b\r\n\r\n".to_owned(), true)
        );
        assert_eq!(
            forwarded(1, &["data: a\r\rdata: b\r\r"]),
            ("data: a\r\r".to_owned(), true)
        );
    }
}
