//! Shared helpers for the integration tests: a loopback server and classified errors.
//!
//! - [`Server`] is a real HTTP server on 127.0.0.1 (axum over a tokio `TcpListener`) that
//!   answers a scripted sequence of [`Step`]s, one per request: a status with headers and a
//!   body, a dropped connection, or no answer at all. It counts every request that reached it,
//!   dropped ones included, so a test asserts how many attempts the far side saw.
//! - [`Client`] is a real `reqwest` client with its own retries turned off (so the only retries
//!   are the engine's) and no connection reuse (so each attempt is one connection).
//! - [`CallError`] is the client's error; it classifies with the library's own classifiers
//!   (its [`HttpError`] and `Classify for reqwest::Error`), never a copy of the table.
//!
//! ```no_run
//! use retry_runtime::{testing, Policy, Retry};
//! use retry_tests::{Server, Step};
//!
//! # async fn example() {
//! let server = Server::start([Step::status(503), Step::ok("reply")]).await;
//! let client = server.client();
//! let (result, recorded) =
//!     testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await)).await;
//! assert_eq!(result.unwrap().body, "reply");
//! assert_eq!(server.requests(), 2);
//! assert_eq!(recorded.waits().len(), 1);
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{Class, Classify};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The header every scripted answer carries: the number of the request it answers, from 1.
///
/// A test reads it back from the error it was handed to prove that the error is the last
/// attempt's, unchanged.
pub const REQUEST_NUMBER: &str = "x-request-number";

/// The status a [`Server`] answers once its script has run out: `410 Gone`, a definitive
/// answer, so a ladder that made more attempts than the test scripted stops there.
pub const UNSCRIPTED: u16 = 410;

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Answer with this status, these headers and this body.
    Answer {
        /// The status code.
        status: u16,
        /// Extra headers, in order.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// Read the request, then close the connection without answering: the client sees the
    /// connection dropped, with no status to read.
    Drop,
    /// Read the request and never answer: the client's own timeout ends the attempt. The
    /// server notes when the client closes the connection ([`Server::closed`]).
    Stall,
    /// Read the request, send a `200 OK` head that promises a longer body than follows,
    /// send the start of it, and close: the body is cut off mid-read.
    CutOff,
    /// Wait this long (real time), then take the step: `Step::ok("late").after(delay)`.
    After(Duration, Box<Step>),
}

impl Step {
    /// An answer with this status and an empty body.
    pub fn status(status: u16) -> Step {
        Step::Answer {
            status,
            headers: Vec::new(),
            body: String::new(),
        }
    }

    /// A `200 OK` with this body.
    pub fn ok(body: &str) -> Step {
        Step::status(200).with_body(body)
    }

    /// A `429 Too Many Requests` with `Retry-After: seconds`.
    pub fn rate_limited_for(seconds: u64) -> Step {
        Step::status(429).with_header("retry-after", &seconds.to_string())
    }

    /// A `403 Forbidden` with `x-ratelimit-remaining: 0`: a quota spent, not a permission.
    pub fn quota_exhausted() -> Step {
        Step::status(403).with_header("x-ratelimit-remaining", "0")
    }

    /// This answer, given only after `delay` of real time (the connection stays open).
    pub fn after(self, delay: Duration) -> Step {
        Step::After(delay, Box::new(self))
    }

    /// This step `count` times over, for a script: `Step::status(503).times(4)`.
    pub fn times(self, count: usize) -> Vec<Step> {
        vec![self; count]
    }

