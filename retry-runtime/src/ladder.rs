//! The wait arithmetic: pure functions of the policy, the retry number and one random draw.
//!
//! Nothing here reads a clock or a random source, so the engine, the tests and the `backoff`
//! CLI compute the same numbers from the same code. Every step saturates; none overflows.
//!
//! It owns the decision ([`decide`]): the step after a failure and the rule that set it. It
//! must not read a clock, a random source, a turn or a quota: what it decides on comes in
//! through [`Failure`] and the draw, so the engine and `backoff explain` compute the same.

use std::time::Duration;

use crate::class::Class;
use crate::draw::Draw;
use crate::policy::{Jitter, Policy, RateLimit};
use crate::verdict::StopReason;

mod hold;
mod moves;
mod why;

pub(crate) use hold::TIMER_GRANULARITY;
pub use hold::{HoldAsked, ends_before, hold, hold_allowance, over_limit};
pub use moves::cut_by_cancel;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) use moves::not_resendable;
pub use why::Why;

const NANOS_PER_SEC: u128 = 1_000_000_000;
const MAX_NANOS: u128 = Duration::MAX.as_nanos();

/// The ideal wait before retry `retry` (1 for the first retry): `min(cap, base × multiplier^(retry-1))`,
/// saturating.
///
/// ```
/// use retry_runtime::{ladder, Policy};
/// use std::time::Duration;
/// let waits: Vec<u64> = (1..=6).map(|n| ladder::ideal_wait(&Policy::TRANSIENT, n).as_secs()).collect();
/// assert_eq!(waits, [1, 2, 4, 8, 16, 16]);
/// ```
pub const fn ideal_wait(policy: &Policy, retry: u32) -> Duration {
    let cap = policy.cap().as_nanos();
    let mut ideal = min_u128(policy.base().as_nanos(), cap);
    let multiplier = policy.multiplier_milli() as u128;
    if multiplier <= 1000 {
        return to_duration(ideal);
    }
    let mut step = 1;
    while step < retry && ideal < cap {
        ideal = grow(ideal, multiplier, cap);
        step += 1;
    }
    to_duration(ideal)
}

/// The least upper bound of the wait before retry `retry`, jitter included.
pub const fn max_wait(policy: &Policy, retry: u32) -> Duration {
    let ideal = ideal_wait(policy, retry).as_nanos();
    to_duration(ideal * policy.jitter().max_factor_percent() as u128 / 100)
}

/// The longest the whole ladder can wait, jitter included, `Retry-After` hints aside; a
/// policy's single rate-limit retry counts with its own wait. Never more than the policy's
/// `max_total_wait`.
pub const fn worst_case_wait(policy: &Policy) -> Duration {
    min_duration(own_worst_case_wait(policy), policy.max_total_wait())
}

/// The longest the ladder can wait with every `Retry-After` hint at the longest the policy
/// honours (and its spread), bounded by the policy's `max_total_wait`.
pub const fn worst_case_wait_with_hints(policy: &Policy) -> Duration {
    let retries = policy.attempts().saturating_sub(1) as u128;
    let hint = policy.max_retry_after().as_nanos();
    // A policy that honours no hint (a maximum of zero) never waits one.
    let longest_hint = if hint == 0 {
        0
    } else {
        sat_add(hint, clamp_u128(hint / 10, 100_000_000, NANOS_PER_SEC))
    };
    let hinted_everywhere = sat_add(0, retries.saturating_mul(longest_hint));
    let own = own_worst_case_wait(policy).as_nanos();
    // A hint is a floor under each wait: at worst, every wait is the longer of the two.
    let total = if own > hinted_everywhere {
        own
    } else {
        hinted_everywhere
    };
    min_duration(to_duration(total), policy.max_total_wait())
}

const fn own_worst_case_wait(policy: &Policy) -> Duration {
    let retries = policy.attempts().saturating_sub(1) as u128;
    let cap = policy.cap().as_nanos();
    let percent = policy.jitter().max_factor_percent() as u128;
    let multiplier = policy.multiplier_milli() as u128;
    let mut ideal = min_u128(policy.base().as_nanos(), cap);
    let mut total: u128 = 0;
    let mut counted: u128 = 0;
    // Walk the growing part of the ladder; once it is flat, the rest is one multiplication.
    while counted < retries && ideal < cap && multiplier > 1000 {
        total = sat_add(total, ideal * percent / 100);
        counted += 1;
        ideal = grow(ideal, multiplier, cap);
        if total >= MAX_NANOS {
            return Duration::MAX;
        }
    }
    let flat = ideal * percent / 100;
    let rest = (retries - counted).saturating_mul(flat);
    let total = sat_add(total, rest);
    // A policy's single rate-limit retry waits its own time in place of one rung; at worst it
    // replaces the shortest, the first.
    match policy.rate_limit() {
        RateLimit::Once { wait }
            if retries > 0 && policy.retries(&Class::RateLimited { retry_after: None }) =>
        {
            let wait = wait.as_nanos();
            let once = sat_add(wait, clamp_u128(wait / 10, 100_000_000, NANOS_PER_SEC));
            let first = min_u128(policy.base().as_nanos(), cap) * percent / 100;
            to_duration(if once > first {
                sat_add(total, once - first)
            } else {
                total
            })
        }
        _ => to_duration(total),
    }
}

