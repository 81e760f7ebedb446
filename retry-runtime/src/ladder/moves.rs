//! The stops that come from no failure's class: a move to another upstream at once (no wait,
//! so only the attempts, the turn and the budget can stop it), which [`decide`](super::decide)
//! answers first, and a wait or a hold cut short by the turn's cancel. Here, beside `decide`,
//! so that every `StopReason` is made in `ladder/` (but the quota's refusal, made where the
//! quota is paid).

use std::time::Duration;

use super::{Decided, Decision, Failure, Step, Why, allowed_attempts, stop};
use crate::policy::Policy;
use crate::verdict::StopReason;

/// A failure another upstream is ready for ([`Failure::another_ready`]), as
/// [`decide`](super::decide) answers it: a move at once, or its stop: its attempts spent
/// (`Exhausted`: a move is an attempt), its turn cancelled or over (`Cancelled`), its budget
/// reached (`Budget`). No wait follows, so the class, the hint and the allowances have no say;
/// the quota pays for a move as for a retry, after this.
#[inline]
pub(super) const fn moved(policy: &Policy, failure: Failure) -> Decided {
    let attempts = allowed_attempts(policy);
    if failure.attempt >= attempts {
        return Decided::Stop(stop(StopReason::Exhausted { attempts }, Why::Attempts));
    }
    if failure.turn_over {
        return Decided::Stop(stop(StopReason::Cancelled, Why::TurnOver));
    }
    if let Some(remaining) = failure.remaining
        && remaining.is_zero()
    {
        let reason = StopReason::Budget {
            wanted: Duration::ZERO,
            remaining: Duration::ZERO,
        };
        return Decided::Stop(stop(reason, Why::Remaining));
    }
    Decided::Move(Decision {
        step: Step::Retry {
            wait: Duration::ZERO,
        },
        rule: Why::Moved,
        own_wait: None,
    })
}

/// The stop of a call whose wait, or hold for its upstream, its turn's cancel cut short.
///
/// ```
/// use retry_runtime::{ladder, StopReason};
/// assert_eq!(ladder::cut_by_cancel(), StopReason::Cancelled);
/// ```
pub const fn cut_by_cancel() -> StopReason {
    StopReason::Cancelled
}

/// The stop of a call whose request cannot be sent again, where its failure's own decision
/// would have retried it (an HTTP layer that could not copy its request).
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) const fn not_resendable() -> StopReason {
    StopReason::NotResendable
}