    /// This answer with one more header (no effect on the steps that are not answers).
    pub fn with_header(mut self, name: &str, value: &str) -> Step {
        if let Step::Answer { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// This answer with this body (no effect on the steps that are not answers).
    pub fn with_body(mut self, text: &str) -> Step {
        if let Step::Answer { body, .. } = &mut self {
            text.clone_into(body);
        }
        self
    }
}

/// The script and the count of requests that reached the server.
#[derive(Debug)]
struct Script {
    steps: Mutex<VecDeque<Step>>,
    requests: watch::Sender<u32>,
    /// For each stalled connection the client closed: how long after its request reached the
    /// server.
    closed: watch::Sender<Vec<Duration>>,
}

impl Script {
    /// The next request's step, if it is a `Drop`, a `Stall` or a `CutOff`: the listener serves those.
    fn next_unanswered(&self) -> Option<Step> {
        self.steps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .front()
            .filter(|step| matches!(step, Step::Drop | Step::Stall | Step::CutOff))
            .cloned()
    }

    /// Count one request and take its step.
    fn take(&self) -> (u32, Step) {
        let step = self
            .steps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| {
                Step::status(UNSCRIPTED).with_body("no step was scripted for this request")
            });
        let mut number = 0;
        self.requests.send_modify(|count| {
            *count += 1;
            number = *count;
        });
        (number, step)
    }
}

/// Accepts connections for axum, and drops the ones whose request is scripted to be dropped
/// before axum sees them.
///
/// Every answer carries `Connection: close` and the client keeps no idle connection, so each
/// connection carries exactly one request, and the step at the head of the script when a
/// connection arrives is the step for its request.
struct ScriptedListener {
    inner: TcpListener,
    script: Arc<Script>,
}

impl axum::serve::Listener for ScriptedListener {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            let Ok((mut stream, addr)) = self.inner.accept().await else {
                tokio::task::yield_now().await;
                continue;
            };
            let Some(step) = self.script.next_unanswered() else {
                return (stream, addr);
            };
            // The request reaches the server (it is read in full, so closing does not reset
            // the connection), is counted, and gets no answer or a cut-off one.
            read_request_head(&mut stream).await;
            let _ = self.script.take();
            if step == Step::CutOff {
                let head = "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(b"{\"partial\": ").await;
                let _ = stream.flush().await;
            }
            if step == Step::Stall {
                // Held open until the client closes it, and the close noted.
                let script = Arc::clone(&self.script);
                tokio::spawn(async move {
                    let reached = tokio::time::Instant::now();
                    let mut buffer = [0; 64];
                    while let Ok(1..) = stream.read(&mut buffer).await {}
                    script
                        .closed
                        .send_modify(|closed| closed.push(reached.elapsed()));
                });
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// Read until the end of the request head (the client's requests have no body).
async fn read_request_head(stream: &mut TcpStream) {
    let mut head = Vec::new();
    let mut buffer = [0; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buffer[..read]),
        }
    }
}

async fn answer(State(script): State<Arc<Script>>) -> Response {
    let (number, mut step) = script.take();
    if let Step::After(delay, later) = step {
        tokio::time::sleep(delay).await;
        step = *later;
    }
    let (status, headers, body) = match step {
        Step::Answer {
            status,
            headers,
            body,
        } => (status, headers, body),
        Step::Stall => std::future::pending().await,
        // The listener serves these before axum sees them (unless delayed); reaching here
        // means a connection carried a second request, which the script cannot serve in order.
        Step::Drop | Step::CutOff | Step::After(..) => (
            500,
            Vec::new(),
            "a raw answer was scripted for a reused connection".to_owned(),
        ),
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT);
    let response_headers = response.headers_mut();
    response_headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response_headers.insert(REQUEST_NUMBER, HeaderValue::from(number));
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response_headers.append(name, value);
        }
    }
    response
}

/// A real HTTP server on 127.0.0.1 that answers a script, one [`Step`] per request, and
/// counts the requests that reached it. Requests past the script get [`UNSCRIPTED`].
///
/// It runs as a task of the test's runtime and stops when dropped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    script: Arc<Script>,
    task: JoinHandle<()>,
}