/// `ideal` spread by `jitter` according to `draw`; strictly below the jitter's upper bound.
///
/// ```
/// use retry_runtime::{ladder, Draw, Jitter};
/// use std::time::Duration;
/// let ideal = Duration::from_secs(16);
/// assert_eq!(ladder::jittered(ideal, Jitter::Proportional, Draw::from_unit(0.5)), ideal);
/// assert!(ladder::jittered(ideal, Jitter::Proportional, Draw::from_bits(u32::MAX)) < Duration::from_secs(24));
/// assert_eq!(ladder::jittered(ideal, Jitter::Equal, Draw::from_unit(0.0)), Duration::from_secs(8));
/// assert_eq!(ladder::jittered(ideal, Jitter::Full, Draw::IDEAL), ideal);
/// ```
pub const fn jittered(ideal: Duration, jitter: Jitter, draw: Draw) -> Duration {
    let Some(bits) = draw.bits() else {
        return ideal;
    };
    let ideal = ideal.as_nanos();
    let bits = bits as u128;
    // Factor in units of 2^-32; the products fit: ideal < 2^95 and the factor < 2^33.
    let factor = match jitter {
        Jitter::Proportional => (1 << 31) + bits,
        Jitter::Equal => (1 << 31) + bits / 2,
        Jitter::Full => bits,
        // 1 + a fifth of the draw: [1, 1.2).
        Jitter::Above => (1 << 32) + bits / 5,
        Jitter::None => return to_duration(ideal),
    };
    to_duration((ideal * factor) >> 32)
}

/// The wait for a `Retry-After` hint: the hint is a floor, plus up to a tenth of it (between
/// 100 ms and 1 s) so that clients told the same instant do not all wake at it.
///
/// ```
/// use retry_runtime::{ladder, Draw};
/// use std::time::Duration;
/// let hint = Duration::from_secs(30);
/// assert_eq!(ladder::hinted(hint, Draw::IDEAL), hint);
/// assert_eq!(ladder::hinted(hint, Draw::from_unit(0.5)), Duration::from_millis(30_500));
/// ```
pub const fn hinted(hint: Duration, draw: Draw) -> Duration {
    let Some(bits) = draw.bits() else {
        return hint;
    };
    let hint = hint.as_nanos();
    let spread = clamp_u128(hint / 10, 100_000_000, NANOS_PER_SEC);
    to_duration(sat_add(hint, (spread * bits as u128) >> 32))
}

/// What the ladder does after a failed attempt.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Wait this long, then make the next attempt.
    Retry {
        /// The wait before the next attempt.
        wait: Duration,
    },
    /// Stop and report the failure.
    Stop(StopReason),
}

impl Step {
    /// The wait before the next attempt, if the ladder retries.
    ///
    /// ```
    /// use retry_runtime::ladder::Step;
    /// use std::time::Duration;
    /// assert_eq!(Step::Retry { wait: Duration::from_secs(1) }.wait(), Some(Duration::from_secs(1)));
    /// ```
    pub const fn wait(&self) -> Option<Duration> {
        match self {
            Step::Retry { wait } => Some(*wait),
            Step::Stop(_) => None,
        }
    }

    /// Why the ladder stops, if it does.
    pub const fn stop_reason(&self) -> Option<StopReason> {
        match self {
            Step::Stop(reason) => Some(*reason),
            Step::Retry { .. } => None,
        }
    }
}

