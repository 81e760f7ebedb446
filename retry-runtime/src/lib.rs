//! Retry what fails fast, and only that.
//!
//! `#[retry]` makes retrying a fallible async call a one-line, reviewable decision. A failure
//! says what it means through [`Classify`]; a [`Policy`] says which classes are worth another
//! try and how long to wait; the engine never outlives the [`Turn`] it serves, never retries
//! an answer, and never turns an exhausted ladder into a different verdict.
//!
//! ```
//! use retry_runtime::{retry, testing, Classify};
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::time::Duration;
//!
//! #[derive(Debug, thiserror::Error, Classify)]
//! enum ModelError {
//!     #[error("the model is unavailable")]
//!     #[classify(unavailable)]
//!     Unavailable,
//!     #[error("the request was refused")]
//!     #[classify(definitive)]
//!     BadRequest,
//! }
//!
//! #[retry(policy = "availability", name = "model")]
//! async fn complete(calls: &AtomicU32, answer_on: u32) -> Result<&'static str, ModelError> {
//!     match calls.fetch_add(1, Ordering::SeqCst) + 1 {
//!         n if n < answer_on => Err(ModelError::Unavailable),
//!         n if n == answer_on => Ok("reply"),
//!         _ => Err(ModelError::BadRequest),
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // Two 503-like failures, then an answer: retried twice, after 250 and 500 ms.
//! let calls = AtomicU32::new(0);
//! let (reply, recorded) = testing::scope(complete(&calls, 3)).await;
//! assert_eq!(reply.unwrap(), "reply");
//! assert_eq!(recorded.waits(), [250, 500].map(Duration::from_millis));
//!
//! // An answer is never retried.
//! let calls = AtomicU32::new(1);
//! let (refused, recorded) = testing::scope(complete(&calls, 1)).await;
//! assert!(matches!(refused, Err(ModelError::BadRequest)));
//! assert_eq!(recorded.waits(), []);
//! # }
//! ```
//!
//! ## The guide
//!
//! [`guide`] holds one chapter per capability (the attribute, policies, HTTP and model APIs,
//! streams and their resumption, Google APIs and gRPC, the layers, upstreams, fallback, fleets,
//! turns and notices, the quota, telemetry, testing, the CLI and its lint), every example
//! compiled by `cargo test --doc`.
//!
//! ## The surface
//!
//! Each item has one path. At the root, what a user writes:
//!
//! | items | what |
//! |---|---|
//! | [`retry`], [`Classify`] (trait and derive) | the attribute, and what a failure says |
//! | [`Class`], [`ClassSet`], [`RetryAfter`] | the classes, sets of them, a derive's hint field |
//! | [`Policy`], [`Jitter`], [`RateLimit`], [`PolicyError`] | which classes retry, and the ladder |
//! | [`Retry`], [`TimedRetry`], [`Deadline`], [`parse_duration`], [`DurationError`] | the explicit API and the budget it fits |
//! | `RetryStream`, `EndedEarly`, `Ending`, `DEFAULT_HOLD_ITEMS`, `DEFAULT_HOLD_BYTES` | feature `stream`: [`Retry::stream`], retried until its first content, never replayed after |
//! | `ResumeFrom`, `Resumable`, `DEFAULT_RESUME_SILENCE` | feature `stream`: a cut stream resumed from its last event ID or sequence number ([`RetryStream::resume`]) |
//! | [`GaveUp`], [`StopReason`], [`TimedOut`], [`TimeoutBound`] | the verdict of a ladder that stopped |
//! | [`Turn`], [`TurnReport`], [`Canceller`] | the budget scope, its report, its cancel |
//! | [`Quota`] | the cross-call retry budget |
//! | [`Clock`], [`Draw`], [`BoxSleep`], [`TokioClock`], [`TokioSleep`] | time, sleep and jitter, injectable |
//!
//! Families with more to offer have a module: [`turn`] (carrying a turn into a task, what is
//! left of it, its outcome and records), [`notice`] (events and hooks), [`ladder`] (the wait
//! arithmetic, pure, shared with the `backoff` CLI), [`redact`] (what the library logs),
//! [`meter`] (the metrics' names and labels, recorded with feature `metrics`), and,
//! behind features, `http` (the one HTTP table), `sse` (server-sent events: a bounded
//! decoder, the commit rule, a model's stream with its failures classified), `tower` and
//! `reqwest_middleware` (the engine in clients you do not own), and `testing` (feature
//! `test-util`: waits recorded, not slept; fault scripts with `http`, played on a real socket
//! with `test-server`). `tests/tests/public_api.rs` names every item, so
//! the surface cannot change unseen.
//!
//! ## Features
//!
//! Each feature-gated item names the feature it needs. Rendered from `Cargo.toml`'s own
//! comments, so the list cannot drift from the manifest:
//!
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