impl Server {
    /// Start a server on a free port of 127.0.0.1 that answers `script` in order.
    pub async fn start(script: impl IntoIterator<Item = Step>) -> Server {
        let inner = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a listener on 127.0.0.1");
        let addr = inner.local_addr().expect("read the listener's address");
        let (requests, _) = watch::channel(0);
        let (closed, _) = watch::channel(Vec::new());
        let script = Arc::new(Script {
            steps: Mutex::new(script.into_iter().collect()),
            requests,
            closed,
        });
        let listener = ScriptedListener {
            inner,
            script: Arc::clone(&script),
        };
        let router = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&script));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Server { addr, script, task }
    }

    /// The server's URL: `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// A client for this server, with a 30 s timeout per request.
    pub fn client(&self) -> Client {
        Client::new(self.url())
    }

    /// How many requests reached the server, dropped and stalled ones included.
    pub fn requests(&self) -> u32 {
        *self.script.requests.borrow()
    }

    /// For each stalled connection the client has closed, in order: how long it stayed open
    /// after its request reached the server.
    pub fn closed(&self) -> Vec<Duration> {
        self.script.closed.borrow().clone()
    }

    /// Wait (in real time) until the client has closed `count` stalled connections.
    pub async fn wait_for_closed(&self, count: usize) {
        let mut closed = self.script.closed.subscribe();
        let _ = closed.wait_for(|closed| closed.len() >= count).await;
    }

    /// Wait (in real time) until `count` requests have reached the server.
    pub async fn wait_for_requests(&self, count: u32) {
        let mut requests = self.script.requests.subscribe();
        let _ = requests.wait_for(|seen| *seen >= count).await;
    }

    /// Run `request`, a request that the server is scripted to stall, and let its client
    /// timeout fire without waiting for it in real time.
    ///
    /// Time runs as usual until the request has reached the server (so connecting is never
    /// cut short), then tokio's clock is paused: with nothing else to do, the runtime
    /// advances it straight to the client's deadline. Real time resumes afterwards. A request
    /// that ends before reaching the server ends here too, with time never paused. Needs a
    /// `current_thread` runtime whose time is not already paused.
    pub async fn time_out<F: Future>(&self, request: F) -> F::Output {
        let reached = self.requests() + 1;
        let mut request = pin!(request);
        tokio::select! {
            biased;
            output = &mut request => return output,
            () = self.wait_for_requests(reached) => {}
        }
        tokio::time::pause();
        let output = request.await;
        tokio::time::resume();
        output
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A URL on 127.0.0.1 where nothing listens: connecting is refused.
///
/// It binds a listener on a free port, notes the port and closes the listener again.
pub fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a listener");
    let addr = listener.local_addr().expect("read the listener's address");
    drop(listener);
    format!("http://{addr}/")
}

/// A successful answer (status 2xx).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The number of the request, as the server counted it ([`REQUEST_NUMBER`]).
    pub request: Option<u32>,
    /// The body.
    pub body: String,
}

impl Reply {
    /// This reply if its body has content, else [`CallError::InvalidOutput`]: an answer came
    /// back, but unusable (seed 002's empty output).
    pub fn nonempty(self) -> Result<Reply, CallError> {
        if self.body.trim().is_empty() {
            Err(CallError::InvalidOutput {
                request: self.request,
                detail: "the answer's body is empty".to_owned(),
            })
        } else {
            Ok(self)
        }
    }
}

/// A failed request. It classifies with the shipped classifiers only: the library's
/// [`HttpError`] for a status, and its `Classify for reqwest::Error` for a failure with no
/// status, so the tests prove the table users get, not a copy of it.
#[derive(Debug)]
pub enum CallError {
    /// The server answered with a status that is not a success.
    Http {
        /// The library's error, made by [`ResponseExt::check_status`].
        error: HttpError,
        /// The number of the request, as the server counted it ([`REQUEST_NUMBER`]).
        request: Option<u32>,
    },
    /// The client failed with no status to read: refused, dropped, timed out, cut off,
    /// malformed.
    Request(reqwest::Error),
    /// A success whose content is unusable: the caller's own check (seed 002's empty output).
    InvalidOutput {
        /// The number of the request, as the server counted it.
        request: Option<u32>,
        /// What is wrong with it.
        detail: String,
    },
}