/// The facts about one failed attempt that the ladder decides on.
///
/// ```
/// use retry_runtime::ladder::Failure;
/// use retry_runtime::Class;
/// use std::time::Duration;
///
/// let failure = Failure::new(2, Class::Transport).with_waited(Duration::from_millis(250));
/// assert_eq!(failure.attempt, 2);
/// assert_eq!(failure.remaining, None);
/// assert!(!failure.committed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// Which attempt failed (1 for the first).
    pub attempt: u32,
    /// What the failure said.
    pub class: Class,
    /// Whether a rate limit was already retried in this call.
    pub rate_limited_before: bool,
    /// Time left in the budget, if there is one.
    pub remaining: Option<Duration>,
    /// The time this call's ladder has waited so far.
    pub waited: Duration,
    /// Whether a retried call nested in the attempt gave up on a transient failure.
    pub inner_gave_up: bool,
    /// Whether the enclosing turn was cancelled or its deadline passed.
    pub turn_over: bool,
    /// Whether the attempt had delivered output to the caller: a stream past its commit point.
    pub committed: bool,
    /// Whether the caller lets the policy retry an attempt that had delivered output
    /// ([`RetryStream::restart_after_commit`](crate::RetryStream::restart_after_commit)).
    pub restartable: bool,
    /// The reconnection time a resumable stream's server asked for (an SSE `retry:` field):
    /// a hint with the standing of the class's `Retry-After`, the longer of the two counting.
    pub reconnect: Option<Duration>,
    /// Whether the failed attempt was a stream's reopen from its cursor: its first request
    /// was sent and may have run, so a refusal answers the resume, not the request.
    pub reopen: bool,
    /// Whether the request can be sent again: an HTTP layer that could not copy it for
    /// another attempt cannot, and a failure it would retry stops `NotResendable`.
    pub resendable: bool,
    /// Whether another upstream of the call's ordered set admits an attempt now, and the
    /// failure's class moves the call to it ([`Upstreams::moves`](crate::Upstreams::moves)):
    /// the call moves there at once, with no wait, unless its attempts are spent, its turn is
    /// over or its budget reached.
    pub another_ready: bool,
}

impl Failure {
    /// Attempt `attempt` (1 for the first) failed with `class`: no rate limit retried before,
    /// no budget, nothing waited yet, no output delivered.
    pub const fn new(attempt: u32, class: Class) -> Failure {
        Failure {
            attempt,
            class,
            rate_limited_before: false,
            remaining: None,
            waited: Duration::ZERO,
            inner_gave_up: false,
            turn_over: false,
            committed: false,
            restartable: false,
            reconnect: None,
            reopen: false,
            resendable: true,
            another_ready: false,
        }
    }

    /// This failure of a resumable stream whose server asked to wait `reconnect` before
    /// reconnecting (an SSE `retry:` field; `None`: it did not): a floor under the wait, as a
    /// `Retry-After` is, and refused past the policy's `max_retry_after`.
    ///
    /// ```
    /// use retry_runtime::ladder::{self, Failure, Why};
    /// use retry_runtime::{Class, Draw, Policy};
    /// use std::time::Duration;
    ///
    /// let cut = Failure::new(1, Class::Transport).with_reconnect(Some(Duration::from_millis(1500)));
    /// let decision = ladder::decide(&Policy::AVAILABILITY, cut).with_draw(Draw::IDEAL);
    /// assert_eq!(decision.step.wait(), Some(Duration::from_millis(1500)));
    /// assert_eq!(decision.rule, Why::Hint);
    /// ```
    pub const fn with_reconnect(mut self, reconnect: Option<Duration>) -> Failure {
        self.reconnect = reconnect;
        self
    }

    /// This failure of a stream's reopen from its cursor (or not): a refusal, or a class the
    /// policy does not retry, ends the ladder with [`StopReason::ResumeFailed`], which leaves
    /// the outcome undetermined, where a request's own would be an answer.
    ///
    /// ```
    /// use retry_runtime::ladder::{self, Failure};
    /// use retry_runtime::{Class, Draw, Policy, StopReason};
    ///
    /// let refused = Failure::new(2, Class::Definitive).with_reopen(true);
    /// let decision = ladder::decide(&Policy::AVAILABILITY, refused).with_draw(Draw::IDEAL);
    /// assert_eq!(decision.step.stop_reason(), Some(StopReason::ResumeFailed));
    /// ```
    pub const fn with_reopen(mut self, reopen: bool) -> Failure {
        self.reopen = reopen;
        self
    }

    /// This failure of a request that can (or, `false`, cannot) be sent again: one that
    /// cannot stops with [`StopReason::NotResendable`] where it would have waited, and with
    /// its own stop where it has one.
    ///
    /// ```
    /// use retry_runtime::ladder::{self, Failure, Why};
    /// use retry_runtime::{Class, Draw, Policy, StopReason};
    ///
    /// let cut = Failure::new(1, Class::Transport).with_resendable(false);
    /// let decision = ladder::decide(&Policy::AVAILABILITY, cut).with_draw(Draw::IDEAL);
    /// assert_eq!(decision.step.stop_reason(), Some(StopReason::NotResendable));
    /// assert_eq!(decision.rule, Why::NotResendable);
    /// // An answer stops as an answer.
    /// let answer = Failure::new(1, Class::Definitive).with_resendable(false);
    /// let decision = ladder::decide(&Policy::AVAILABILITY, answer).with_draw(Draw::IDEAL);
    /// assert_eq!(decision.step.stop_reason(), Some(StopReason::Definitive));
    /// ```
    pub const fn with_resendable(mut self, resendable: bool) -> Failure {
        self.resendable = resendable;
        self
    }

