//! What a failure says about trying again: [`Class`], [`ClassSet`] and the [`Classify`] trait,
//! and [`RetryAfter`], the type of a hint field that `#[derive(Classify)]` reads.

use std::fmt;
use std::io;
use std::time::Duration;

/// What a failure says about trying again.
///
/// The engine never reads an error's text: it asks the error for its class through [`Classify`]
/// and retries only the classes its [`Policy`](crate::Policy) names.
///
/// ```
/// use retry_runtime::Class;
///
/// assert!(Class::Unavailable { retry_after: None }.is_transient());
/// assert!(!Class::Definitive.is_transient());
/// assert_eq!(Class::RateLimited { retry_after: None }.name(), "rate_limited");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// No server was reached and there is no status to read: refused, reset, DNS, dropped.
    Transport,
    /// The far side is unwell or overloaded and the question stands: 502, 503, 504, 529, an
    /// `overloaded_error`; maybe with a hint of when to come back (a `Retry-After` on a 503).
    Unavailable {
        /// How long the far side asked us to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The far side failed, and it may be the request's fault: 500.
    ServerError,
    /// The attempt used up its own time.
    Timeout,
    /// Not now, maybe with a hint of when: 429 and its `Retry-After`.
    RateLimited {
        /// How long the far side asked us to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// A limit whose reset outlives any backoff: a 403 with `x-ratelimit-remaining: 0`, a
    /// budget refusal.
    QuotaExhausted,
    /// An answer came back unusable (a partial stream, invalid tool arguments, empty output);
    /// a new try may be valid.
    InvalidOutput,
    /// The work was cancelled or its deadline passed.
    Cancelled,
    /// An answer: the same request gets the same one (400, 401, 403, 404, 413, 422).
    Definitive,
}

impl Class {
    /// Every class, with `Unavailable` and `RateLimited` carrying no hint; in the order of
    /// [`Class::index`]. A slice, not an array, so a new class is not a breaking change.
    pub const ALL: &[Class] = &[
        Class::Transport,
        Class::Unavailable { retry_after: None },
        Class::ServerError,
        Class::Timeout,
        Class::RateLimited { retry_after: None },
        Class::QuotaExhausted,
        Class::InvalidOutput,
        Class::Cancelled,
        Class::Definitive,
    ];

    /// Whether the far side may answer differently later: every class but `Definitive`.
    ///
    /// A transient failure that persisted through a whole ladder is still transient: the
    /// answer is unknown, not negative.
    ///
    /// ```
    /// use retry_runtime::Class;
    /// assert!(Class::Cancelled.is_transient());
    /// assert!(!Class::Definitive.is_transient());
    /// ```
    pub const fn is_transient(&self) -> bool {
        !matches!(self, Class::Definitive)
    }

    /// What a failure of this class says of the far side, in words: "is unavailable".
    pub(crate) const fn state(&self) -> &'static str {
        match self {
            Class::Transport => "could not be reached",
            Class::Unavailable { .. } => "is unavailable",
            Class::ServerError => "failed on its side",
            Class::Timeout => "timed out",
            Class::RateLimited { .. } => "is rate limited",
            Class::QuotaExhausted => "is out of quota",
            Class::InvalidOutput => "returned unusable output",
            Class::Cancelled => "was cancelled",
            Class::Definitive => "answered with an error",
        }
    }

    /// The class's name in `snake_case`, as notices and reports print it.
    ///
    /// ```
    /// assert_eq!(retry_runtime::Class::ServerError.name(), "server_error");
    /// ```
    pub const fn name(&self) -> &'static str {
        match self {
            Class::Transport => "transport",
            Class::Unavailable { .. } => "unavailable",
            Class::ServerError => "server_error",
            Class::Timeout => "timeout",
            Class::RateLimited { .. } => "rate_limited",
            Class::QuotaExhausted => "quota_exhausted",
            Class::InvalidOutput => "invalid_output",
            Class::Cancelled => "cancelled",
            Class::Definitive => "definitive",
        }
    }

    /// The index of this class in [`Class::ALL`].
    ///
    /// ```
    /// use retry_runtime::Class;
    /// assert_eq!(Class::ALL[Class::Timeout.index()], Class::Timeout);
    /// ```
    pub const fn index(&self) -> usize {
        match self {
            Class::Transport => 0,
            Class::Unavailable { .. } => 1,
            Class::ServerError => 2,
            Class::Timeout => 3,
            Class::RateLimited { .. } => 4,
            Class::QuotaExhausted => 5,
            Class::InvalidOutput => 6,
            Class::Cancelled => 7,
            Class::Definitive => 8,
        }
    }

    /// The far side's hint of when to try again, carried by `Unavailable` and `RateLimited`.
    ///
    /// ```
    /// use retry_runtime::Class;
    /// use std::time::Duration;
    /// let hint = Some(Duration::from_secs(3));
    /// assert_eq!(Class::Unavailable { retry_after: hint }.retry_after(), hint);
    /// assert_eq!(Class::Transport.retry_after(), None);
    /// ```
    pub const fn retry_after(&self) -> Option<Duration> {
        match self {
            Class::Unavailable { retry_after } | Class::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }

    const fn bit(&self) -> u16 {
        1 << self.index()
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.retry_after() {
            // A hint of forever: the far side asked not to be retried (gRPC's negative pushback).
            Some(Duration::MAX) => write!(f, "{} (do not retry)", self.name()),
            Some(hint) => write!(f, "{} (retry after {} ms)", self.name(), hint.as_millis()),
            None => f.write_str(self.name()),
        }
    }
}

