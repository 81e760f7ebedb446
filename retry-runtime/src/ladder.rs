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
}

impl Failure {
    /// Attempt `attempt` (1 for the first) failed with `class`: no rate limit retried before,
    /// no budget, nothing waited yet.
    pub const fn new(attempt: u32, class: Class) -> Failure {
        Failure {
            attempt,
            class,
            rate_limited_before: false,
            remaining: None,
            waited: Duration::ZERO,
            inner_gave_up: false,
            turn_over: false,
        }
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

/// Decide, from the policy and one failure, whether to wait and retry or to stop: the step
/// of [`decide`], without its rule.
///
/// ```
/// use retry_runtime::ladder::{self, Failure, Step};
/// use retry_runtime::{Class, Draw, Policy, StopReason};
/// use std::time::Duration;
///
/// let failure = Failure::new(1, Class::Unavailable { retry_after: None });
/// assert_eq!(
///     ladder::next_step(&Policy::AVAILABILITY, failure, Draw::IDEAL),
///     Step::Retry { wait: Duration::from_millis(250) },
/// );
/// let answer = failure.with_class(Class::Definitive);
/// assert_eq!(ladder::next_step(&Policy::AVAILABILITY, answer, Draw::IDEAL), Step::Stop(StopReason::Definitive));
/// ```
pub const fn next_step(policy: &Policy, failure: Failure, draw: Draw) -> Step {
    decide(policy, failure, draw).step
}

/// Which rule of [`decide`] set a step: the term the wait is, or the check that stopped.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Why {
    /// The wait is the ladder's rung, jittered.
    Ladder,
    /// The wait is the policy's cap, jittered: the rung would have been longer.
    Cap,
    /// The wait is the server's hint (with its spread): longer than the ladder's own.
    Hint,
    /// The wait is a rate limit's single wait (`RateLimit::Once`), or its one retry is spent.
    RateLimitOnce,
    /// A retried call nested in the attempt already gave up.
    Nested,
    /// The failure's class stops it: cancelled, an answer, or a class the policy does not retry.
    Declined,
    /// Every attempt the policy allows was made.
    Attempts,
    /// The turn was cancelled or its deadline passed.
    TurnOver,
    /// The hint is longer than the policy's `max_retry_after`.
    MaxHint,
    /// The wait would go past the policy's total allowance.
    MaxTotal,
    /// The wait would go past the budget's remaining time.
    Remaining,
}

impl Why {
    /// The rule's name in `snake_case`, as `backoff explain` prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Why::Ladder => "ladder",
            Why::Cap => "cap",
            Why::Hint => "hint",
            Why::RateLimitOnce => "rate_limit_once",
            Why::Nested => "nested",
            Why::Declined => "policy",
            Why::Attempts => "attempts",
            Why::TurnOver => "cancelled",
            Why::MaxHint => "max_hint",
            Why::MaxTotal => "max_total",
            Why::Remaining => "budget",
        }
    }
}

/// A step, and the rule that decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// What the ladder does.
    pub step: Step,
    /// Why.
    pub rule: Why,
}

const fn stop(reason: StopReason, rule: Why) -> Decision {
    Decision {
        step: Step::Stop(reason),
        rule,
    }
}

