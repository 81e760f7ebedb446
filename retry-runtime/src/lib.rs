//! Retry what fails fast, and only that.
//!
//! `retry-runtime` makes retrying a fallible async call a one-line, reviewable decision. A
//! failure says what it means through [`Classify`]; a [`Policy`] says which classes are worth
//! another try and how long to wait; the engine never outlives the [`Turn`] it serves, never
//! retries an answer, and never turns an exhausted ladder into a different verdict.
//!
//! ```
//! use retry_runtime::{testing, Class, Classify, Policy, Retry};
//! use std::time::Duration;
//!
//! #[derive(Debug)]
//! struct Status(u16);
//!
//! impl std::fmt::Display for Status {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         write!(f, "HTTP {}", self.0)
//!     }
//! }
//!
//! impl Classify for Status {
//!     fn classify(&self) -> Class {
//!         match self.0 {
//!             429 => Class::RateLimited { retry_after: None },
//!             502..=504 => Class::Unavailable { retry_after: None },
//!             500 => Class::ServerError,
//!             _ => Class::Definitive,
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // Two 503s, then an answer: retried twice, after 250 and 500 ms.
//! let (result, recorded) = testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |attempt| {
//!     if attempt <= 2 { Err(Status(503)) } else { Ok("reply") }
//! }))
//! .await;
//! assert_eq!(result.unwrap(), "reply");
//! assert_eq!(recorded.waits(), [250, 500].map(Duration::from_millis));
//!
//! // A 400 is an answer: one attempt, no wait.
//! let gave_up = Retry::new(&Policy::AVAILABILITY)
//!     .run(async |_| Err::<(), _>(Status(400)))
//!     .await
//!     .unwrap_err();
//! assert_eq!(gave_up.attempts(), 1);
//! assert!(!gave_up.is_undetermined());
//! # }
//! ```
//!
//! | module | what |
//! |---|---|
//! | [`class`] | [`Class`], [`ClassSet`], [`Classify`] and its impls for std and tokio errors; [`macro@Classify`], the derive |
//! | [`policy`] | [`Policy`] and the built-ins `availability`, `outage`, `transient` |
//! | [`ladder`] | the wait arithmetic, pure: the CLI and the engine share it |
//! | [`engine`] | [`Retry`], the one loop |
//! | [`verdict`] | [`GaveUp`] and [`StopReason`] |
//! | [`turn`] | [`Turn`], the budget scope that bounds the work in it, and its [`TurnReport`] |
//! | [`timeout`] | [`TimedOut`], the error of an attempt that ran out of time |
//! | [`notice`] | [`Notice`], [`RetryEvent`], tracing events and hooks |
//! | [`quota`] | [`Quota`], the cross-call retry budget |
//! | [`redact`] | [`Redacted`](redact::Redacted): secrets stay out of notices, logs and reports |
//! | [`clock`] | [`Clock`], injectable time, sleep and jitter |
//! | `testing` | (feature `test-util`) a scope where waits are recorded, not slept |
//! | `http` | (feature `http`) the one HTTP table, `HttpError`, `Retry-After`; (feature `reqwest`) `ResponseExt::check_status` and `reqwest::Error` |
//! | `tower` | (feature `tower`) `RetryLayer`: the engine around a tower service, for clients you do not own |
//! | `reqwest_middleware` | (feature `reqwest-middleware`) `RetryMiddleware`: the engine in a `reqwest_middleware` chain |

#![forbid(unsafe_code)]

pub mod class;
pub mod clock;
pub mod engine;
#[cfg(feature = "http")]
pub mod http;
pub mod ladder;
mod nesting;
pub mod notice;
pub mod policy;
pub mod quota;
pub mod redact;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest_middleware;
#[cfg(feature = "test-util")]
pub mod testing;
pub mod timeout;
#[cfg(feature = "tower")]
pub mod tower;
pub mod turn;
pub mod verdict;

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

