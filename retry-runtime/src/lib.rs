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
//! ## The surface
//!
//! Each item has one path. At the root, what a user writes:
//!
//! | items | what |
//! |---|---|
//! | [`retry`], [`Classify`] (trait and derive) | the attribute, and what a failure says |
//! | [`Class`], [`ClassSet`], [`RetryAfter`] | the classes, sets of them, a derive's hint field |
//! | [`Policy`], [`Jitter`], [`RateLimit`], [`PolicyError`] | which classes retry, and the ladder |
//! | [`Retry`], [`TimedRetry`], [`Budget`], [`parse_duration`], [`DurationError`] | the explicit API and the budget it fits |
//! | [`GaveUp`], [`StopReason`], [`TimedOut`], [`TimeoutBound`] | the verdict of a ladder that stopped |
//! | [`Turn`], [`TurnReport`], [`Canceller`] | the budget scope, its report, its cancel |
//! | [`Quota`] | the cross-call retry budget |
//! | [`Clock`], [`Draw`], [`Sleep`], [`TokioClock`], [`TokioSleep`] | time, sleep and jitter, injectable |
//!
//! Families with more to offer have a module: [`turn`] (carrying a turn into a task, what is
//! left of it, its outcome and records), [`notice`] (events and hooks), [`ladder`] (the wait
//! arithmetic, pure, shared with the `backoff` CLI), [`redact`] (what the library logs), and,
//! behind features, `http` (the one HTTP table), `tower` and `reqwest_middleware` (the engine
//! in clients you do not own), and `testing` (feature `test-util`: waits recorded, not
//! slept). `tests/tests/public_api.rs` names every item, so the surface cannot change unseen.

#![forbid(unsafe_code)]

mod budget;
mod class;
mod clock;
mod draw;
mod engine;
#[cfg(feature = "http")]
pub mod http;
pub mod ladder;
mod nesting;
pub mod notice;
mod policy;
mod quota;
pub mod redact;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest_middleware;
#[cfg(feature = "test-util")]
pub mod testing;
mod timeout;
#[cfg(feature = "tower")]
pub mod tower;
// The scope's implementation; its public face is `turn` below, less what the root exports.
#[path = "turn.rs"]
mod scope;
mod verdict;

/// The budget scope's family: carrying a [`Turn`] into a task, what is left of it, its outcome
/// and the records of its report. `Turn`, `TurnReport` and `Canceller` are at the root.
pub mod turn {
    pub use crate::scope::{
        CutWait, GaveUpRecord, InFlight, TurnHandle, TurnOutcome, current, remaining,
    };
}

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

pub use budget::{Budget, DurationError, parse_duration};
pub use class::{Class, ClassSet, Classify, RetryAfter};
pub use clock::{Clock, Sleep, TokioClock, TokioSleep};
pub use draw::Draw;
pub use engine::{Retry, TimedRetry};
pub use policy::{Jitter, Policy, PolicyError, RateLimit};
pub use quota::Quota;
#[doc(inline)]
pub use retry_macros::Classify;
pub use scope::{Canceller, Turn, TurnReport};
pub use timeout::{TimedOut, TimeoutBound};
// Named by rustc's message about a `timeout` key, which must not name `__private`.
#[doc(hidden)]
pub use timeout::HoldsTimedOut;
pub use verdict::{GaveUp, StopReason};