/// The whole decision on one failure, pure: the engine calls it once per failure, and
/// `backoff explain` prints its rule. The checks, in order, the first that applies deciding:
///
/// 1. a retried call nested in the attempt gave up on a transient failure: `Nested`;
/// 2. the class: cancelled, an answer, a class the policy does not retry; then the attempts
///    the policy allows ([`stop_before_waiting`]);
/// 3. the turn cancelled, or its deadline passed: `Cancelled`;
/// 4. a rate limit under `RateLimit::Once` whose one retry is spent: `Exhausted`;
/// 5. a hint over the policy's `max_retry_after`: `RetryAfterTooLong`;
/// 6. the wait (the longer of the hint, its spread cut at the room left, and the policy's own)
///    past the policy's total allowance: `RetryAfterTooLong` if the hint alone is over it,
///    else `Budget`;
/// 7. the wait past the budget's remaining time: `Budget`.
///
/// The quota is not read here: the engine withdraws from it after a `Retry`, and a refusal is
/// `Stop(Quota)` (reading it inside the decision would race two calls).
///
/// ```
/// use retry_runtime::ladder::{self, Failure, Step, Why};
/// use retry_runtime::{Class, Draw, Policy};
/// use std::time::Duration;
///
/// let hinted = Failure::new(1, Class::RateLimited { retry_after: Some(Duration::from_secs(3)) });
/// let decision = ladder::decide(&Policy::AVAILABILITY, hinted, Draw::IDEAL);
/// assert_eq!(decision.step, Step::Retry { wait: Duration::from_secs(3) });
/// assert_eq!(decision.rule, Why::Hint);
/// ```
pub const fn decide(policy: &Policy, failure: Failure, draw: Draw) -> Decision {
    let class = failure.class;
    // Any inner give-up during this attempt, whatever this failure's class: retrying at two
    // layers would multiply the attempts.
    if failure.inner_gave_up && class.is_transient() {
        return stop(StopReason::Nested, Why::Nested);
    }
    if let Some(reason) = stop_before_waiting(policy, class, failure.attempt) {
        let rule = match reason {
            StopReason::Exhausted { .. } => Why::Attempts,
            _ => Why::Declined,
        };
        return stop(reason, rule);
    }
    if failure.turn_over {
        return stop(StopReason::Cancelled, Why::TurnOver);
    }
    let (own, own_rule) = match own_wait(policy, failure, draw) {
        Ok(own) => own,
        Err(spent) => return spent,
    };
    fit(policy, failure, draw, own, own_rule)
}

/// The policy's own wait for a failure that may be retried: the ladder's rung (or its cap),
/// or a rate limit's single wait; or the stop of a single rate-limit retry already spent.
const fn own_wait(
    policy: &Policy,
    failure: Failure,
    draw: Draw,
) -> Result<(Duration, Why), Decision> {
    match (failure.class, policy.rate_limit()) {
        (Class::RateLimited { .. }, RateLimit::Once { wait }) => {
            if failure.rate_limited_before {
                return Err(stop(
                    StopReason::Exhausted {
                        attempts: failure.attempt,
                    },
                    Why::RateLimitOnce,
                ));
            }
            Ok((hinted(wait, draw), Why::RateLimitOnce))
        }
        _ => {
            let capped = ideal_wait(policy, failure.attempt);
            let uncapped = ideal_wait(&policy.with_cap(Duration::MAX), failure.attempt);
            let rule = if uncapped.as_nanos() > capped.as_nanos() {
                Why::Cap
            } else {
                Why::Ladder
            };
            Ok((ladder_wait(policy, failure.attempt, draw), rule))
        }
    }
}

/// The wait, the longer of the hint (with its spread) and the policy's own, if it fits the
/// policy's total allowance and the budget's remaining time.
const fn fit(
    policy: &Policy,
    failure: Failure,
    draw: Draw,
    own: Duration,
    own_rule: Why,
) -> Decision {
    let class = failure.class;
    // The whole ladder, hints included, stays within the policy's total, and never past the
    // most any ladder may wait, so the time waited is always exact.
    let total = min_duration(policy.max_total_wait(), Policy::MAX_TOTAL_WAIT);
    let allowance = total.saturating_sub(failure.waited);
    // What a wait may take: the allowance, and the budget's remaining time.
    let room = match failure.remaining {
        Some(remaining) => min_duration(allowance, remaining),
        None => allowance,
    };
    // A hint is a floor, never a shortcut: the longer of it (with its spread) and the policy's
    // own wait. A hint of zero asks for nothing, so it is no hint at all.
    let hint = match class.retry_after() {
        Some(hint) if !hint.is_zero() => Some(hint),
        _ => None,
    };
    let (wait, rule) = match hint {
        Some(hint) => {
            if hint.as_nanos() > policy.max_retry_after().as_nanos() {
                return stop(
                    StopReason::RetryAfterTooLong {
                        wanted: hint,
                        max: policy.max_retry_after(),
                    },
                    Why::MaxHint,
                );
            }
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
                (own, own_rule)
            }
        }
        None => (own, own_rule),
    };
    if wait.as_nanos() > allowance.as_nanos() {
        return match hint {
            // The figure compared is the hint itself: it is over the allowance.
            Some(hint) if hint.as_nanos() > allowance.as_nanos() => stop(
                StopReason::RetryAfterTooLong {
                    wanted: hint,
                    max: allowance,
                },
                Why::MaxTotal,
            ),
            _ => stop(
                StopReason::Budget {
                    wanted: wait,
                    remaining: allowance,
                },
                Why::Remaining,
            ),
        };
    }
    // Past the deadline (nothing remains), even a zero wait would start the next attempt late.
    if let Some(remaining) = failure.remaining
        && (wait.as_nanos() > remaining.as_nanos() || remaining.is_zero())
    {
        return stop(
            StopReason::Budget {
                wanted: wait,
                remaining,
            },
            Why::Remaining,
        );
    }
    Decision {
        step: Step::Retry { wait },
        rule,
    }
}