/// A set of classes, built in `const` context: which failures a policy retries. It holds kinds:
/// a hint carried by `Unavailable` or `RateLimited` is ignored.
///
/// ```
/// use retry_runtime::{Class, ClassSet};
///
/// const RETRIED: ClassSet = ClassSet::EMPTY.with(Class::Transport).with(Class::Unavailable { retry_after: None });
/// assert!(RETRIED.contains(&Class::Transport));
/// assert!(!RETRIED.contains(&Class::ServerError));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClassSet(u16);

impl ClassSet {
    /// No class.
    pub const EMPTY: ClassSet = ClassSet(0);

    /// This set with `class` added (a hint is ignored: the set holds kinds).
    pub const fn with(self, class: Class) -> ClassSet {
        ClassSet(self.0 | class.bit())
    }

    /// This set with `class` removed.
    pub const fn without(self, class: Class) -> ClassSet {
        ClassSet(self.0 & !class.bit())
    }

    /// Whether `class` is in the set.
    pub const fn contains(&self, class: &Class) -> bool {
        self.0 & class.bit() != 0
    }
}

impl fmt::Debug for ClassSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                Class::ALL
                    .iter()
                    .filter(|c| self.contains(c))
                    .map(Class::name),
            )
            .finish()
    }
}

/// Says what a failure means for trying again.
///
/// The error type of every retried call implements this; `#[retry]` refuses to compile without
/// it, so each program decides in one place which of its failures are worth another try.
/// Implement it by hand, as here, or derive it with
/// [`#[derive(Classify)]`](macro@crate::Classify), which makes each variant a visible decision
/// and a new variant a compile error until it is decided.
///
/// ```
/// use retry_runtime::{Class, Classify};
///
/// enum ModelError {
///     Status(u16),
///     Connect,
/// }
///
/// impl Classify for ModelError {
///     fn classify(&self) -> Class {
///         match self {
///             ModelError::Connect => Class::Transport,
///             ModelError::Status(502..=504) => Class::Unavailable { retry_after: None },
///             ModelError::Status(429) => Class::RateLimited { retry_after: None },
///             ModelError::Status(500) => Class::ServerError,
///             ModelError::Status(_) => Class::Definitive,
///         }
///     }
/// }
///
/// assert_eq!(ModelError::Status(503).classify(), Class::Unavailable { retry_after: None });
/// assert_eq!(ModelError::Status(404).classify(), Class::Definitive);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say whether a failure is worth retrying",
    label = "this error type does not implement `Classify`",
    note = "derive it, `#[derive(Classify)]` with a `#[classify(...)]` on each variant, or implement `retry_runtime::Classify` for `{Self}`: `fn classify(&self) -> retry_runtime::Class` returns `Class::Transport`, `Class::Unavailable`, `Class::Definitive`, ...",
    note = "if `{Self}` is not your own type (a library's error, `String`, `dyn Error`), wrap it in an error type of your own and derive `Classify` on that"
)]
pub trait Classify {
    /// The class of this failure.
    fn classify(&self) -> Class;

    /// How far the attempt got before this failure, for the notice that tells a person:
    /// [`Reached::Response`] for a failure after a response's head came back (a body cut
    /// off), so the server is not told as one that "could not be reached".
    /// [`Reached::Nothing`] unless implemented; `reqwest::Error`, the `http` module's errors
    /// and `#[derive(Classify)]`'s `#[classify(from)]` say it.
    fn reached(&self) -> Reached {
        Reached::Nothing
    }
}

impl<T: Classify + ?Sized> Classify for &T {
    fn classify(&self) -> Class {
        (**self).classify()
    }

    fn reached(&self) -> Reached {
        (**self).reached()
    }
}

impl<T: Classify + ?Sized> Classify for Box<T> {
    fn classify(&self) -> Class {
        (**self).classify()
    }

    fn reached(&self) -> Reached {
        (**self).reached()
    }
}

impl Classify for Class {
    fn classify(&self) -> Class {
        *self
    }
}

