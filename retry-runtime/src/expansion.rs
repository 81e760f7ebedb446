//! The glue `#[retry]`'s expansion calls, reached only through the hidden `__private`
//! module: the check of an attempt's error at the user's `E`, the failure path (the wait, held
//! in place, and the user's error given back), and the const checks of a policy and a budget,
//! worded in the attribute's terms.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::class::{Class, Classify};
use crate::clock::Clock;
use crate::engine::{Call, Held, Source, Waiting};
use crate::fallback::Next;
use crate::policy::{Policy, PolicyError};
use crate::route::Place;

/// An attempt's error, with the two abilities the engine needs given as functions: the
/// expansion writes them at the user's `E` (`|e| Classify::classify(e)`), so a missing
/// `Classify` or `Display` is reported once, there, naming the user's type and the trait,
/// and never this struct. Unnamed by the expansion: it is inside the wait [`failed`] returns.
#[allow(unreachable_pub)]
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

/// An error type `#[retry]` can report: every `Display` type. The expansion asks for it at the
/// user's `E`, so a missing `Display` is reported there, saying why it is needed.
#[diagnostic::on_unimplemented(
    message = "`#[retry]` reports each failure it retries or gives up on, so `{Self}` must implement `Display`",
    label = "`{Self}` does not implement `std::fmt::Display`",
    note = "with thiserror, `#[derive(thiserror::Error)]` and an `#[error(\"...\")]` on each variant; or `impl std::fmt::Display for {Self}`"
)]
pub trait Reportable {
    /// Write the failure as `Display` does.
    fn report(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result;
}

impl<E: ::core::fmt::Display + ?Sized> Reportable for E {
    #[inline]
    fn report(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        ::core::fmt::Display::fmt(self, f)
    }
}

/// Decide on a failed attempt: the wait before the next attempt, with the call, or the give-up,
/// ready at once. The annotated function's future holds it in place across the `.await`, so
/// a retry allocates nothing. `classify` and `display` are zero-sized closures.
#[allow(clippy::type_complexity)]
#[inline]
pub fn failed<R: Source, H: Held, E, C, D>(
    run: &mut Call<R, H>,
    error: E,
    class: Option<Class>,
    classify: C,
    display: D,
) -> Judging<'_, R, <R::Clock as Clock>::Sleep, E, C, D>
where
    C: Fn(&E) -> Class,
    D: Fn(&E, &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result,
{
    // Classified once: here, or by the placement that told its upstream (`class`); then the
    // ladder decides.
    let class = match class {
        Some(class) => class,
        None => classify(&error),
    };
    let judged = Judged {
        error,
        classify,
        display,
    };
    Judging {
        waiting: run.failed_as(judged, class),
    }
}

pin_project_lite::pin_project! {
    /// [`failed`]'s wait: resolves to go on, or to the user's error, unchanged (the ladder
    /// stopped, or the turn was cancelled during the wait).
    pub struct Judging<'a, R, S, E, C, D> {
        #[pin]
        waiting: Waiting<'a, R, S, Judged<E, C, D>>,
    }
}

impl<R, S, E, C, D> Future for Judging<'_, R, S, E, C, D>
where
    R: Source<Clock: Clock<Sleep = S>>,
    S: Future<Output = ()>,
    C: Fn(&E) -> Class,
    D: Fn(&E, &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result,
{
    type Output = Result<(), E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.project()
            .waiting
            .poll(cx)
            .map(|waited| waited.map_err(|gave_up| gave_up.into_error().error))
    }
}

/// An attempt of `#[retry(upstream = ..)]` or `#[retry(across = ..)]` failed: classified
/// once, its placement told ([`Place::failed`]), and the call moves to the next upstream at
/// once (`Ok(None)`), or leaves the failure to its ladder with its class
/// (`Ok(Some((error, class)))`), or gives up with it (`Err(error)`).
#[inline]
pub fn placed_failed<R: Source, K: Place, E, C, D>(
    call: &mut Call<R, K>,
    error: E,
    classify: C,
    display: D,
) -> Result<Option<(E, Class)>, E>
where
    C: Fn(&E) -> Class,
    D: Fn(&E, &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result,
{
    let class = classify(&error);
    let judged = Judged {
        error,
        classify,
        display,
    };
    match Place::failed(call, judged, class) {
        Next::Moved => Ok(None),
        Next::Ladder(judged, class) => Ok(Some((judged.error, class))),
        Next::GaveUp(gave_up) => Err(gave_up.into_error().error),
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
            .text(" is below `")
            .text(policy.name())
            .text("`'s base, ")
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
            .text(" attempts, more than the most a policy may, ")
            .number(Policy::MAX_ATTEMPTS as u128)
            .text("; lower `attempts`"),
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
