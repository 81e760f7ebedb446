//! The stops that come from no failure's class: a move to another upstream at once (no wait,
//! so only the attempts and the deadlines can stop it), and a wait or a hold cut short by the
//! turn's cancel. Decided here, beside [`decide`](super::decide), so that every `StopReason`
//! is made in `ladder/` (but the quota's refusal, made where the quota is paid).

use crate::policy::Policy;
use crate::verdict::StopReason;
use std::time::Duration;

/// The facts a move to the next upstream is decided on, at once after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveAsked {
    /// The attempts made so far, the failed one included.
    pub attempts: u32,
    /// The call's turn was cancelled.
    pub cancelled: bool,
    /// A deadline is reached: the turn's (`Some(true)`) or the call's literal budget's
    /// (`Some(false)`); `None` if neither is.
    pub deadline_reached: Option<bool>,
}

/// Whether the call moves to the next upstream at once, or why it stops: its turn cancelled
/// or over (`Cancelled`), its attempts spent (`Exhausted`: a move is an attempt), its budget
/// over (`Budget`). The quota pays for a move as for a retry, after this.
///
/// ```
/// use retry_runtime::ladder::{self, MoveAsked};
/// use retry_runtime::{Policy, StopReason};
///
/// let asked = MoveAsked { attempts: 1, cancelled: false, deadline_reached: None };
/// assert_eq!(ladder::moves(&Policy::AVAILABILITY, asked), Ok(()));
/// // `attempts = 1`: no move at all.
/// let once = Policy::AVAILABILITY.with_attempts(1);
/// assert_eq!(ladder::moves(&once, asked), Err(StopReason::Exhausted { attempts: 1 }));
/// ```
pub const fn moves(policy: &Policy, asked: MoveAsked) -> Result<(), StopReason> {
    if asked.cancelled {
        return Err(StopReason::Cancelled);
    }
    let allowed = if policy.attempts() == 0 {
        1
    } else {
        policy.attempts()
    };
    if asked.attempts >= allowed {
        return Err(StopReason::Exhausted {
            attempts: asked.attempts,
        });
    }
    match asked.deadline_reached {
        // A turn's deadline passed is the turn's; a literal budget's is the call's.
        Some(true) => Err(StopReason::Cancelled),
        Some(false) => Err(StopReason::Budget {
            wanted: Duration::ZERO,
            remaining: Duration::ZERO,
        }),
        None => Ok(()),
    }
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