/// The type of a field that holds the far side's hint of when to try again: a
/// [`Duration`], or an `Option<Duration>` (`None`: no hint).
///
/// `#[derive(Classify)]` reads a field marked `#[classify(retry_after)]` through this trait,
/// placed on the field's type: it is checked by the type, not by how it is spelt, so an alias
/// of `std::time::Duration` is accepted and a type of your own that is named `Duration` is
/// refused at the field, with this trait's message. Implement it for a type of your own only
/// if that type is a hint.
///
/// ```
/// use retry_runtime::RetryAfter;
/// use std::time::Duration;
///
/// assert_eq!(Duration::from_secs(3).retry_after(), Some(Duration::from_secs(3)));
/// assert_eq!(None::<Duration>.retry_after(), None);
/// ```
#[diagnostic::on_unimplemented(
    message = "a `#[classify(retry_after)]` field holds a `std::time::Duration` or an `Option<std::time::Duration>`, not `{Self}`",
    label = "not a `std::time::Duration` or `Option<std::time::Duration>`",
    note = "convert the hint to a `std::time::Duration` where the error is made (`Duration::from_secs(n)`), or remove `#[classify(retry_after)]`"
)]
pub trait RetryAfter {
    /// The hint, if there is one.
    fn retry_after(&self) -> Option<Duration>;
}

// Not listed as "other types that implement": the message already names both.
#[diagnostic::do_not_recommend]
impl RetryAfter for Duration {
    fn retry_after(&self) -> Option<Duration> {
        Some(*self)
    }
}

#[diagnostic::do_not_recommend]
impl RetryAfter for Option<Duration> {
    fn retry_after(&self) -> Option<Duration> {
        *self
    }
}

/// I/O errors by kind. Failing to reach a server is never an answer.
///
/// - `Transport`: the network did not carry the call (`ConnectionRefused`, `ConnectionReset`,
///   `ConnectionAborted`, `NotConnected`, `BrokenPipe`, `UnexpectedEof`, `HostUnreachable`,
///   `NetworkUnreachable`, `NetworkDown`, `AddrNotAvailable`, `Interrupted`, `WouldBlock`),
///   and `Other` or an uncategorized kind, which is what a failed name lookup gives: no server
///   answered, so the question stands.
/// - `Timeout`: `TimedOut`; the attempt had its time.
/// - `Definitive`: the local kinds (`NotFound`, `PermissionDenied`, `InvalidInput`,
///   `InvalidData`, `AlreadyExists`, `Unsupported`, `OutOfMemory`, `StorageFull`, the
///   file-system kinds, ...): the same call gets the same answer.
///
/// ```
/// use retry_runtime::{Class, Classify};
/// use std::io::{Error, ErrorKind};
///
/// assert_eq!(Error::from(ErrorKind::ConnectionRefused).classify(), Class::Transport);
/// assert_eq!(Error::other("failed to lookup address information").classify(), Class::Transport);
/// assert_eq!(Error::from(ErrorKind::TimedOut).classify(), Class::Timeout);
/// assert_eq!(Error::from(ErrorKind::NotFound).classify(), Class::Definitive);
/// ```
impl Classify for io::Error {
    fn classify(&self) -> Class {
        use io::ErrorKind::*;
        match self.kind() {
            TimedOut => Class::Timeout,
            NotFound
            | PermissionDenied
            | InvalidInput
            | InvalidData
            | AlreadyExists
            | Unsupported
            | OutOfMemory
            | StorageFull
            | WriteZero
            | NotADirectory
            | IsADirectory
            | DirectoryNotEmpty
            | ReadOnlyFilesystem
            | StaleNetworkFileHandle
            | NotSeekable
            | QuotaExceeded
            | FileTooLarge
            | ResourceBusy
            | ExecutableFileBusy
            | Deadlock
            | CrossesDevices
            | TooManyLinks
            | InvalidFilename
            | ArgumentListTooLong => Class::Definitive,
            // The network kinds, `Other`, and the uncategorized kind a failed name lookup
            // produces (which cannot be named).
            _ => Class::Transport,
        }
    }
}

/// A `tokio::time::timeout` that elapsed is a `Timeout`.
///
/// ```
/// use retry_runtime::{Class, Classify};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let elapsed = tokio::time::timeout(std::time::Duration::from_millis(1), std::future::pending::<()>())
///     .await
///     .unwrap_err();
/// assert_eq!(elapsed.classify(), Class::Timeout);
/// # }
/// ```
impl Classify for tokio::time::error::Elapsed {
    fn classify(&self) -> Class {
        Class::Timeout
    }
}

/// Whether a quota's name says it is counted per day, so that it resets at midnight and no
/// ladder outlasts it: Google's `GenerateRequestsPerDayPerProjectPerModel-FreeTier`,
/// `GenerateContentInputTokensPerModelPerDay`, or a `requests_per_day`.
#[cfg(any(feature = "http", feature = "tonic"))]
pub(crate) fn is_per_day(quota: &str) -> bool {
    let lower = quota.to_ascii_lowercase();
    lower.contains("perday") || lower.contains("per_day")
}

/// How far a failed attempt got before it failed: what a notice says of a server that
/// answered, rather than "could not be reached". A stream's attempt knows it itself; a call's
/// failure says it ([`Classify::reached`](crate::Classify::reached)).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Reached {
    /// Nothing came back: a call's failure, or a stream that was never opened.
    #[default]
    Nothing,
    /// A call's response head came back (a `200`, say), and the failure came after it: its
    /// body was cut off, or could not be read.
    Response,
    /// A stream was open (its head came back), and failed before its first content.
    Stream,
    /// The stream had delivered output to the caller: it failed past its commit point.
    Output,
}
