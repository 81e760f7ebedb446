//! A real SSE server on 127.0.0.1: each request is answered `200 text/event-stream` with a
//! scripted body of [`Part`]s, sent as they come (one chunk each), and counted.
//!
//! ```no_run
//! use retry_tests::event_server::{EventServer, Part};
//!
//! # async fn example() {
//! let server = EventServer::start([
//!     vec![Part::event("message_start", "{}"), Part::Cut],
//!     vec![Part::event("content_block_delta", r#"{"text":"hi"}"#)],
//! ])
//! .await;
//! let response = reqwest::get(server.url()).await.unwrap();
//! # let _ = response;
//! assert_eq!(server.requests(), 1);
//! # }
//! ```

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// One piece of a scripted event-stream body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// These bytes, as one chunk.
    Bytes(String),
    /// Wait this long (real time) before the next part.
    Delay(Duration),
    /// Cut the connection here: the body ends with an error, so the client sees it cut off
    /// mid-read.
    Cut,
    /// Send nothing more, and keep the connection open until the client closes it.
    Stall,
}

impl Part {
    /// An event named `name` with `data` (one `data:` line), and its blank line.
    pub fn event(name: &str, data: &str) -> Part {
        Part::Bytes(format!("event: {name}\ndata: {data}\n\n"))
    }

    /// An unnamed event (`message`) with `data`, as OpenAI sends its chat chunks.
    pub fn data(data: &str) -> Part {
        Part::Bytes(format!("data: {data}\n\n"))
    }
}

/// The head of every answer: status, and extra headers.
#[derive(Debug, Clone)]
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

/// One request as the server saw it: what a resume test asserts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `GET`, `POST`.
    pub method: String,
    /// The path and query: `/v1/responses/resp_1?stream=true&starting_after=3`.
    pub uri: String,
    /// Its `Last-Event-ID` header, if it had one.
    pub last_event_id: Option<String>,
}

#[derive(Debug)]
struct Script {
    bodies: Mutex<VecDeque<(Head, Vec<Part>)>>,
    seen: Mutex<Vec<Seen>>,
    requests: watch::Sender<u32>,
    closed: watch::Sender<u32>,
}

/// The SSE server. It stops when dropped.
#[derive(Debug)]
pub struct EventServer {
    addr: SocketAddr,
    script: Arc<Script>,
    task: JoinHandle<()>,
}

impl EventServer {
    /// Start a server that answers each request with the next body of `bodies`, with status
    /// 200 and `content-type: text/event-stream`; past the script, `410 Gone`.
    pub async fn start(bodies: impl IntoIterator<Item = Vec<Part>>) -> EventServer {
        let ok = Head {
            status: 200,
            headers: Vec::new(),
        };
        EventServer::start_with(bodies.into_iter().map(|body| (ok.clone(), body))).await
    }

    /// Like [`start`](Self::start), each body with its own status and headers (beside the
    /// content type): `(200, vec![("x-should-retry", "true")], parts)`.
    pub async fn start_with_heads(
        answers: impl IntoIterator<Item = (u16, Vec<(&'static str, &'static str)>, Vec<Part>)>,
    ) -> EventServer {
        EventServer::start_with(answers.into_iter().map(|(status, headers, body)| {
            let headers = headers
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
                .collect();
            (Head { status, headers }, body)
        }))
        .await
    }

    async fn start_with(answers: impl Iterator<Item = (Head, Vec<Part>)>) -> EventServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a listener on 127.0.0.1");
        let addr = listener.local_addr().expect("read the listener's address");
        let script = Arc::new(Script {
            bodies: Mutex::new(answers.collect()),
            seen: Mutex::new(Vec::new()),
            requests: watch::channel(0).0,
            closed: watch::channel(0).0,
        });
        let router = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&script));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        EventServer { addr, script, task }
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("http://{}/v1/messages", self.addr)
    }

    /// How many requests reached the server.
    pub fn requests(&self) -> u32 {
        *self.script.requests.borrow()
    }

    /// Every request that reached the server, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.script
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many requests with this method reached the server.
    pub fn count(&self, method: &str) -> usize {
        self.seen()
            .iter()
            .filter(|seen| seen.method == method)
            .count()
    }

    /// How many answers the client stopped reading before they ended (stalled or not).
    pub fn closed(&self) -> u32 {
        *self.script.closed.borrow()
    }

    /// Wait (in real time) until the client has closed `count` answers early.
    pub async fn wait_for_closed(&self, count: u32) {
        let mut closed = self.script.closed.subscribe();
        let _ = closed.wait_for(|closed| *closed >= count).await;
    }
}

impl Drop for EventServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    State(script): State<Arc<Script>>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    request_headers: axum::http::HeaderMap,
) -> Response {
    let last_event_id = request_headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    script
        .seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Seen {
            method: method.to_string(),
            uri: uri
                .path_and_query()
                .map_or_else(String::new, ToString::to_string),
            last_event_id,
        });
    script.requests.send_modify(|count| *count += 1);
    let next = script
        .bodies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop_front();
    let Some((head, parts)) = next else {
        let mut gone = Response::new(Body::from("no body was scripted for this request"));
        *gone.status_mut() = StatusCode::GONE;
        return gone;
    };
    let (sender, receiver) = mpsc::channel(1);
    let script = Arc::clone(&script);
    tokio::spawn(async move {
        // backoff-lint: allow(the scripted pauses of a test server's stream, not a retry)
        for part in parts {
            let sent = match part {
                Part::Bytes(text) => sender.send(Ok(Bytes::from(text))).await,
                Part::Delay(delay) => {
                    tokio::time::sleep(delay).await;
                    Ok(())
                }
                Part::Cut => sender
                    .send(Err(io::Error::new(io::ErrorKind::ConnectionReset, "cut")))
                    .await
                    .and(Err(mpsc::error::SendError(Ok(Bytes::new())))),
                Part::Stall => {
                    sender.closed().await;
                    Err(mpsc::error::SendError(Ok(Bytes::new())))
                }
            };
            if sent.is_err() {
                break;
            }
        }
        // The client stopped reading before the end.
        if sender.is_closed() {
            script.closed.send_modify(|closed| *closed += 1);
        }
    });
    let mut response = Response::new(Body::from_stream(Chunks { receiver }));
    *response.status_mut() = StatusCode::from_u16(head.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    for (name, value) in head.headers {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            headers.insert(name, value);
        }
    }
    response
}

/// The body: each part as it is sent.
struct Chunks {
    receiver: mpsc::Receiver<io::Result<Bytes>>,
}

impl futures_core::Stream for Chunks {
    type Item = io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.receiver.poll_recv(cx)
    }
}

/// A reqwest client for these servers: no proxy, and no pooled connection, so each request
/// (a resume included) is a connection the server counts.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .expect("build a reqwest client")
}

/// The `GET` that resumes a stream at `url` from `from`, with its `Last-Event-ID`.
pub fn resume_get(
    http: &reqwest::Client,
    url: &str,
    from: &retry_runtime::ResumeFrom,
) -> reqwest::RequestBuilder {
    let request = http.get(url);
    match from.last_event_id() {
        Some(id) => request.header("last-event-id", id),
        None => request,
    }
}
