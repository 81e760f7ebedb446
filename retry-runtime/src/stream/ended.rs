//! [`EndedEarly`]: a stream that ended before it should have: before its commit point, before
//! it was complete, or (resumed) with nothing new.

use std::error::Error;
use std::fmt;

use crate::class::{Class, Classify};

/// A stream that ended cleanly where it should not have. No answer came, so it classifies as
/// [`Class::Transport`], as a connection cut there does:
///
/// - before its commit point: the server closed it after only a preamble
///   ([`RetryStream::commit_when`](crate::RetryStream::commit_when));
/// - before it was complete ([`RetryStream::complete_when`](crate::RetryStream::complete_when)):
///   a graceful close, which a resumable stream resumes;
/// - resumed, with nothing new: the reopened stream ended, or stayed silent, without an item
///   the caller had not had ([`RetryStream::resume`](crate::RetryStream::resume)).
///
/// A stream with one of those rules needs an error type that can hold one
/// (`From<EndedEarly>`); with thiserror, a variant
/// `#[error(transparent)] Ended(#[from] retry_runtime::EndedEarly)`.
///
/// ```
/// use retry_runtime::{Class, Classify, EndedEarly, Ending};
///
/// let ended = EndedEarly::new(2);
/// assert_eq!(ended.classify(), Class::Transport);
/// assert_eq!(ended.ending(), Ending::BeforeContent);
/// assert_eq!(ended.to_string(), "the stream ended before its first content, after 2 items of preamble");
/// assert_eq!(EndedEarly::nothing_new().to_string(), "the resumed stream brought nothing new");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndedEarly {
    held: usize,
    ending: Ending,
}

/// Where a stream ended that should not have ([`EndedEarly::ending`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// Before its commit point: only a preamble came.
    BeforeContent,
    /// Before its complete item: a graceful close.
    BeforeComplete,
    /// A resume that brought nothing new: it ended, or stayed silent, with no item the caller
    /// had not had.
    NothingNew,
}

impl EndedEarly {
    /// A stream that ended after `held` items, none of them content.
    pub const fn new(held: usize) -> EndedEarly {
        EndedEarly {
            held,
            ending: Ending::BeforeContent,
        }
    }

    /// A stream closed before its complete item, after `held` items held before its commit
    /// point (0 past it).
    pub const fn incomplete(held: usize) -> EndedEarly {
        EndedEarly {
            held,
            ending: Ending::BeforeComplete,
        }
    }

    /// A resumed stream that brought nothing new.
    pub const fn nothing_new() -> EndedEarly {
        EndedEarly {
            held: 0,
            ending: Ending::NothingNew,
        }
    }

    /// How many items it had held before its commit point.
    pub const fn held(&self) -> usize {
        self.held
    }

    /// Where it ended.
    pub const fn ending(&self) -> Ending {
        self.ending
    }
}

impl fmt::Display for EndedEarly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ending {
            Ending::BeforeContent => write!(
                f,
                "the stream ended before its first content, after {} item{} of preamble",
                self.held,
                if self.held == 1 { "" } else { "s" }
            ),
            Ending::BeforeComplete => f.write_str("the stream closed before it was complete"),
            Ending::NothingNew => f.write_str("the resumed stream brought nothing new"),
        }
    }
}

impl Error for EndedEarly {}

/// An error type that can hold an [`EndedEarly`]: every type that implements
/// `From<EndedEarly>`. The stream's rules that let it end early ask for it, so a missing
/// `From` is reported at the rule, with the fix. Not public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a stream that can end early (`commit_when`, `complete_when`, `resume`) needs an error type that can hold a `retry_runtime::EndedEarly`, and `{Self}` cannot",
    label = "`{Self}` does not implement `From<retry_runtime::EndedEarly>`",
    note = "add a variant for it to `{Self}` (with thiserror: `#[error(transparent)] Ended(#[from] retry_runtime::EndedEarly)`), or use `retry_runtime::http::CallError` (features `reqwest` and `stream`), which holds it"
)]
pub trait HoldsEndedEarly {
    /// The error of a stream that ended early.
    fn hold(ended: EndedEarly) -> Self;
}

impl<E: From<EndedEarly>> HoldsEndedEarly for E {
    fn hold(ended: EndedEarly) -> Self {
        E::from(ended)
    }
}

impl Classify for EndedEarly {
    fn classify(&self) -> Class {
        Class::Transport
    }
}
