//! The fault server: a real HTTP/1.1 server on 127.0.0.1 that plays a [`Script`], for a
//! client a test cannot wrap (feature `test-server`). One request per connection, each
//! answer closing it, so every attempt is a connection the script counts. It reads a request
//! within fixed bounds and never decides anything: the script says what to play.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::test_scope::ScopeClock;
use crate::testing::act::{Act, ActKind, Canned, ScriptedEvent, StreamEnd, resumed};
use crate::testing::script::{Asked, Script, cursor};

/// The most a request's head may take; a longer one is closed unanswered.
const MAX_HEAD: usize = 64 * 1024;
/// The most of a request's body that is read and recorded.
const MAX_BODY: usize = 1024 * 1024;

/// A real HTTP/1.1 server on a free port of 127.0.0.1 that answers each request with the
/// next act of its [`Script`] and records it; it stops when dropped. Started inside
/// [`testing::scope`](crate::testing::scope), it records each request's time by the scope's
/// clock.
///
/// ```
/// use retry_runtime::testing::{Act, FaultServer, Script};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let server = FaultServer::start(Script::new([Act::unavailable(), Act::ok("reply")])).await?;
/// for expected in ["HTTP/1.1 503", "HTTP/1.1 200"] {
///     // Any HTTP/1.1 client will do; a bare socket shows what goes over it.
///     let mut socket = tokio::net::TcpStream::connect(server.addr()).await?;
///     socket.write_all(b"GET /v1/messages HTTP/1.1\r\nhost: test\r\n\r\n").await?;
///     let mut answer = String::new();
///     socket.read_to_string(&mut answer).await?;
///     assert!(answer.starts_with(expected), "{answer}");
/// }
/// assert_eq!(server.script().requests(), 2);
/// assert_eq!(server.script().asked()[0].path, "/v1/messages");
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct FaultServer {
    addr: SocketAddr,
    script: Script,
    /// How many hangs and stalls the client closed.
    closed: watch::Sender<usize>,
    task: JoinHandle<()>,
}

impl FaultServer {
    /// Start serving `script` on a free port of 127.0.0.1, as a task of the current runtime.
    ///
    /// # Errors
    ///
    /// The listener could not be bound: the machine has no loopback interface or no free port.
    pub async fn start(script: Script) -> io::Result<FaultServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let clock = ScopeClock::current();
        let served = script.clone();
        let closed = watch::Sender::new(0);
        let counted = closed.clone();
        let task = tokio::spawn(async move {
            // The connections belong to the accept task: stopping the server (dropping it)
            // closes the ones still open, a hang or a stall included.
            let mut connections = tokio::task::JoinSet::new();
            // backoff-lint: allow(a server's accept loop, not a retry)
            loop {
                while connections.try_join_next().is_some() {}
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors, say: let the connections in flight end first,
                    // rather than spin on the error.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                let served = (served.clone(), clock.clone(), counted.clone());
                connections.spawn(serve(stream, served));
            }
        });
        Ok(FaultServer {
            addr,
            script,
            closed,
            task,
        })
    }

    /// The server's origin: `http://127.0.0.1:PORT` (no trailing `/`; append a path).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::testing::{FaultServer, Script};
    /// let server = FaultServer::start(Script::new([])).await.unwrap();
    /// assert!(server.url().starts_with("http://127.0.0.1:"));
    /// # }
    /// ```
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address it listens on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::testing::{FaultServer, Script};
    /// let server = FaultServer::start(Script::new([])).await.unwrap();
    /// assert!(server.addr().ip().is_loopback());
    /// # }
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The script it plays, and its record of what it was asked.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::testing::{FaultServer, Script};
    /// let server = FaultServer::start(Script::new([])).await.unwrap();
    /// assert_eq!(server.script().requests(), 0);
    /// # }
    /// ```
    pub fn script(&self) -> &Script {
        &self.script
    }
}

impl FaultServer {
    /// How many requests it was asked so far, counted as the library counts attempts
    /// (`u32`, saturating), so `report.attempts() == server.requests()` reads as it says.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::testing::{FaultServer, Script};
    /// let server = FaultServer::start(Script::new([])).await.unwrap();
    /// assert_eq!(server.requests(), 0);
    /// # }
    /// ```
    pub fn requests(&self) -> u32 {
        u32::try_from(self.script.requests()).unwrap_or(u32::MAX)
    }

    /// How many hangs and stalls the client has closed so far: an attempt's timeout that
    /// dropped its connection.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::testing::{FaultServer, Script};
    /// let server = FaultServer::start(Script::new([])).await.unwrap();
    /// assert_eq!(server.closed(), 0);
    /// # }
    /// ```
    pub fn closed(&self) -> usize {
        *self.closed.borrow()
    }