impl CallError {
    /// The status code, if the server answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            CallError::Http { error, .. } => Some(error.status().as_u16()),
            _ => None,
        }
    }

    /// The number of the request this error answers, if the server answered.
    pub fn request(&self) -> Option<u32> {
        match self {
            CallError::Http { request, .. } | CallError::InvalidOutput { request, .. } => *request,
            CallError::Request(_) => None,
        }
    }

    /// The library's [`HttpError`], if the server answered with a status.
    pub fn http(&self) -> Option<&HttpError> {
        match self {
            CallError::Http { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether the client timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, CallError::Request(error) if error.is_timeout())
    }

    /// Whether no status was read: the request failed in the client.
    pub fn is_request(&self) -> bool {
        matches!(self, CallError::Request(_))
    }
}

impl Classify for CallError {
    fn classify(&self) -> Class {
        match self {
            CallError::Http { error, .. } => error.classify(),
            CallError::Request(error) => error.classify(),
            CallError::InvalidOutput { .. } => Class::InvalidOutput,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Http { error, request } => {
                write!(f, "{error}")?;
                if let Some(request) = request {
                    write!(f, " (request {request})")?;
                }
                Ok(())
            }
            CallError::Request(error) => write!(f, "no answer: {}", error_chain(error)),
            CallError::InvalidOutput { detail, .. } => write!(f, "unusable answer: {detail}"),
        }
    }
}

impl std::error::Error for CallError {}

/// An error and its sources, joined: hyper's "connection closed" sits a few levels down.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A real `reqwest` client for one URL: its own retries off, no idle connections kept.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    /// A client for `url` with a 30 s timeout per request.
    pub fn new(url: impl Into<String>) -> Client {
        Client::with_timeout(url, Duration::from_secs(30))
    }

    /// A client for `url` whose requests time out after `timeout`.
    pub fn with_timeout(url: impl Into<String>, timeout: Duration) -> Client {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .no_proxy()
            .pool_max_idle_per_host(0)
            .retry(reqwest::retry::never())
            .build()
            .expect("build a reqwest client");
        Client {
            http,
            url: url.into(),
        }
    }

    /// `GET` the URL: a 2xx is a [`Reply`], anything else a [`CallError`].
    pub async fn get(&self) -> Result<Reply, CallError> {
        let response = self.send().await?;
        let status = response.status().as_u16();
        let request = header_number(response.headers().get(REQUEST_NUMBER));
        let body = response.text().await.map_err(CallError::Request)?;
        Ok(Reply {
            status,
            request,
            body,
        })
    }

    /// `GET` the URL and decode its JSON body, as a model client does: a malformed body is
    /// reqwest's decode error.
    pub async fn get_json(&self) -> Result<serde_json::Value, CallError> {
        self.send().await?.json().await.map_err(CallError::Request)
    }

    async fn send(&self) -> Result<reqwest::Response, CallError> {
        let response = self
            .http
            .get(&self.url)
            .send()
            .await
            .map_err(CallError::Request)?;
        let request = header_number(response.headers().get(REQUEST_NUMBER));
        response
            .check_status()
            .await
            .map_err(|error| CallError::Http { error, request })
    }
}

/// A header holding a whole number, if it is there and is one.
fn header_number<T: std::str::FromStr>(value: Option<&HeaderValue>) -> Option<T> {
    value?.to_str().ok()?.trim().parse().ok()
}

/// Poll `future` once with a waker that does nothing; it must be ready (a first-try success
/// never waits).
pub fn poll_once<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("a first-try success completes on its first poll"),
    }
}

