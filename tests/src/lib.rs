//! Shared helpers for the integration tests: a loopback server and classified errors.
//!
//! - [`Server`] is a real HTTP server on 127.0.0.1 (axum over a tokio `TcpListener`) that
//!   answers a scripted sequence of [`Step`]s, one per request: a status with headers and a
//!   body, a dropped connection, or no answer at all. It counts every request that reached it,
//!   dropped ones included, so a test asserts how many attempts the far side saw.
//! - [`Client`] is a real `reqwest` client with its own retries turned off (so the only retries
//!   are the engine's) and no connection reuse (so each attempt is one connection).
//! - [`HttpError`] is the client's error; it implements [`Classify`] by reading the status
//!   number and headers, never the text, as the seeds ask.
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
use retry_runtime::{Class, Classify};
use tokio::io::AsyncReadExt;
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

    /// This answer with one more header (no effect on [`Step::Drop`] and [`Step::Stall`]).
    pub fn with_header(mut self, name: &str, value: &str) -> Step {
        if let Step::Answer { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// This answer with this body (no effect on [`Step::Drop`] and [`Step::Stall`]).
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
    /// The next request's step, if it is a `Drop` or a `Stall`: the listener serves those.
    fn next_unanswered(&self) -> Option<Step> {
        self.steps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .front()
            .filter(|step| matches!(step, Step::Drop | Step::Stall))
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
            // the connection), is counted, and gets no answer.
            read_request_head(&mut stream).await;
            let _ = self.script.take();
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
        Step::Drop | Step::After(..) => (
            500,
            Vec::new(),
            "a dropped connection was scripted for a reused connection".to_owned(),
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
    /// This reply if its body has content, else [`HttpError::InvalidOutput`]: an answer came
    /// back, but unusable (seed 002's empty output).
    pub fn nonempty(self) -> Result<Reply, HttpError> {
        if self.body.trim().is_empty() {
            Err(HttpError::InvalidOutput {
                request: self.request,
                detail: "the answer's body is empty".to_owned(),
            })
        } else {
            Ok(self)
        }
    }
}

/// A failed request, classified by its status number and headers.
///
/// | failure | class |
/// |---|---|
/// | 502, 503, 504 | `Unavailable` |
/// | 500 and other 5xx | `ServerError` |
/// | 429 | `RateLimited`, with its `Retry-After` in seconds |
/// | 403 with `x-ratelimit-remaining: 0` | `QuotaExhausted` |
/// | any other status (400, 401, 403, 404, 413, 422, ...) | `Definitive` |
/// | refused, reset, dropped connection | `Transport` |
/// | the client's timeout | `Timeout` |
/// | a 2xx whose body is unusable | `InvalidOutput` |
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The server answered with a status that is not a success.
    Status {
        /// The status code.
        status: u16,
        /// The `Retry-After` header, in whole seconds, if it had one.
        retry_after: Option<Duration>,
        /// The `x-ratelimit-remaining` header, if it had one.
        ratelimit_remaining: Option<u64>,
        /// The number of the request, as the server counted it ([`REQUEST_NUMBER`]).
        request: Option<u32>,
    },
    /// No status to read: the connection was refused, reset or dropped.
    Transport {
        /// What the client said.
        detail: String,
    },
    /// The request used up the client's timeout.
    Timeout {
        /// What the client said.
        detail: String,
    },
    /// A success whose content is unusable.
    InvalidOutput {
        /// The number of the request, as the server counted it.
        request: Option<u32>,
        /// What is wrong with it.
        detail: String,
    },
}

impl HttpError {
    /// The status code, if the server answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The number of the request this error answers, if the server answered.
    pub fn request(&self) -> Option<u32> {
        match self {
            HttpError::Status { request, .. } | HttpError::InvalidOutput { request, .. } => {
                *request
            }
            HttpError::Transport { .. } | HttpError::Timeout { .. } => None,
        }
    }

    fn from_reqwest(error: &reqwest::Error) -> HttpError {
        let detail = error_chain(error);
        if error.is_timeout() {
            HttpError::Timeout { detail }
        } else {
            HttpError::Transport { detail }
        }
    }
}

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

impl Classify for HttpError {
    fn classify(&self) -> Class {
        match self {
            HttpError::Status {
                status,
                retry_after,
                ratelimit_remaining,
                ..
            } => match status {
                502..=504 => Class::Unavailable { retry_after: None },
                500..=599 => Class::ServerError,
                429 => Class::RateLimited {
                    retry_after: *retry_after,
                },
                403 if *ratelimit_remaining == Some(0) => Class::QuotaExhausted,
                _ => Class::Definitive,
            },
            HttpError::Transport { .. } => Class::Transport,
            HttpError::Timeout { .. } => Class::Timeout,
            HttpError::InvalidOutput { .. } => Class::InvalidOutput,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Status {
                status, request, ..
            } => {
                write!(f, "HTTP {status}")?;
                if let Some(request) = request {
                    write!(f, " (request {request})")?;
                }
                Ok(())
            }
            HttpError::Transport { detail } => write!(f, "no answer: {detail}"),
            HttpError::Timeout { detail } => write!(f, "timed out: {detail}"),
            HttpError::InvalidOutput { detail, .. } => write!(f, "unusable answer: {detail}"),
        }
    }
}

impl std::error::Error for HttpError {}

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

    /// `GET` the URL: a 2xx is a [`Reply`], anything else an [`HttpError`].
    pub async fn get(&self) -> Result<Reply, HttpError> {
        let response = self
            .http
            .get(&self.url)
            .send()
            .await
            .map_err(|error| HttpError::from_reqwest(&error))?;
        let status = response.status().as_u16();
        let headers = response.headers();
        let request = header_number(headers.get(REQUEST_NUMBER));
        if !response.status().is_success() {
            return Err(HttpError::Status {
                status,
                retry_after: header_number(headers.get(header::RETRY_AFTER))
                    .map(Duration::from_secs),
                ratelimit_remaining: header_number(headers.get("x-ratelimit-remaining")),
                request,
            });
        }
        let body = response
            .text()
            .await
            .map_err(|error| HttpError::from_reqwest(&error))?;
        Ok(Reply {
            status,
            request,
            body,
        })
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

    use std::collections::BTreeMap;
    use std::fmt;
    use std::sync::{Arc, Mutex, PoisonError};

    use tracing::field::{Field, Visit};
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::{Context, SubscriberExt};

    /// One event's fields by name, its level under `level` and its message under `message`.
    pub type Fields = BTreeMap<String, String>;

    /// Records every `retry` event while installed on the current thread.
    #[derive(Clone, Default)]
    pub struct Capture(Arc<Mutex<Vec<Fields>>>);

    impl Capture {
        /// Make this the current thread's subscriber until the guard is dropped.
        pub fn install(&self) -> tracing::subscriber::DefaultGuard {
            tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
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

    impl<S: tracing::Subscriber> Layer<S> for Capture {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            if event.metadata().target() != "retry" {
                return;
            }
            let mut fields = Fields::new();
            fields.insert("level".into(), event.metadata().level().to_string());
            event.record(&mut FieldVisitor(&mut fields));
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(fields);
        }
    }
}