    /// This failure with another upstream of the call's set ready for its next attempt now
    /// (or not): a move, decided before any rule of the failure's class.
    ///
    /// ```
    /// use retry_runtime::ladder::{self, Decided, Failure, Step, Why};
    /// use retry_runtime::{Class, Draw, Policy, StopReason};
    /// use std::time::Duration;
    ///
    /// let failed = Failure::new(1, Class::Unavailable { retry_after: None });
    /// let moved = ladder::decide(&Policy::AVAILABILITY, failed.with_another_ready(true));
    /// assert!(matches!(moved, Decided::Move(_)));
    /// let decision = moved.with_draw(Draw::IDEAL);
    /// assert_eq!((decision.step, decision.rule), (Step::Retry { wait: Duration::ZERO }, Why::Moved));
    /// // A move is an attempt: the last one allowed moves nowhere.
    /// let last = Failure::new(4, Class::Transport).with_another_ready(true);
    /// let decision = ladder::decide(&Policy::AVAILABILITY, last).with_draw(Draw::IDEAL);
    /// assert_eq!(decision.step.stop_reason(), Some(StopReason::Exhausted { attempts: 4 }));
    /// ```
    pub const fn with_another_ready(mut self, ready: bool) -> Failure {
        self.another_ready = ready;
        self
    }

    /// This failure after a retried call nested in its attempt gave up (or not).
    pub const fn with_inner_gave_up(mut self, gave_up: bool) -> Failure {
        self.inner_gave_up = gave_up;
        self
    }

    /// This failure in a turn that was cancelled or whose deadline passed (or not).
    pub const fn with_turn_over(mut self, over: bool) -> Failure {
        self.turn_over = over;
        self
    }

    /// This failure after its attempt had (or had not) delivered output to the caller, and
    /// with the caller letting the policy retry such an attempt (`restartable`) or not.
    ///
    /// ```
    /// use retry_runtime::ladder::{self, Failure, Why};
    /// use retry_runtime::{Class, Draw, Policy, StopReason};
    ///
    /// let cut = Failure::new(1, Class::Transport).with_committed(true, false);
    /// let decision = ladder::decide(&Policy::AVAILABILITY, cut).with_draw(Draw::IDEAL);
    /// assert_eq!(decision.step.stop_reason(), Some(StopReason::Committed));
    /// assert_eq!(decision.rule, Why::Committed);
    /// // Opted in to restarts, it is decided as any failure.
    /// let restarted = ladder::decide(&Policy::AVAILABILITY, cut.with_committed(true, true));
    /// assert!(restarted.with_draw(Draw::IDEAL).step.wait().is_some());
    /// ```
    pub const fn with_committed(mut self, committed: bool, restartable: bool) -> Failure {
        self.committed = committed;
        self.restartable = restartable;
        self
    }

    /// This failure with a failure of another class.
    pub const fn with_class(mut self, class: Class) -> Failure {
        self.class = class;
        self
    }

    /// This failure after a rate limit was (or was not) already retried in the call.
    pub const fn with_rate_limited_before(mut self, before: bool) -> Failure {
        self.rate_limited_before = before;
        self
    }

    /// This failure with `remaining` left in the budget (`None`: no budget).
    pub const fn with_remaining(mut self, remaining: Option<Duration>) -> Failure {
        self.remaining = remaining;
        self
    }

    /// This failure after the call's ladder waited `waited` in all.
    pub const fn with_waited(mut self, waited: Duration) -> Failure {
        self.waited = waited;
        self
    }
}

/// A step, the rule that decided it, and the policy's own wait it was weighed with.
///
/// ```
/// use retry_runtime::ladder::{self, Failure, Step, Why};
/// use retry_runtime::{Class, Draw, Policy};
/// use std::time::Duration;
///
/// let hinted = Failure::new(1, Class::Unavailable { retry_after: Some(Duration::from_secs(3)) });
/// let decision = ladder::decide(&Policy::AVAILABILITY, hinted).with_draw(Draw::IDEAL);
/// assert_eq!(decision.step, Step::Retry { wait: Duration::from_secs(3) });
/// assert_eq!(decision.rule, Why::Hint);
/// // The hint was longer than the ladder's own first rung.
/// assert_eq!(decision.own_wait, Some(Duration::from_millis(250)));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// What the ladder does.
    pub step: Step,
    /// Why.
    pub rule: Why,
    /// The policy's own wait at the draw (the ladder's rung or its cap, jittered, or a rate
    /// limit's single wait with its spread), which a hint is a floor under; `None` for a stop
    /// decided before any wait, without a draw.
    pub own_wait: Option<Duration>,
}