/// The stops decided by the failure's class and the attempt count alone, before any wait is
/// computed: a cancelled call, an answer, a class the policy does not retry, the last attempt.
/// The engine asks this first, so such a failure reads neither the clock nor the RNG.
///
/// ```
/// use retry_runtime::{ladder, Class, Policy, StopReason};
/// assert_eq!(ladder::stop_before_waiting(&Policy::AVAILABILITY, Class::ServerError, 1),
///            Some(StopReason::NotRetried { class: Class::ServerError }));
/// assert_eq!(ladder::stop_before_waiting(&Policy::AVAILABILITY, Class::Unavailable { retry_after: None }, 1), None);
/// assert_eq!(ladder::stop_before_waiting(&Policy::AVAILABILITY, Class::Unavailable { retry_after: None }, 4),
///            Some(StopReason::Exhausted { attempts: 4 }));
/// ```
pub const fn stop_before_waiting(
    policy: &Policy,
    class: Class,
    attempt: u32,
) -> Option<StopReason> {
    if matches!(class, Class::Cancelled) {
        return Some(StopReason::Cancelled);
    }
    // An answer is never retried, whatever the policy's class list says (rule 1).
    if matches!(class, Class::Definitive) {
        return Some(StopReason::Definitive);
    }
    if !policy.retries(&class) {
        return Some(StopReason::NotRetried { class });
    }
    // An `attempts` of 0 behaves as 1: the call is always made once; more than the most a
    // policy may make behaves as that most, so the count reported is the count made.
    let attempts = if policy.attempts() == 0 {
        1
    } else if policy.attempts() > Policy::MAX_ATTEMPTS {
        Policy::MAX_ATTEMPTS
    } else {
        policy.attempts()
    };
    if attempt >= attempts {
        return Some(StopReason::Exhausted { attempts });
    }
    None
}

/// The jittered ladder wait before retry `retry`.
pub const fn ladder_wait(policy: &Policy, retry: u32, draw: Draw) -> Duration {
    jittered(ideal_wait(policy, retry), policy.jitter(), draw)
}

const fn grow(ideal: u128, multiplier_milli: u128, cap: u128) -> u128 {
    // ideal < cap <= MAX_NANOS < 2^95 and multiplier < 2^32, so the product fits in u128.
    let next = ideal * multiplier_milli / 1000;
    // Progress by at least a nanosecond, so a tiny base with a tiny growth still reaches the cap.
    let next = if next <= ideal { ideal + 1 } else { next };
    min_u128(next, cap)
}

const fn to_duration(nanos: u128) -> Duration {
    if nanos >= MAX_NANOS {
        return Duration::MAX;
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
    /// // Seed 000: under two seconds of waiting.
    /// const _: () = assert!(Policy::AVAILABILITY.worst_case_wait().as_millis() < 2_000);
    /// // Seed 001's 5 + 15 + 45 s, at most a fifth longer; the rate limit's 20 s (+ 1 s) in
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
    /// // Seed 000: the whole ladder, hints included, stays within a tenth of a 180 s turn.
    /// const _: () = assert!(Policy::AVAILABILITY.worst_case_wait_with_hints().as_secs() <= 18);
    /// assert_eq!(Policy::TRANSIENT.worst_case_wait_with_hints(), Duration::from_secs(4 * 121));
    /// ```
    pub const fn worst_case_wait_with_hints(&self) -> Duration {
        worst_case_wait_with_hints(self)
    }
}
