//! What a run tells as it goes: the metrics of each attempt and of the call's end, its spans,
//! and the retry event every hook, the log and the spans hear. It must not decide.

use std::fmt;

use super::{ENDED, HOLLOW, Run};
use crate::class::Class;
use crate::engine::count::Count;
use crate::engine::source::Source;
use crate::meter::{self, Outcome, Series};
use crate::notice::{self, Action, Reached, RetryEvent};
use crate::redact::Redacted;

impl<R: Source, A: Count> Run<R, A> {
    /// The current attempt's series, ended with a `class` failure or (`None`) a success;
    /// none if a retried call nested in it ran: that call counts it.
    #[inline]
    pub(super) fn attempt_series(&self, class: Option<Class>) -> Option<Series> {
        (self.flags & HOLLOW == 0).then_some(Series::Attempt(class))
    }

    /// The current attempt failed with `class`: counted, and said in the call's spans.
    #[inline]
    pub(super) fn attempt_failed(&mut self, class: Class) {
        if let Some(attempt) = self.attempt_series(Some(class)) {
            meter::count(self.source.op(), attempt);
        }
        let policy = self.source.policy().name();
        self.spans.failed(self.source.op(), policy, class);
    }

    /// The call has ended with `outcome`, its last attempt counted as `attempt` if given:
    /// counted once, however it is reported after.
    #[inline]
    pub(super) fn end(&mut self, outcome: Outcome, attempt: Option<Series>) {
        if self.flags & ENDED == 0 {
            self.flags |= ENDED;
            // One look-up of the operation's handles for both.
            meter::count_with(self.source.op(), Series::Call(outcome), attempt);
            self.spans
                .ended(self.attempts(), self.waited_ms, outcome.name());
        }
    }

    /// Tell the hooks, the log and the spans of a failure of `class` and what follows.
    pub(super) fn notify(
        &self,
        error: &dyn fmt::Display,
        class: Class,
        action: Action,
        reached: Reached,
        resume_from: Option<&str>,
    ) {
        let flight = self.flight();
        let event = RetryEvent {
            op: self.source.op(),
            policy: self.source.policy().name(),
            attempt: self.attempts(),
            total: self.source.policy().attempts().max(1),
            class,
            error: Redacted::new(error),
            action,
            reached,
            resume_from,
        };
        let hooks = |each: &mut dyn FnMut(&notice::Hook)| {
            if let Some(flight) = flight {
                flight.for_each_hook(each);
            }
        };
        self.spans.in_scope(|| notice::emit(hooks, &event));
    }
}