pub(crate) const fn stop(reason: StopReason, rule: Why) -> Decision {
    Decision {
        step: Step::Stop(reason),
        rule,
        own_wait: None,
    }
}

/// The decision on one failure as [`decide`] makes it, before any draw: a stop, a move at
/// once to another upstream, or a wait to draw. The engine draws jitter only for [`Decided::Pending`], so a failure no wait follows
/// reads no random source.
///
/// ```
/// use retry_runtime::ladder::{self, Decided, Failure, Why};
/// use retry_runtime::{Class, Draw, Policy, StopReason};
///
/// let answer = ladder::decide(&Policy::AVAILABILITY, Failure::new(1, Class::Definitive));
/// let Decided::Stop(decision) = answer else { panic!("an answer waits for nothing") };
/// assert_eq!(decision.step.stop_reason(), Some(StopReason::Definitive));
/// assert_eq!(decision.rule, Why::Declined);
/// assert!(ladder::decide(&Policy::AVAILABILITY, Failure::new(1, Class::Transport)).needs_draw());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Decided without a draw: the ladder stops, and no wait follows.
    Stop(Decision),
    /// Decided without a draw: the next attempt goes at once to the upstream that is ready
    /// (its step a retry with no wait, its rule [`Why::Moved`]).
    Move(Decision),
    /// A wait may follow: its length, and whether it fits, take the draw.
    Pending(Pending),
}

impl Decided {
    /// Whether the decision takes a draw: whether a wait may follow.
    pub const fn needs_draw(&self) -> bool {
        matches!(self, Decided::Pending(_))
    }

    /// The whole decision, with `draw` if it takes one (a stop ignores it).
    ///
    /// ```
    /// use retry_runtime::ladder::{self, Failure, Step};
    /// use retry_runtime::{Class, Draw, Policy};
    /// use std::time::Duration;
    ///
    /// let decided = ladder::decide(&Policy::AVAILABILITY, Failure::new(1, Class::Transport));
    /// assert_eq!(decided.with_draw(Draw::IDEAL).step, Step::Retry { wait: Duration::from_millis(250) });
    /// // Equal jitter: the lowest draw halves the rung.
    /// assert_eq!(decided.with_draw(Draw::from_bits(0)).step.wait(), Some(Duration::from_millis(125)));
    /// ```
    pub const fn with_draw(self, draw: Draw) -> Decision {
        match self {
            Decided::Stop(decision) | Decided::Move(decision) => decision,
            Decided::Pending(pending) => pending.with_draw(draw),
        }
    }
}

/// A failure every rule but the wait's allows to be retried: the policy's own wait and the
/// hint known up to the draw. What is left is the wait's length and whether it fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// The policy's own wait before the draw: the rung (or its cap), or a rate limit's single
    /// wait.
    ideal: Duration,
    /// The rung's jitter; `None` for a rate limit's single wait, spread as a hint is.
    jitter: Option<Jitter>,
    own_rule: Why,
    /// The server's hint, no longer than the policy honours.
    hint: Option<Duration>,
    /// What the policy's total allowance has left.
    allowance: Duration,
    remaining: Option<Duration>,
}

impl Pending {
    /// The decision with `draw`: the longer of the hint (with its spread) and the policy's own
    /// wait, if it fits the policy's total allowance and the budget's remaining time (rules 8
    /// and 9 of [`decide`]).
    ///
    /// ```
    /// use retry_runtime::ladder::{self, Decided, Failure};
    /// use retry_runtime::{Class, Draw, Policy, StopReason};
    /// use std::time::Duration;
    ///
    /// let short = Failure::new(1, Class::Transport).with_remaining(Some(Duration::from_millis(200)));
    /// let Decided::Pending(pending) = ladder::decide(&Policy::AVAILABILITY, short) else { panic!() };
    /// // 250 ms does not fit in 200; the lowest draw's 125 ms does.
    /// assert!(matches!(pending.with_draw(Draw::IDEAL).step.stop_reason(), Some(StopReason::Budget { .. })));
    /// assert_eq!(pending.with_draw(Draw::from_bits(0)).step.wait(), Some(Duration::from_millis(125)));
    /// ```
    pub const fn with_draw(self, draw: Draw) -> Decision {
        let own = match self.jitter {
            Some(jitter) => jittered(self.ideal, jitter, draw),
            None => hinted(self.ideal, draw),
        };
        let (wait, rule) = self.longer_than_hint(own, draw);
        let decision = if wait.as_nanos() > self.allowance.as_nanos() {
            match self.hint {
                // The figure compared is the hint itself: it is over the allowance.
                Some(hint) if hint.as_nanos() > self.allowance.as_nanos() => stop(
                    StopReason::RetryAfterTooLong {
                        wanted: hint,
                        max: self.allowance,
                    },
                    Why::MaxTotal,
                ),
                _ => stop(
                    StopReason::Budget {
                        wanted: wait,
                        remaining: self.allowance,
                    },
                    Why::Remaining,
                ),
            }
        } else {
            match self.remaining {
                // Past the deadline (nothing remains), even a zero wait would start the next
                // attempt late.
                // A wait must end strictly before the deadline, on the timer's granularity:
                // one that ends on it races the turn's own timer.
                Some(remaining) if !ends_before(wait, remaining) => stop(
                    StopReason::Budget {
                        wanted: wait,
                        remaining,
                    },
                    Why::Remaining,
                ),
                _ => Decision {
                    step: Step::Retry { wait },
                    rule,
                    own_wait: None,
                },
            }
        };
        Decision {
            own_wait: Some(own),
            ..decision
        }
    }