pub use class::{Class, ClassSet, Classify};
pub use clock::{Clock, Sleep, TokioClock};
pub use engine::{Budget, Retry, TimedRetry};
pub use ladder::Draw;
pub use notice::{Action, Notice, RetryEvent};
pub use policy::{Jitter, Policy, PolicyError, RateLimit};
pub use quota::Quota;
#[doc(inline)]
pub use retry_macros::Classify;
pub use timeout::TimedOut;
pub use turn::{Canceller, Turn, TurnHandle, TurnOutcome, TurnReport};
pub use verdict::{GaveUp, StopReason};

/// Used by the expansions of `#[retry]` and `#[derive(Classify)]`, not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::class::{Class, Classify, RetryAfter};
    pub use crate::clock::TokioClock;
    pub use crate::engine::{Attempt, Attempted, Budget, Retry, Run, Source, TimedRetry};
    pub use crate::policy::{Jitter, Policy, PolicyError};
    pub use crate::quota::Quota;
    pub use crate::timeout::{HoldsTimedOut, TimedOutResult};
    pub use ::core;
    pub use ::core::ops::ControlFlow;
    pub use ::core::time::Duration;

    /// The return type of a `#[retry]` function: a `Result` whose error the engine can
    /// classify and report, however it is spelled (an alias such as `std::io::Result<T>`
    /// included).
    ///
    /// The expansion settles each attempt's output through this one call, placed on the
    /// return type (or on the `E` of `Result<T, E>` where it is written out): a return type
    /// that is not a `Result` gets this trait's message there, an error type without
    /// `Classify` gets that trait's message, and either mistake is reported once.
    #[diagnostic::on_unimplemented(
        message = "`#[retry]` needs a function that returns `Result<T, E>`, not `{Self}`",
        label = "not a `Result`",
        note = "return `Result<T, E>` where `E` implements `retry_runtime::Classify`, so each failure says whether it is worth another try"
    )]
    pub trait Fallible: Sized {
        /// Decide on one attempt's output, and wait if the ladder goes on. `Break` carries
        /// what the function returns: its own error, unchanged, once the ladder stops.
        fn settle<R: Source>(
            self,
            run: &mut Run<R>,
        ) -> impl ::core::future::Future<Output = ControlFlow<Self>>;
    }

    impl<T, E: Classify + ::core::fmt::Display> Fallible for ::core::result::Result<T, E> {
        async fn settle<R: Source>(self, run: &mut Run<R>) -> ControlFlow<Self> {
            match self {
                Ok(value) => {
                    run.succeeded();
                    ControlFlow::Break(Ok(value))
                }
                // A failure may wait: the engine's state for it lives in a box, made only on
                // this path, so the function's own future stays a few words larger than the
                // plain function's.
                Err(error) => match ::std::boxed::Box::pin(run.failed(error)).await {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(gave_up) => ControlFlow::Break(Err(gave_up.into_error())),
                },
            }
        }
    }

    /// What is wrong with a policy the attribute built, in the attribute's terms; `None` if
    /// nothing. The expansion panics with it in `const` evaluation, so it is a compile error.
    pub const fn policy_problem(policy: &Policy) -> ::core::option::Option<&'static str> {
        match policy.check() {
            Ok(()) => None,
            Err(PolicyError::NoAttempts) => Some(
                "the policy makes no attempt (`attempts` is 0); use `attempts = 1` for a call that is never retried",
            ),
            Err(PolicyError::ZeroBase) => Some(
                "the policy's first wait is zero, so the ladder would not back off; set `base_ms` to at least 1",
            ),
            Err(PolicyError::CapBelowBase) => {
                Some("the policy's cap is below its first wait; raise `cap_ms` or lower `base_ms`")
            }
            Err(PolicyError::ShrinkingMultiplier) => Some(
                "the policy's `multiplier` is below 1, so waits would shrink; use `multiplier = 1` for a constant ladder",
            ),
            Err(PolicyError::TooManyAttempts) => Some(
                "the policy makes more than 134217727 attempts, the most a policy may; lower `attempts`",
            ),
            Err(PolicyError::WaitsTooLong) => Some(
                "the policy's ladder could wait longer than 49 days in all, hints included; lower `attempts`",
            ),
        }
    }
}
