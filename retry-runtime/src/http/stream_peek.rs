//! How a retry layer reads a successful event stream before handing it on ([`StreamPeek`]),
//! and what it can find wrong there ([`Fault`], [`Refusal`]): shared by the layers' reply
//! ([`Reply`](super::Reply)) and the read itself (`peek.rs`).

use std::fmt;
use std::time::Duration;

use super::HttpError;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
use crate::class::Class;
#[cfg(feature = "sse")]
use crate::stream::Limits;

/// How a retry layer reads a successful event stream before handing it on: on by default, up
/// to its commit point, at most 64 KiB or 64 events (`Retry::stream`'s hold limits), with no
/// time bound unless `commit_timeout` sets one. Not public API: the layers' `streams` and
/// `commit_timeout` set it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamPeek {
    pub(crate) on: bool,
    #[cfg(feature = "sse")]
    pub(crate) limits: Limits,
    pub(crate) commit_timeout: Option<Duration>,
}

impl StreamPeek {
    /// Peeking on, with the default limits.
    pub(crate) const DEFAULT: StreamPeek = StreamPeek {
        on: true,
        #[cfg(feature = "sse")]
        limits: Limits::DEFAULT,
        commit_timeout: None,
    };
}

impl Default for StreamPeek {
    fn default() -> StreamPeek {
        StreamPeek::DEFAULT
    }
}

/// What went wrong with a stream before its commit point, but for an error event (an
/// [`HttpError`] from inside the stream). Not public API.
#[doc(hidden)]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The body was cut off: `Transport`.
    Cut,
    /// The stream ended on its preamble: `Transport`, as a cut there is.
    Ended,
    /// No content within the layer's `commit_timeout` (or the rest of the turn): `Timeout`.
    Stalled(Duration),
}

impl Fault {
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn class(self) -> Class {
        match self {
            Fault::Cut | Fault::Ended => Class::Transport,
            Fault::Stalled(_) => Class::Timeout,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Cut => f.write_str("the event stream was cut off before its first content"),
            Fault::Ended => f.write_str("the event stream ended before its first content"),
            Fault::Stalled(after) => write!(
                f,
                "the event stream sent no content within {} ms",
                after.as_millis()
            ),
        }
    }
}

/// Why a response was refused: what the table says of it, or of the error event inside its
/// stream; or what went wrong with its stream. Not public API.
#[doc(hidden)]
#[derive(Debug)]
pub enum Refusal {
    /// The table's verdict on the response, or on an error event inside its stream.
    Answered(HttpError),
    /// The stream broke before its commit point.
    Broken(Fault),
}