/// Used by the expansions of `#[retry]` and `#[derive(Classify)]`, not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::budget::Budget;
    pub use crate::class::{Class, Classify, RetryAfter};
    pub use crate::clock::TokioClock;
    pub use crate::engine::{Attempt, Attempted, Retry, Run, Source, TimedRetry};
    pub use crate::policy::{Jitter, Policy, PolicyError};
    pub use crate::quota::Quota;
    pub use crate::timeout::HoldsTimedOut;
    pub use ::core;
    pub use ::core::ops::ControlFlow;
    pub use ::core::time::Duration;

    /// An attempt's error, with the two abilities the engine needs given as functions: the
    /// expansion writes them at the user's `E` (`|e| Classify::classify(e)`), so a missing
    /// `Classify` or `Display` is reported once, there, naming the user's type and the trait,
    /// and never this struct.
    pub struct Judged<E, C, D> {
        error: E,
        classify: C,
        display: D,
    }

    impl<E, C, D> Classify for Judged<E, C, D>
    where
        C: Fn(&E) -> Class,
    {
        #[inline]
        fn classify(&self) -> Class {
            (self.classify)(&self.error)
        }
    }

    impl<E, C, D> ::core::fmt::Display for Judged<E, C, D>
    where
        D: Fn(&E, &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result,
    {
        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            (self.display)(&self.error, f)
        }
    }

    /// Decide on a failed attempt: `Ok(())` once the wait before the next attempt is over,
    /// or the error unchanged once the ladder stops. The engine's state for it lives in a box,
    /// made only on this path, so the function's own future stays a few words larger than the
    /// plain function's. `classify` and `display` are zero-sized closures.
    pub async fn failed<R: Source, E, C, D>(
        run: &mut Run<R>,
        error: E,
        classify: C,
        display: D,
    ) -> ::core::result::Result<(), E>
    where
        C: Fn(&E) -> Class,
        D: Fn(&E, &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result,
    {
        let judged = Judged {
            error,
            classify,
            display,
        };
        match ::std::boxed::Box::pin(run.failed(judged)).await {
            Ok(()) => Ok(()),
            Err(gave_up) => Err(gave_up.into_error().error),
        }
    }

    /// A compile-time message with figures in it: `const` evaluation cannot use `format!`,
    /// so the text is written into a fixed buffer, a piece at a time.
    pub struct Message {
        bytes: [u8; 320],
        len: usize,
    }

    impl Default for Message {
        fn default() -> Message {
            Message::new()
        }
    }

    impl Message {
        /// An empty message.
        pub const fn new() -> Message {
            Message {
                bytes: [0; 320],
                len: 0,
            }
        }

        /// The message with `text` after it (cut at the buffer's end, on a character).
        pub const fn text(mut self, text: &str) -> Message {
            let bytes = text.as_bytes();
            let mut i = 0;
            while i < bytes.len() && self.len < self.bytes.len() {
                self.bytes[self.len] = bytes[i];
                self.len += 1;
                i += 1;
            }
            while self.len > 0 && (self.bytes[self.len - 1] & 0b1100_0000) == 0b1000_0000 {
                self.len -= 1;
            }
            self
        }

        /// The message with `n` after it, in decimal.
        pub const fn number(self, n: u128) -> Message {
            let mut digits = [0u8; 40];
            let mut at = digits.len();
            let mut rest = n;
            loop {
                at -= 1;
                digits[at] = b'0' + (rest % 10) as u8;
                rest /= 10;
                if rest == 0 {
                    break;
                }
            }
            let (_, written) = digits.split_at(at);
            match ::core::str::from_utf8(written) {
                Ok(text) => self.text(text),
                Err(_) => self,
            }
        }

        /// A duration as a person reads it: `81 s`, `1750 ms`.
        pub const fn duration(self, d: Duration) -> Message {
            let millis = d.as_millis()
                + if d.subsec_nanos().is_multiple_of(1_000_000) {
                    0
                } else {
                    1
                };
            if millis.is_multiple_of(1000) {
                self.number(millis / 1000).text(" s")
            } else {
                self.number(millis).text(" ms")
            }
        }

        /// The text so far.
        pub const fn as_str(&self) -> &str {
            let (written, _) = self.bytes.split_at(self.len);
            match ::core::str::from_utf8(written) {
                Ok(text) => text,
                Err(_) => "",
            }
        }
    }

    /// What is wrong with a policy the attribute built, in the attribute's terms and with its
    /// figures; `None` if nothing. The expansion panics with it in `const` evaluation, so it
    /// is a compile error.
    pub const fn policy_problem(policy: &Policy) -> ::core::option::Option<Message> {
        let m = Message::new();
        Some(match policy.check() {
            Ok(()) => return None,
            Err(PolicyError::NoAttempts) => m.text(
                "the policy makes no attempt (`attempts` is 0); use `attempts = 1` for a call that is never retried",
            ),
            Err(PolicyError::ZeroBase) => m.text(
                "the policy's first wait is zero, so the ladder would not back off; set `base_ms` to at least 1",
            ),
            Err(PolicyError::CapBelowBase) => m
                .text("`cap_ms` ")
                .number(policy.cap().as_millis())
                .text(" is below the policy's base, ")
                .number(policy.base().as_millis())
                .text(" ms: raise `cap_ms` to at least ")
                .number(policy.base().as_millis())
                .text(" or lower `base_ms`"),
            Err(PolicyError::ShrinkingMultiplier) => m.text(
                "the policy's `multiplier` is below 1, so waits would shrink; use `multiplier = 1` for a constant ladder",
            ),
            Err(PolicyError::TooManyAttempts) => m
                .text("the policy makes ")
                .number(policy.attempts() as u128)
                .text(" attempts, more than the most a policy may, 134217727; lower `attempts`"),
            Err(PolicyError::WaitsTooLong) => m.text(
                "the policy's ladder could wait longer than 49 days in all, hints included; lower `attempts`",
            ),
        })
    }

    /// "the ladder's worst case, 81 s, outlives `budget = \"60s\"`", if it does.
    pub const fn budget_problem(
        policy: &Policy,
        budget: Duration,
        written: &str,
    ) -> ::core::option::Option<Message> {
        let worst = policy.worst_case_wait();
        if worst.as_nanos() <= budget.as_nanos() {
            return None;
        }
        Some(
            Message::new()
                .text("the ladder's worst case, ")
                .duration(worst)
                .text(" of waits, outlives `budget = \"")
                .text(written)
                .text("\"`: lower `attempts` or `base_ms`, or raise `budget` to at least ")
                .duration(worst),
        )
    }
}