    /// The longer of the hint, with its spread, and the policy's own wait, and its rule. A
    /// hint is a floor, never a shortcut.
    const fn longer_than_hint(&self, own: Duration, draw: Draw) -> (Duration, Why) {
        let Some(hint) = self.hint else {
            return (own, self.own_rule);
        };
        // What a wait may take: the allowance, and the budget's remaining time.
        let room = match self.remaining {
            Some(remaining) => {
                min_duration(self.allowance, remaining.saturating_sub(TIMER_GRANULARITY))
            }
            None => self.allowance,
        };
        // The spread never makes a hint that fits refused: it is cut at the room left.
        let spread = hinted(hint, draw);
        let spread = if hint.as_nanos() <= room.as_nanos() {
            min_duration(spread, room)
        } else {
            spread
        };
        if spread.as_nanos() > own.as_nanos() {
            (spread, Why::Hint)
        } else {
            (own, self.own_rule)
        }
    }
}

/// The whole decision on one failure, pure: the engine asks it once per failure, and
/// `backoff explain` prints its rule. A failure with another upstream of the call's set
/// ready ([`Failure::with_another_ready`]) moves there at once (`Move`), unless the attempts
/// are spent (`Exhausted`), the turn is over (`Cancelled`) or the budget reached (`Budget`):
/// no wait follows, so nothing else can stop it. Otherwise the checks, in order, the first that
/// applies deciding:
///
/// 1. the attempt had delivered output (a stream past its commit point) and the caller did not
///    opt in to restarts: `Committed`, whatever the class, since any retry would repeat what
///    the caller has (the class stays on the give-up, so an answer still reads as one); a
///    restartable one is decided as any other failure;
/// 2. a retried call nested in the attempt gave up on a transient failure: `Nested`;
/// 3. the class: cancelled, an answer, a class the policy does not retry (`Declined`); an
///    answer or a class not retried on a stream's reopen is `ResumeFailed` (the request was
///    sent, and its outcome is unknown);
/// 4. the attempts the policy allows: `Exhausted`;
/// 5. the turn cancelled, or its deadline passed: `Cancelled`;
/// 6. a rate limit under `RateLimit::Once` whose one retry is spent: `Exhausted`;
/// 7. a hint over the policy's `max_retry_after`: `RetryAfterTooLong`;
/// 8. a request that cannot be sent again (an HTTP layer could not copy it): `NotResendable`;
///
/// and, with the draw ([`Decided::with_draw`]), since only these depend on it:
///
/// 9. the wait (the longer of the hint, its spread cut at the room left, and the policy's own)
///    past the policy's total allowance: `RetryAfterTooLong` if the hint alone is over it,
///    else `Budget`;
/// 10. the wait past the budget's remaining time: `Budget`.
///
/// The quota is not read here: the engine withdraws from it after a `Retry`, and a refusal is
/// `Stop(Quota)` (reading it inside the decision would race two calls).
///
/// ```
/// use retry_runtime::ladder::{self, Decided, Failure, Step, Why};
/// use retry_runtime::{Class, Draw, Policy, StopReason};
/// use std::time::Duration;
///
/// let hinted = Failure::new(1, Class::RateLimited { retry_after: Some(Duration::from_secs(3)) });
/// let decision = ladder::decide(&Policy::AVAILABILITY, hinted).with_draw(Draw::IDEAL);
/// assert_eq!(decision.step, Step::Retry { wait: Duration::from_secs(3) });
/// assert_eq!(decision.rule, Why::Hint);
///
/// // The last attempt stops before any wait: no draw is asked for.
/// let last = Failure::new(4, Class::Transport);
/// let Decided::Stop(decision) = ladder::decide(&Policy::AVAILABILITY, last) else { panic!() };
/// assert_eq!(decision.step, Step::Stop(StopReason::Exhausted { attempts: 4 }));
/// assert_eq!(decision.rule, Why::Attempts);
/// ```
#[inline]
pub const fn decide(policy: &Policy, failure: Failure) -> Decided {
    // In line, so that a caller that knows which it asks (a move, or not) keeps only that.
    match failure.another_ready {
        true => moves::moved(policy, failure),
        false => retried(policy, failure),
    }
}

