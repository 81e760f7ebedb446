//! [`EndedEarly`]: a stream that ended before its commit point.

use std::error::Error;
use std::fmt;

use crate::class::{Class, Classify};

/// A stream that ended before its commit point: the server closed it after only a preamble.
/// No answer came, so it classifies as [`Class::Transport`], as a connection cut there does.
///
/// A stream with a commit rule ([`RetryStream::commit_when`](crate::RetryStream::commit_when))
/// needs an error type that can hold one (`From<EndedEarly>`); with thiserror, a variant
/// `#[error(transparent)] Ended(#[from] retry_runtime::EndedEarly)`.
///
/// ```
/// use retry_runtime::{Class, Classify, EndedEarly};
///
/// let ended = EndedEarly::new(2);
/// assert_eq!(ended.classify(), Class::Transport);
/// assert_eq!(ended.to_string(), "the stream ended before its first content, after 2 items of preamble");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndedEarly {
    held: usize,
}

impl EndedEarly {
    /// A stream that ended after `held` items, none of them content.
    pub const fn new(held: usize) -> EndedEarly {
        EndedEarly { held }
    }

    /// How many items it had sent, none of them content.
    pub const fn held(&self) -> usize {
        self.held
    }
}

impl fmt::Display for EndedEarly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the stream ended before its first content, after {} item{} of preamble",
            self.held,
            if self.held == 1 { "" } else { "s" }
        )
    }
}

impl Error for EndedEarly {}

impl Classify for EndedEarly {
    fn classify(&self) -> Class {
        Class::Transport
    }
}
