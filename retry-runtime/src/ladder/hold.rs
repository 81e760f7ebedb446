//! The hold: how long an upstream may keep a call's next attempt back (a provider's pause, an
//! outage's gate), decided as a wait of the ladder is, from the same bounds: the turn, the
//! literal budget, the policy's `max_retry_after` and what its ladder could still wait.

use std::time::Duration;

use super::{hinted, min_duration, worst_case_wait_with_hints};
use crate::draw::Draw;
use crate::policy::Policy;
use crate::verdict::StopReason;

/// The timer's granularity: tokio's timer fires on whole milliseconds, rounded up, so a wait
/// ends strictly before a deadline only if it ends at least this long before it.
pub(crate) const TIMER_GRANULARITY: Duration = Duration::from_millis(1);

/// Whether a wait of `wait` ends strictly before a deadline `remaining` away, on the timer's
/// granularity. A wait that would end on the deadline would race the turn's own timer.
///
/// ```
/// use retry_runtime::ladder;
/// use std::time::Duration;
/// let ms = Duration::from_millis;
/// assert!(ladder::ends_before(ms(3_249), ms(3_250)));
/// assert!(!ladder::ends_before(ms(3_250), ms(3_250)));
/// assert!(!ladder::ends_before(Duration::ZERO, Duration::ZERO));
/// ```
pub const fn ends_before(wait: Duration, remaining: Duration) -> bool {
    wait.as_nanos() + TIMER_GRANULARITY.as_nanos() <= remaining.as_nanos()
}

/// What a call may still wait before its next attempt, however it is held: what its ladder
/// could still wait (every retry left at the longest the policy honours, hints included,
/// within its `max_total_wait`) less what it has `waited`. A hold never outlives the ladder
/// it interrupts.
///
/// ```
/// use retry_runtime::{ladder, Policy};
/// use std::time::Duration;
/// // `transient`: four retries of at most 120 s (+ 1 s of spread) each.
/// assert_eq!(ladder::hold_allowance(&Policy::TRANSIENT, Duration::ZERO), Duration::from_secs(484));
/// assert_eq!(ladder::hold_allowance(&Policy::OUTAGE, Duration::from_secs(63)), Duration::from_secs(300));
/// ```
pub const fn hold_allowance(policy: &Policy, waited: Duration) -> Duration {
    min_duration(worst_case_wait_with_hints(policy), Policy::MAX_TOTAL_WAIT).saturating_sub(waited)
}

/// A call held before its next attempt, as [`hold`] weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldAsked {
    /// A provider's pause, this much longer (its hint); `None`: an outage's gate, whose end
    /// nobody knows.
    pub pause: Option<Duration>,
    /// What the call has waited so far.
    pub waited: Duration,
    /// The time left before the call's turn or literal budget ends, if either bounds it.
    pub remaining: Option<Duration>,
    /// The call's turn was cancelled: it cannot wait at all.
    pub cancelled: bool,
    /// A fleet's retry budget holds the retry, not a gate: at the call's end it stops as a
    /// call whose quota is spent does (`Quota`).
    pub budget_spent: bool,
}

/// How long the call waits for its upstream, or why it stops now. A pause is waited with a
/// hint's spread (cut at the room left, so a pause that fits is never refused for it); it
/// stops the call at once where it would outlast the turn or the budget (`Budget`), or is
/// longer than the policy honours (`RetryAfterTooLong`: its `max_retry_after`, or what its
/// ladder could still wait). A gate is waited at most until the call can wait no longer, then
/// stops it (`Held`; a retry held by a fleet's spent budget, `Quota`). A cancelled turn stops
/// it at once (`Cancelled`).
///
/// ```
/// use retry_runtime::ladder::{self, HoldAsked};
/// use retry_runtime::{Draw, Policy, StopReason};
/// use std::time::Duration;
///
/// // Another call's batch policy paused the key for 60 s: an `availability` call may wait 18.
/// let paused = HoldAsked { pause: Some(Duration::from_secs(60)), waited: Duration::ZERO, remaining: None, cancelled: false, budget_spent: false };
/// let refused = ladder::hold(&Policy::AVAILABILITY, paused, Draw::IDEAL);
/// assert!(matches!(refused, Err(StopReason::RetryAfterTooLong { .. })));
/// // An open gate: at most what the ladder could still wait.
/// let gated = HoldAsked { pause: None, ..paused };
/// assert_eq!(ladder::hold(&Policy::TRANSIENT, gated, Draw::IDEAL), Ok(Duration::from_secs(484)));
/// ```
pub const fn hold(policy: &Policy, held: HoldAsked, draw: Draw) -> Result<Duration, StopReason> {
    if held.cancelled {
        return Err(StopReason::Cancelled);
    }
    let allowance = hold_allowance(policy, held.waited);
    // Room before the turn or budget ends, on the timer's granularity.
    let room = match held.remaining {
        Some(remaining) => Some(remaining.saturating_sub(TIMER_GRANULARITY)),
        None => None,
    };
    let Some(pause) = held.pause else {
        let bound = match room {
            Some(room) => min_duration(room, allowance),
            None => allowance,
        };
        return if bound.is_zero() && held.budget_spent {
            Err(StopReason::Quota)
        } else if bound.is_zero() {
            Err(StopReason::Held)
        } else {
            Ok(bound)
        };
    };
    let fits = match room {
        Some(room) => min_duration(room, allowance),
        None => allowance,
    };
    let spread = hinted(pause, draw);
    let wait = if pause.as_nanos() <= fits.as_nanos() {
        min_duration(spread, fits)
    } else {
        spread
    };
    if let Some(remaining) = held.remaining
        && !ends_before(wait, remaining)
    {
        return Err(StopReason::Budget {
            wanted: wait,
            remaining,
        });
    }
    if pause.as_nanos() > policy.max_retry_after().as_nanos() {
        return Err(StopReason::RetryAfterTooLong {
            wanted: pause,
            max: policy.max_retry_after(),
        });
    }
    if wait.as_nanos() > allowance.as_nanos() {
        return Err(StopReason::RetryAfterTooLong {
            wanted: pause,
            max: allowance,
        });
    }
    Ok(wait)
}

/// An attempt that costs more than its key's whole limit (its tokens past the limit the
/// provider said): an answer, never waited for, since no wait would make room for it.
///
/// ```
/// use retry_runtime::{ladder, StopReason};
/// assert_eq!(ladder::over_limit(), StopReason::Definitive);
/// ```
pub const fn over_limit() -> StopReason {
    StopReason::Definitive
}