/// [`decide`] on a failure no other upstream is ready for: its rules 1 to 10.
const fn retried(policy: &Policy, failure: Failure) -> Decided {
    if let Some((reason, rule)) = refusal(policy, failure) {
        return Decided::Stop(stop(reason, rule));
    }
    let (ideal, jitter, own_rule) = match (failure.class, policy.rate_limit()) {
        (Class::RateLimited { .. }, RateLimit::Once { wait }) => {
            if failure.rate_limited_before {
                let reason = StopReason::Exhausted {
                    attempts: failure.attempt,
                };
                return Decided::Stop(stop(reason, Why::RateLimitOnce));
            }
            (wait, None, Why::RateLimitOnce)
        }
        _ => {
            let ideal = ideal_wait(policy, failure.attempt);
            (
                ideal,
                Some(policy.jitter()),
                rung_rule(policy, failure.attempt, ideal),
            )
        }
    };
    // A hint of zero asks for nothing, so it is no hint at all; of the class's and the
    // stream's reconnection time, the longer counts.
    let hint = match (failure.class.retry_after(), failure.reconnect) {
        (Some(class), Some(reconnect)) => Some(max_duration(class, reconnect)),
        (Some(hint), None) | (None, Some(hint)) => Some(hint),
        (None, None) => None,
    };
    let hint = match hint {
        Some(hint) if !hint.is_zero() => Some(hint),
        _ => None,
    };
    if let Some(hint) = hint
        && hint.as_nanos() > policy.max_retry_after().as_nanos()
    {
        let reason = StopReason::RetryAfterTooLong {
            wanted: hint,
            max: policy.max_retry_after(),
        };
        return Decided::Stop(stop(reason, Why::MaxHint));
    }
    // Every stop of its own has had its say: a request that cannot be sent again ends here.
    if !failure.resendable {
        return Decided::Stop(stop(StopReason::NotResendable, Why::NotResendable));
    }
    // The whole ladder, hints included, stays within the policy's total, and never past the
    // most any ladder may wait, so the time waited is always exact.
    let total = min_duration(policy.max_total_wait(), Policy::MAX_TOTAL_WAIT);
    Decided::Pending(Pending {
        ideal,
        jitter,
        own_rule,
        hint,
        allowance: total.saturating_sub(failure.waited),
        remaining: failure.remaining,
    })
}

/// Rules 1 to 5 of [`decide`]: the stops decided by the failure's facts alone, before any wait
/// is computed.
const fn refusal(policy: &Policy, failure: Failure) -> Option<(StopReason, Why)> {
    let class = failure.class;
    // A retry would repeat what the caller already has.
    if failure.committed && !failure.restartable {
        return Some((StopReason::Committed, Why::Committed));
    }
    // Any inner give-up during this attempt, whatever this failure's class: retrying at two
    // layers would multiply the attempts.
    if failure.inner_gave_up && class.is_transient() {
        return Some((StopReason::Nested, Why::Nested));
    }
    if matches!(class, Class::Cancelled) {
        return Some((StopReason::Cancelled, Why::Declined));
    }
    // A resume refused answers the resume, not the request, which was sent: unknown.
    let answer = matches!(class, Class::Definitive);
    if failure.reopen && (answer || !policy.retries(&class)) {
        return Some((StopReason::ResumeFailed, Why::Declined));
    }
    // An answer is never retried, whatever the policy's class list says.
    if answer {
        return Some((StopReason::Definitive, Why::Declined));
    }
    if !policy.retries(&class) {
        return Some((StopReason::NotRetried { class }, Why::Declined));
    }
    let attempts = allowed_attempts(policy);
    if failure.attempt >= attempts {
        return Some((StopReason::Exhausted { attempts }, Why::Attempts));
    }
    if failure.turn_over {
        return Some((StopReason::Cancelled, Why::TurnOver));
    }
    None
}

/// The attempts a policy makes: an `attempts` of 0 behaves as 1 (the call is always made
/// once), and more than the most a policy may make behaves as that most, so the count
/// reported is the count made.
pub(crate) const fn allowed_attempts(policy: &Policy) -> u32 {
    if policy.attempts() == 0 {
        1
    } else if policy.attempts() > Policy::MAX_ATTEMPTS {
        Policy::MAX_ATTEMPTS
    } else {
        policy.attempts()
    }
}