/// A current-thread runtime whose first `block_on` has already run: that call sets up the
/// runtime's thread-locals, a cost the runtime pays once and an allocation count must not
/// charge to the call under test.
pub fn warmed_runtime() -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a current-thread runtime");
    runtime.block_on(async {});
    runtime
}

pub mod capture {
    //! A tracing layer that records the fields of every event with target `retry`.
    //!
    //! One subscriber is installed for the whole test binary, once, and each test records on
    //! its own thread: per-thread default subscribers race with tracing's global cache of
    //! which call sites are enabled when tests run in parallel, and events go missing.

    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::fmt;
    use std::sync::{Arc, Mutex, Once, PoisonError};

    use tracing::field::{Field, Visit};
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::{Context, SubscriberExt};

    /// One event's fields by name, its level under `level` and its message under `message`.
    pub type Fields = BTreeMap<String, String>;

    type Sink = Arc<Mutex<Vec<Fields>>>;

    thread_local! {
        static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
    }

    /// Records every `retry` event emitted on the current thread while installed.
    #[derive(Clone, Default)]
    pub struct Capture(Sink);

    /// Recording stops when this is dropped.
    #[derive(Debug)]
    pub struct Installed(());

    impl Drop for Installed {
        fn drop(&mut self) {
            SINK.with(|sink| sink.borrow_mut().take());
        }
    }

    impl Capture {
        /// Record this thread's events until the guard is dropped.
        pub fn install(&self) -> Installed {
            static GLOBAL: Once = Once::new();
            GLOBAL.call_once(|| {
                let subscriber = tracing_subscriber::registry().with(Recorder);
                tracing::subscriber::set_global_default(subscriber)
                    .expect("no other global subscriber in the tests");
            });
            SINK.with(|sink| *sink.borrow_mut() = Some(Arc::clone(&self.0)));
            Installed(())
        }

        /// The events recorded so far, in order.
        pub fn events(&self) -> Vec<Fields> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        }
    }

    struct FieldVisitor<'a>(&'a mut Fields);

    impl Visit for FieldVisitor<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
        fn record_u64(&mut self, field: &Field, value: u64) {
            self.0.insert(field.name().to_owned(), value.to_string());
        }
    }

    /// The one layer: hands each `retry` event to the sink of the thread that emitted it.
    struct Recorder;

    impl<S: tracing::Subscriber> Layer<S> for Recorder {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            if event.metadata().target() != "retry" {
                return;
            }
            let Some(sink) = SINK.with(|sink| sink.borrow().clone()) else {
                return;
            };
            let mut fields = Fields::new();
            fields.insert("level".into(), event.metadata().level().to_string());
            event.record(&mut FieldVisitor(&mut fields));
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(fields);
        }
    }
}

/// The README's example, compiled as written; `tests/readme.rs` checks that the README shows
/// this file verbatim (and `tests/install.rs` builds it with the README's lines above it). Its
/// items are the README's, undocumented there as here.
#[allow(missing_docs)]
pub mod headline;

/// The guide's stream example (`retry-runtime/src/guide/streams.md`), compiled as written;
/// `tests/readme.rs` checks that the chapter shows this file verbatim.
#[allow(missing_docs)]
pub mod stream_headline;

/// The guide's upstream example (`guide/upstreams.md`), compiled as written (`tests/readme.rs`).
pub mod upstream_headline;

/// The guide's fallback example (`guide/fallback.md`), compiled as written (`tests/readme.rs`).
#[allow(missing_docs)]
pub mod fallback_headline;

/// The guide's own error wrapping the ready-made one (`guide/streams.md`).
#[allow(missing_docs)] // shown in the guide as a user writes it, with line comments
pub mod agent_error;

pub mod cutting_proxy;
pub mod event_server;
pub mod mcp_peer;
pub mod provider;
pub mod redis_server;

pub mod mcp_client;