    /// Wait (in real time) until the client has closed `count` hangs and stalls.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use retry_runtime::testing::{FaultServer, Script};
    /// let server = FaultServer::start(Script::new([])).await.unwrap();
    /// server.wait_for_closed(0).await;
    /// # }
    /// ```
    pub async fn wait_for_closed(&self, count: usize) {
        let mut closed = self.closed.subscribe();
        // The sender lives as long as `self`: the wait ends only by the count.
        let _ = closed.wait_for(|closed| *closed >= count).await;
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Read one request, record it, play its act; count a hang or a stall the client closed.
async fn serve(
    mut stream: TcpStream,
    (script, clock, closed): (Script, ScopeClock, watch::Sender<usize>),
) {
    let Some(asked) = read_request(&mut stream).await else {
        return;
    };
    let (last_event_id, starting_after) = cursor(&asked.path, asked.last_event_id.as_deref());
    let act = script.take(asked, &clock);
    // A client gone mid-answer is the test's business, not the server's.
    let held = play(&mut stream, act, last_event_id.as_deref(), starting_after).await;
    if let Ok(Served::UntilClosed) = held {
        closed.send_modify(|closed| *closed += 1);
    }
}

/// How an act left the connection.
#[derive(Debug, PartialEq, Eq)]
enum Served {
    /// Answered, cut or refused.
    Done,
    /// Held open, silent, until the client closed it.
    UntilClosed,
}

async fn play(
    stream: &mut TcpStream,
    act: Act,
    last_event_id: Option<&str>,
    starting_after: Option<u64>,
) -> io::Result<Served> {
    match act.kind {
        ActKind::Answer(canned) => answer(stream, &canned).await.map(|()| Served::Done),
        ActKind::Refuse => Ok(Served::Done),
        ActKind::ResetMidBody(body) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len() * 2
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body.as_bytes()[..body.len() / 2]).await?;
            stream.flush().await.map(|()| Served::Done)
        }
        ActKind::Hang => until_closed(stream).await,
        ActKind::Events { events, upto, end } => send_events(stream, &events[..upto], end).await,
        ActKind::Resume {
            events,
            replay_last,
        } => {
            let events = resumed(&events, replay_last, last_event_id, starting_after);
            send_events(stream, events, StreamEnd::Clean).await
        }
    }
}

async fn answer(stream: &mut TcpStream, canned: &Canned) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        canned.status,
        reason(canned.status),
        canned.body.len()
    );
    for (name, value) in &canned.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(canned.body.as_bytes()).await?;
    stream.flush().await?;
    stream.shutdown().await
}

/// The reason phrase of `status` (clients ignore it; `529` has none registered).
fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|status| status.canonical_reason())
        .unwrap_or("Scripted")
}

/// A `200 text/event-stream`, chunked, each event one chunk sent as it is written.
async fn send_events(
    stream: &mut TcpStream,
    events: &[ScriptedEvent],
    end: StreamEnd,
) -> io::Result<Served> {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;
    for event in events {
        let wire = event.to_wire();
        stream
            .write_all(format!("{:x}\r\n{wire}\r\n", wire.len()).as_bytes())
            .await?;
        stream.flush().await?;
    }
    match end {
        StreamEnd::Clean => {
            stream.write_all(b"0\r\n\r\n").await?;
            stream.flush().await?;
            stream.shutdown().await.map(|()| Served::Done)
        }
        // Closed with the chunked body unfinished: the client sees the body cut off.
        StreamEnd::Cut => Ok(Served::Done),
        StreamEnd::Stall => until_closed(stream).await,
    }
}

/// Hold the connection open, sending nothing, until the client closes it.
async fn until_closed(stream: &mut TcpStream) -> io::Result<Served> {
    let mut buffer = [0; 1024];
    // A reset is the client closing it too.
    while let Ok(1..) = stream.read(&mut buffer).await {}
    Ok(Served::UntilClosed)
}

/// Read a request's head and its body (by `content-length`), within bounds; `None` if the
/// client closed first or sent more than the bounds allow.
async fn read_request(stream: &mut TcpStream) -> Option<Asked> {
    let mut read = Vec::new();
    let mut buffer = [0; 4096];
    let head_end = loop {
        if let Some(at) = read.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
        if read.len() > MAX_HEAD {
            return None;
        }
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(count) => read.extend_from_slice(&buffer[..count]),
        }
    };
    let head = String::from_utf8_lossy(&read[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, path) = (request_line.next()?, request_line.next()?);
    let header = |name: &str| {
        head.split("\r\n").skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let length = header("content-length")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_BODY);
    let mut body = read[head_end..].to_vec();
    while body.len() < length {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(count) => body.extend_from_slice(&buffer[..count]),
        }
    }
    Some(Asked {
        method: method.to_owned(),
        path: path.to_owned(),
        last_event_id: header("last-event-id"),
        body: String::from_utf8_lossy(&body).into_owned(),
        at: std::time::Duration::ZERO,
    })
}