/// Whether rung `retry`'s wait `ideal` is the rung (`Ladder`) or the cap under it (`Cap`).
const fn rung_rule(policy: &Policy, retry: u32, ideal: Duration) -> Why {
    // The cap holds a rung only where the rung reached it; only then is the uncapped ladder
    // walked, and only until it passes the cap, to see whether it would have gone further.
    let cap = policy.cap().as_nanos();
    if ideal.as_nanos() != cap {
        return Why::Ladder;
    }
    let multiplier = policy.multiplier_milli() as u128;
    let mut uncapped = policy.base().as_nanos();
    let mut step = 1;
    while step < retry && uncapped <= cap && multiplier > 1000 {
        uncapped = grow(uncapped, multiplier, MAX_NANOS);
        step += 1;
    }
    if uncapped > cap {
        Why::Cap
    } else {
        Why::Ladder
    }
}

const fn grow(ideal: u128, multiplier_milli: u128, cap: u128) -> u128 {
    // ideal < cap <= MAX_NANOS < 2^95 and multiplier < 2^32, so the product fits in u128;
    // a ladder's waits fit in u64 nanoseconds (584 years), where dividing is a multiply.
    let product = ideal * multiplier_milli;
    let next = if product <= u64::MAX as u128 {
        (product as u64 / 1000) as u128
    } else {
        product / 1000
    };
    // Progress by at least a nanosecond, so a tiny base with a tiny growth still reaches the cap.
    let next = if next <= ideal { ideal + 1 } else { next };
    min_u128(next, cap)
}

const fn to_duration(nanos: u128) -> Duration {
    if nanos >= MAX_NANOS {
        return Duration::MAX;
    }
    // Every wait a ladder takes fits in u64 nanoseconds: divide there, by a multiply, not by
    // the 128-bit division the general case calls.
    if nanos <= u64::MAX as u128 {
        return Duration::from_nanos(nanos as u64);
    }
    Duration::new(
        (nanos / NANOS_PER_SEC) as u64,
        (nanos % NANOS_PER_SEC) as u32,
    )
}

const fn sat_add(a: u128, b: u128) -> u128 {
    let sum = a.saturating_add(b);
    if sum > MAX_NANOS { MAX_NANOS } else { sum }
}

const fn min_duration(a: Duration, b: Duration) -> Duration {
    if a.as_nanos() <= b.as_nanos() { a } else { b }
}

const fn max_duration(a: Duration, b: Duration) -> Duration {
    if a.as_nanos() >= b.as_nanos() { a } else { b }
}

const fn min_u128(a: u128, b: u128) -> u128 {
    if a < b { a } else { b }
}

const fn clamp_u128(value: u128, low: u128, high: u128) -> u128 {
    if value < low {
        low
    } else if value > high {
        high
    } else {
        value
    }
}

/// A policy's worst cases, as the ladder's arithmetic sums them (here, so the policy does not
/// import the ladder that imports it).
impl Policy {
    /// The longest the ladder can wait in all, jitter included, before it runs out of attempts;
    /// `Retry-After` hints aside (they are bounded by [`max_retry_after`](Self::max_retry_after)
    /// and by the budget at run time). A [`RateLimit::Once`] retry counts with its own wait
    /// (and its small spread) in place of the first rung: the outage ladder's 5 + 15 + 45 s
    /// becomes, at worst, 20 s (+ up to 1 s) + 15 + 45.
    ///
    /// ```
    /// use retry_runtime::Policy;
    /// use std::time::Duration;
    ///
    /// // An interactive call: under two seconds of waiting.
    /// const _: () = assert!(Policy::AVAILABILITY.worst_case_wait().as_millis() < 2_000);
    /// // An outage's 5 + 15 + 45 s, at most a fifth longer; the rate limit's 20 s (+ 1 s) in
    /// // place of the first rung.
    /// assert_eq!(Policy::OUTAGE.with_rate_limit(retry_runtime::RateLimit::Ladder).worst_case_wait(), Duration::from_secs(78));
    /// assert_eq!(Policy::OUTAGE.worst_case_wait(), Duration::from_secs(93));
    /// ```
    pub const fn worst_case_wait(&self) -> Duration {
        worst_case_wait(self)
    }

    /// The longest the ladder can wait in all with every `Retry-After` hint at its longest
    /// (the policy's `max_retry_after` and its spread), bounded by
    /// [`max_total_wait`](Self::max_total_wait).
    ///
    /// ```
    /// use retry_runtime::Policy;
    /// use std::time::Duration;
    ///
    /// // The whole ladder, hints included, stays within a tenth of a 180 s turn.
    /// const _: () = assert!(Policy::AVAILABILITY.worst_case_wait_with_hints().as_secs() <= 18);
    /// assert_eq!(Policy::TRANSIENT.worst_case_wait_with_hints(), Duration::from_secs(4 * 121));
    /// ```
    pub const fn worst_case_wait_with_hints(&self) -> Duration {
        worst_case_wait_with_hints(self)
    }
}
