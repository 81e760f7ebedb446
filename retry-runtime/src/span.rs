//! A call's spans (feature `spans`): one `retry` span per call that failed at least once, the
//! parent of its retry events and of one `retry.attempt` span per later attempt.
//!
//! The success path carries none: a `tracing::Span` is five words, and every annotated future
//! would hold it. So the call span is made, boxed, when the first attempt fails; it records
//! that failure's class (`first_failure`), and when the call ends, `attempts`, `waited_ms` and
//! `outcome`. Each later attempt runs inside its own child span (`attempt`, and `class` when it
//! fails), which the HTTP layers mark with OpenTelemetry's `http.request.resend_count`.
//! Without the feature these types are empty and the calls to them vanish.

#[cfg(feature = "spans")]
use tracing::Span;

use crate::class::Class;

/// What a call's spans are, where it has them: nothing until its first failure.
#[derive(Debug, Default)]
pub(crate) struct CallSpans {
    #[cfg(feature = "spans")]
    spans: Option<Box<Spans>>,
}

#[cfg(feature = "spans")]
#[derive(Debug)]
struct Spans {
    call: Span,
    attempt: Span,
}

/// The span one attempt runs in: a `retry.attempt` span, boxed, or none (the first attempt),
/// or nothing at all without the feature. Boxed so the success path carries one word, not a
/// span's five; the span itself, not its id, so it enters through the dispatcher that made it
/// (an id entered through whatever dispatcher is current where the future is polled could
/// reach a subscriber that never made it, which a registry answers with a panic). The box is
/// the price of a later attempt, with the feature on.
#[derive(Debug, Default)]
pub(crate) struct AttemptSpan {
    #[cfg(feature = "spans")]
    span: Option<Box<Span>>,
}

impl AttemptSpan {
    /// Run `poll` inside the attempt's span, if it has one: entered for each poll and left
    /// after it, as `Instrumented` does.
    #[inline]
    pub(crate) fn in_scope<T>(&self, poll: impl FnOnce() -> T) -> T {
        #[cfg(feature = "spans")]
        if let Some(span) = &self.span {
            return span.in_scope(poll);
        }
        poll()
    }
}

impl CallSpans {
    /// No spans yet.
    pub(crate) const NONE: CallSpans = CallSpans {
        #[cfg(feature = "spans")]
        spans: None,
    };

    /// An attempt of `op` failed with `class`: its attempt span says so, and a first failure
    /// opens the call's span.
    #[inline]
    pub(crate) fn failed(&mut self, op: &str, policy: &str, class: Class) {
        #[cfg(feature = "spans")]
        match &self.spans {
            Some(spans) => {
                spans.attempt.record("class", class.name());
            }
            None => {
                let call = tracing::info_span!(
                    target: "retry",
                    "retry",
                    op,
                    policy,
                    first_failure = class.name(),
                    attempts = tracing::field::Empty,
                    waited_ms = tracing::field::Empty,
                    outcome = tracing::field::Empty,
                );
                self.spans = Some(Box::new(Spans {
                    call,
                    attempt: Span::none(),
                }));
            }
        }
        #[cfg(not(feature = "spans"))]
        let _ = (op, policy, class);
    }

    /// Attempt `attempt` begins: its span, a child of the call's, if the call has one.
    #[inline]
    pub(crate) fn attempt(&mut self, attempt: u32) -> AttemptSpan {
        #[cfg(feature = "spans")]
        if let Some(spans) = &mut self.spans {
            spans.attempt = tracing::info_span!(
                target: "retry",
                parent: &spans.call,
                "retry.attempt",
                attempt,
                class = tracing::field::Empty,
                "http.request.resend_count" = tracing::field::Empty,
            );
            return AttemptSpan {
                span: Some(Box::new(spans.attempt.clone())),
            };
        }
        #[cfg(not(feature = "spans"))]
        let _ = attempt;
        AttemptSpan::default()
    }

    /// Run `emit` inside the call's span, if it has one: its retry events are the span's.
    #[inline]
    pub(crate) fn in_scope<T>(&self, emit: impl FnOnce() -> T) -> T {
        #[cfg(feature = "spans")]
        if let Some(spans) = &self.spans {
            return spans.call.in_scope(emit);
        }
        emit()
    }

    /// The call ended after `attempts`, having waited `waited_ms`, with `outcome`.
    #[inline]
    pub(crate) fn ended(&self, attempts: u32, waited_ms: u32, outcome: &'static str) {
        #[cfg(feature = "spans")]
        if let Some(spans) = &self.spans {
            spans.call.record("attempts", attempts);
            spans.call.record("waited_ms", waited_ms);
            spans.call.record("outcome", outcome);
        }
        #[cfg(not(feature = "spans"))]
        let _ = (attempts, waited_ms, outcome);
    }
}