mod admission;
mod attempt;
mod class;
mod clock;
mod deadline;
mod draw;
mod engine;
mod expansion;
mod fallback;
#[cfg(feature = "fleet")]
#[cfg_attr(docsrs, doc(cfg(feature = "fleet")))]
pub mod fleet;
#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub mod grpc;
pub mod guide;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod ladder;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod layer;
pub mod meter;
mod nesting;
pub mod notice;
mod op;
mod pace;
mod policy;
mod quota;
pub mod redact;
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub mod reqwest_middleware;
mod route;
#[cfg_attr(not(feature = "spans"), allow(dead_code))]
mod span;
#[cfg(feature = "sse")]
#[cfg_attr(docsrs, doc(cfg(feature = "sse")))]
pub mod sse;
#[cfg(feature = "stream")]
mod stream;
#[cfg(feature = "test-util")]
mod test_scope;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod testing;
mod timeout;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
pub mod turn;
mod upstream;
mod verdict;
mod wait;

/// The attribute: `#[retry(...)]` on an `async fn` returning `Result<T, E>`, where `E`
/// implements [`Classify`], retries each call under a [`Policy`] on this crate's engine.
/// Its keys are listed below; a [`Turn`] bounds it, a [`Quota`] can ration it, and
/// [`testing::scope`] records its waits in tests.
///
/// ```
/// use retry_runtime::{retry, testing, Class};
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
///
/// #[retry(policy = "transient")]
/// async fn poll(calls: &AtomicU32) -> Result<u32, Class> {
///     match calls.fetch_add(1, Ordering::SeqCst) {
///         0 => Err(Class::ServerError),
///         1 => Err(Class::Timeout),
///         n => Ok(n + 1),
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let calls = AtomicU32::new(0);
/// let (result, recorded) = testing::scope(poll(&calls)).await;
/// assert_eq!(result, Ok(3));
/// assert_eq!(recorded.waits(), [1, 2].map(Duration::from_secs));
/// # }
/// ```
#[doc(inline)]
pub use retry_macros::retry;

pub use class::{Class, ClassSet, Classify, RetryAfter};
pub use clock::{BoxSleep, Clock, TokioClock, TokioSleep};
pub use deadline::{Deadline, DurationError, parse_duration};
pub use draw::Draw;
pub use engine::{Retry, TimedRetry};
pub use fallback::{Answered, Upstreams};
pub use pace::{RateLeft, RateSaid};
pub use policy::{Jitter, Policy, PolicyError, RateLimit};
pub use quota::Quota;
#[doc(inline)]
pub use retry_macros::Classify;
pub use route::{AcrossUpstreams, NoUpstream, OneUpstream, Placement};
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
pub use stream::{
    DEFAULT_HOLD_BYTES, DEFAULT_HOLD_ITEMS, DEFAULT_RESUME_SILENCE, EndedEarly, Ending, ItemRules,
    OpenAttempt, OpenOnUpstream, Resumable, ResumeFrom, RetryStream, StreamRules,
};
pub use timeout::{TimedOut, TimeoutBound};
pub use turn::cancel::Canceller;
pub use turn::report::TurnReport;
pub use turn::run::Turn;
pub use upstream::{
    Admission, PausedBy, Upstream, UpstreamEffect, UpstreamPaused, UpstreamRef, UpstreamStatus,
};
// Named by rustc's message about a `timeout` key, which must not name `__private`.
#[doc(hidden)]
pub use timeout::HoldsTimedOut;
// Named by rustc's message about a retry on an upstream, likewise.
#[doc(hidden)]
pub use admission::HoldsUpstreamPaused;
#[doc(hidden)]
pub use route::HeldBack;
// Named by rustc's messages about a stream's rules and timeouts, likewise.
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
#[doc(hidden)]
pub use stream::HoldsEndedEarly;
#[doc(hidden)]
pub use timeout::HoldsStreamTimeout;
// Named by rustc's message about an error type without `Display`, likewise.
#[doc(hidden)]
pub use expansion::Reportable;
pub use verdict::{GaveUp, LeftBecause, StopReason, UpstreamLeft};

/// Used by the expansions of `#[retry]` and `#[derive(Classify)]`, not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::admission::{Admitted, AdmittedOn, HoldsUpstreamPaused};
    pub use crate::class::{Class, Classify, RetryAfter};
    pub use crate::deadline::Deadline;
    pub use crate::engine::{Call, Retry, TimedRetry};
    pub use crate::expansion::{Reportable, budget_problem, failed, placed_failed, policy_problem};
    pub use crate::fallback::{Routed, Upstreams};
    pub use crate::policy::{Jitter, Policy};
    pub use crate::quota::Quota;
    pub use crate::route::Place;
    pub use crate::timeout::HoldsTimedOut;
    pub use crate::upstream::{Named, Upstream};
    pub use ::core;
}
