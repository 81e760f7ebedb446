//! The closure adapter: a script played in-process, as the body of a `Retry::run` attempt or
//! of a `#[retry]` function, with no socket. Its failures classify by the one table (an
//! answer's status, headers and body through `HttpError`); it must not keep a table of its own.

use std::fmt;
use std::io;

use crate::class::{Class, Classify};
use crate::http::HttpError;
use crate::test_scope::ScopeClock;
use crate::testing::act::{Act, ActKind, ScriptedEvent, StreamEnd, resumed};
use crate::testing::script::{Asked, Script};

/// Why a scripted call failed: a status the table reads, or no answer at all.
///
/// ```
/// use retry_runtime::testing::{Act, ActError, Script};
/// use retry_runtime::{Class, Classify};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let script = Script::new([Act::anthropic_overloaded()]);
/// let error: ActError = script.call("claude").await.unwrap_err();
/// assert_eq!(error.classify(), Class::Unavailable { retry_after: None });
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ActError {
    /// A status that is not a success, with the act's headers and body.
    Status(HttpError),
    /// No answer: refused, reset mid-body, a stream cut off.
    Transport(io::Error),
    /// A gRPC status that is not `OK`, and its pushback if it had one (feature `grpc`).
    #[cfg(feature = "grpc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
    Grpc {
        /// The status code.
        code: i32,
        /// Its `grpc-retry-pushback-ms`, read by the gRPC table.
        pushback: Option<crate::grpc::Pushback>,
    },
}

impl Classify for ActError {
    fn classify(&self) -> Class {
        match self {
            ActError::Status(error) => error.classify(),
            ActError::Transport(_) => Class::Transport,
            #[cfg(feature = "grpc")]
            ActError::Grpc { code, pushback } => {
                crate::grpc::classify_status(*code, *pushback, None, false)
            }
        }
    }
}

impl fmt::Display for ActError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActError::Status(error) => write!(f, "scripted answer: {error}"),
            ActError::Transport(error) => write!(f, "scripted failure with no answer: {error}"),
            #[cfg(feature = "grpc")]
            ActError::Grpc { code, .. } => write!(f, "scripted gRPC status {code}"),
        }
    }
}

impl std::error::Error for ActError {}

impl Script {
    /// Play the next act for `key` (a path, or an upstream's name) in-process: an answer's
    /// body, or an [`ActError`]. A stream's events come back as their wire text; a stream
    /// cut off is a transport failure; a hang or a stall never ends, so the attempt's own
    /// timeout ends it. The request is recorded with the current scope's clock; past the
    /// script with no default, the answer is `410 Gone`.
    ///
    /// ```
    /// use retry_runtime::testing::{self, Act, Script};
    /// use retry_runtime::{Policy, Retry};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let script = Script::new([Act::rate_limited(Duration::from_secs(30)), Act::ok("reply")]);
    /// let retry = Retry::new(&Policy::TRANSIENT);
    /// let (reply, recorded) = testing::scope(retry.run(async |_| script.call("/").await)).await;
    /// assert_eq!(reply.unwrap(), "reply");
    /// assert_eq!(recorded.waits(), [Duration::from_secs(30)]);
    /// assert!(script.asked()[1].at - script.asked()[0].at >= Duration::from_secs(30));
    /// # }
    /// ```
    pub async fn call(&self, key: &str) -> Result<String, ActError> {
        let asked = Asked {
            method: String::new(),
            path: key.to_owned(),
            last_event_id: None,
            body: String::new(),
            at: std::time::Duration::ZERO,
        };
        let played = play(self.take(asked, &ScopeClock::current()), None, None).await?;
        #[cfg(feature = "grpc")]
        if let Some(error) = grpc_error(&played.headers) {
            return Err(error);
        }
        if played.status.is_client_error() || played.status.is_server_error() {
            let body = played.body.as_bytes();
            return Err(ActError::Status(HttpError::new(
                played.status,
                &played.headers,
                body,
            )));
        }
        Ok(played.body)
    }
}

/// An act played in-process: the status, headers and body a client would have read.
#[derive(Debug)]
pub(crate) struct Played {
    pub(crate) status: http::StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: String,
}

/// Play `act` with no socket: an answer as it is; a stream as `200 text/event-stream` with
/// its events' wire text; no answer as an [`ActError`]; a hang or a stall never ends, so the
/// attempt's own timeout ends it. A resume starts after `last_event_id` or `starting_after`.
pub(crate) async fn play(
    act: Act,
    last_event_id: Option<&str>,
    starting_after: Option<u64>,
) -> Result<Played, ActError> {
    let events = match act.kind {
        ActKind::Answer(canned) => {
            let mut headers = http::HeaderMap::new();
            for (name, value) in &canned.headers {
                if let (Ok(name), Ok(value)) = (
                    http::HeaderName::try_from(name.as_str()),
                    http::HeaderValue::try_from(value.as_str()),
                ) {
                    headers.append(name, value);
                }
            }
            let status = http::StatusCode::from_u16(canned.status)
                .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
            return Ok(Played {
                status,
                headers,
                body: canned.body,
            });
        }
        ActKind::Refuse => {
            return Err(ActError::Transport(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "connection refused (scripted)",
            )));
        }
        ActKind::ResetMidBody(_)
        | ActKind::Events {
            end: StreamEnd::Cut,
            ..
        } => return Err(cut_off()),
        ActKind::Hang
        | ActKind::Events {
            end: StreamEnd::Stall,
            ..
        } => return std::future::pending().await,
        ActKind::Events { events, upto, .. } => events[..upto].to_vec(),
        ActKind::Resume {
            events,
            replay_last,
        } => resumed(&events, replay_last, last_event_id, starting_after).to_vec(),
    };
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    Ok(Played {
        status: http::StatusCode::OK,
        headers,
        body: events.iter().map(ScriptedEvent::to_wire).collect(),
    })
}

/// A trailers-only gRPC answer whose status is not `OK`, as the error the table reads.
#[cfg(feature = "grpc")]
fn grpc_error(headers: &http::HeaderMap) -> Option<ActError> {
    let code = crate::grpc::parse_code(headers.get("grpc-status")?.to_str().ok()?)?;
    let pushback = headers
        .get(crate::grpc::PUSHBACK)
        .map(|value| crate::grpc::parse_pushback(value.as_bytes()));
    (code != 0).then_some(ActError::Grpc { code, pushback })
}

fn cut_off() -> ActError {
    ActError::Transport(io::Error::new(
        io::ErrorKind::ConnectionReset,
        "the answer was cut off mid-body (scripted)",
    ))
}
