//! [`Policy`]: which classes retry, and the ladder of waits; the three built-in policies.

use std::fmt;
use std::time::Duration;

use crate::class::{Class, ClassSet};

/// How a wait is spread around its ideal value, so sessions that fail together do not retry
/// together.
///
/// | jitter | factor on the ideal wait |
/// |---|---|
/// | `Proportional` | [0.5, 1.5): may exceed the ideal, and so the cap, by half |
/// | `Equal` | [0.5, 1): never longer than the ideal |
/// | `Full` | [0, 1) |
/// | `Above` | [1, 1.2): never shorter than stated, at most a fifth longer |
/// | `None` | exactly 1 |
///
/// ```
/// use retry_runtime::Jitter;
/// assert_eq!(Jitter::Proportional.max_factor_percent(), 150);
/// assert_eq!(Jitter::Equal.max_factor_percent(), 100);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Jitter {
    /// A factor in [0.5, 1.5).
    Proportional,
    /// A factor in [0.5, 1): never longer than stated.
    Equal,
    /// A factor in [0, 1).
    Full,
    /// A factor in [1, 1.2): never shorter than stated, so a ladder sized to wait out an
    /// outage always does (outages delay, never fail fast), and spread by at most a fifth above it.
    Above,
    /// No jitter: every wait is its ideal.
    None,
}

impl Jitter {
    /// Every jitter, in the order the attribute and the CLI list them.
    pub const ALL: [Jitter; 5] = [
        Jitter::Proportional,
        Jitter::Equal,
        Jitter::Full,
        Jitter::Above,
        Jitter::None,
    ];

    /// The jitter called `name`, as the attribute and the CLI spell it.
    ///
    /// ```
    /// use retry_runtime::Jitter;
    /// assert_eq!(Jitter::named("above"), Some(Jitter::Above));
    /// assert_eq!(Jitter::named("decorrelated"), None);
    /// ```
    pub fn named(name: &str) -> Option<Jitter> {
        Jitter::ALL.into_iter().find(|jitter| jitter.name() == name)
    }

    /// The least upper bound of the factor, in percent (the factor itself stays below it,
    /// except for `None`, whose factor is exactly 100 %).
    pub const fn max_factor_percent(self) -> u32 {
        match self {
            Jitter::Proportional => 150,
            Jitter::Above => 120,
            Jitter::Equal | Jitter::Full | Jitter::None => 100,
        }
    }

    /// The lowest factor, in percent.
    pub const fn min_factor_percent(self) -> u32 {
        match self {
            Jitter::Proportional | Jitter::Equal => 50,
            Jitter::Full => 0,
            Jitter::Above | Jitter::None => 100,
        }
    }

    /// The jitter's name as the attribute and the CLI spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Jitter::Proportional => "proportional",
            Jitter::Equal => "equal",
            Jitter::Full => "full",
            Jitter::Above => "above",
            Jitter::None => "none",
        }
    }
}

/// What a policy does with a `RateLimited` failure.
///
/// ```
/// use retry_runtime::{Policy, RateLimit};
/// use std::time::Duration;
/// assert_eq!(Policy::OUTAGE.rate_limit(), RateLimit::Once { wait: Duration::from_secs(20) });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateLimit {
    /// Wait the `Retry-After` hint if there is one, else the ladder's wait; retry as often as
    /// the ladder allows.
    Ladder,
    /// Retry a rate limit once per call, after the hint or else `wait`.
    Once {
        /// The wait when the far side gave no hint.
        wait: Duration,
    },
}

/// A retry policy: which failures are retried, how many attempts are made, and the ladder of
/// waits between them.
///
/// A policy is a value built in `const` context, so a program's policies are `const` items
/// whose worst case is known at compile time:
///
/// ```
/// use retry_runtime::{Class, Jitter, Policy};
/// use std::time::Duration;
///
/// const MODEL: Policy = Policy::AVAILABILITY
///     .with_attempts(5)
///     .with_base(Duration::from_millis(100))
///     .retrying(Class::InvalidOutput);
///
/// // 100 + 200 + 400 + 800 ms, and equal jitter never waits longer than the ideal.
/// const _: () = assert!(MODEL.worst_case_wait().as_millis() == 1500);
/// assert!(MODEL.retries(&Class::InvalidOutput));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Policy {
    name: &'static str,
    retried: ClassSet,
    attempts: u32,
    base: Duration,
    cap: Duration,
    multiplier_milli: u32,
    jitter: Jitter,
    rate_limit: RateLimit,
    max_retry_after: Duration,
    max_total_wait: Duration,
}

impl Policy {
    /// For an interactive call: retry what fails fast, and only that. Transport errors, 502/503/504/529 and
    /// 429; 4 attempts; waits of 250, 500, 1000 ms with equal jitter, so at most 1.75 s of
    /// ladder. A `Retry-After` is a floor under a wait, and the whole ladder, hints included,
    /// waits at most 18 s: a tenth of a 180 s turn.
    ///
    /// It does not retry `Timeout`: an attempt that used up its `timeout` (a
    /// [`TimedOut`](crate::TimedOut)) is never retried under it.
    pub const AVAILABILITY: Policy = Policy {
        name: "availability",
        retried: ClassSet::EMPTY
            .with(Class::Transport)
            .with(Class::Unavailable { retry_after: None })
            .with(Class::RateLimited { retry_after: None }),
        attempts: 4,
        base: Duration::from_millis(250),
        cap: Duration::from_secs(20),
        multiplier_milli: 2000,
        jitter: Jitter::Equal,
        rate_limit: RateLimit::Ladder,
        max_retry_after: Duration::from_secs(120),
        max_total_wait: Duration::from_secs(18),
    };

    /// For a dependency that goes down for minutes: wait out an outage. Transport errors and 502/503/504/529; 4 attempts; waits of
    /// at least 5, 15, 45 s, spread above by at most a fifth (`Above` jitter), so an outage of
    /// about a minute is always waited out (65 s at least, 78 s at most). A rate limit gets a
    /// single retry after 20 s, or a longer `Retry-After`. A 500, a timeout and a budget refusal
    /// are not retried.
    pub const OUTAGE: Policy = Policy {
        name: "outage",
        retried: ClassSet::EMPTY
            .with(Class::Transport)
            .with(Class::Unavailable { retry_after: None })
            .with(Class::RateLimited { retry_after: None }),
        attempts: 4,
        base: Duration::from_secs(5),
        cap: Duration::from_secs(45),
        multiplier_milli: 3000,
        jitter: Jitter::Above,
        rate_limit: RateLimit::Once {
            wait: Duration::from_secs(20),
        },
        max_retry_after: Duration::from_secs(120),
        max_total_wait: Duration::MAX,
    };

    /// For a batch or CI job: a falling-off retry rate on every transient error. Transport errors, 5xx,
    /// timeouts and 429; 5 attempts; waits of 1, 2, 4, 8 s capped at 16 s, with proportional
    /// jitter in [0.5, 1.5), so a wait may reach 1.5 × the cap. `Retry-After` over the doubling.
    pub const TRANSIENT: Policy = Policy {
        name: "transient",
        retried: ClassSet::EMPTY
            .with(Class::Transport)
            .with(Class::Unavailable { retry_after: None })
            .with(Class::ServerError)
            .with(Class::Timeout)
            .with(Class::RateLimited { retry_after: None }),
        attempts: 5,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(16),
        multiplier_milli: 2000,
        jitter: Jitter::Proportional,
        rate_limit: RateLimit::Ladder,
        max_retry_after: Duration::from_secs(120),
        max_total_wait: Duration::MAX,
    };

    /// The most attempts a policy may make, ten thousand; [`check`](Self::check) refuses more,
    /// so an attempt count is always exact. No ladder needs more: a longer one is bounded by
    /// time (a budget, a turn), not by its count.
    pub const MAX_ATTEMPTS: u32 = 10_000;

    /// The longest a policy's ladder may wait in all, hints included (`u32::MAX` ms, about 49.7
    /// days); [`check`](Self::check) refuses a policy whose
    /// [`worst_case_wait_with_hints`](Self::worst_case_wait_with_hints) is longer, so the time
    /// a call waited is always exact (to the millisecond).
    pub const MAX_TOTAL_WAIT: Duration = Duration::from_millis(u32::MAX as u64);

    /// The built-in policies, by name: `availability` (the default), `outage`, `transient`.
    pub const BUILT_IN: [Policy; 3] = [Policy::AVAILABILITY, Policy::OUTAGE, Policy::TRANSIENT];

    /// The built-in policy called `name`, as the `&'static` reference [`Retry::new`] takes.
    ///
    /// ```
    /// use retry_runtime::{Policy, Retry};
    /// assert_eq!(Policy::named("outage"), Some(&Policy::OUTAGE));
    /// assert_eq!(Policy::named("outrage"), None);
    /// let retry = Retry::new(Policy::named("transient").unwrap());
    /// # let _ = retry;
    /// ```
    ///
    /// [`Retry::new`]: crate::Retry::new
    pub fn named(name: &str) -> Option<&'static Policy> {
        let built_in: &'static [Policy; 3] = &Policy::BUILT_IN;
        built_in.iter().find(|p| p.name == name)
    }

    /// A policy with this name and the `availability` policy's settings, to adjust from.
    pub const fn new(name: &'static str) -> Policy {
        Policy {
            name,
            ..Policy::AVAILABILITY
        }
    }

    /// The policy's name, as notices and the CLI print it.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The total number of attempts, the first included. An `attempts` of 0 behaves as 1: the
    /// call is always made once.
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The ideal wait before the first retry.
    pub const fn base(&self) -> Duration {
        self.base
    }

    /// The largest ideal wait; jitter applies after it, so `Proportional` may reach 1.5 × cap.
    pub const fn cap(&self) -> Duration {
        self.cap
    }

    /// The growth of the ideal wait from one retry to the next, in thousandths (2000 doubles).
    pub const fn multiplier_milli(&self) -> u32 {
        self.multiplier_milli
    }

    /// How waits are spread around their ideal.
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// What happens to a rate limit.
    pub const fn rate_limit(&self) -> RateLimit {
        self.rate_limit
    }

    /// The longest `Retry-After` the policy honours; a longer hint ends the ladder at once.
    pub const fn max_retry_after(&self) -> Duration {
        self.max_retry_after
    }

    /// The most the whole ladder may wait, `Retry-After` hints included; `Duration::MAX` when
    /// only the attempts and the budget bound it. A wait that would cross it is not taken.
    pub const fn max_total_wait(&self) -> Duration {
        self.max_total_wait
    }

    /// The classes this policy retries.
    pub const fn retried(&self) -> ClassSet {
        self.retried
    }

    /// Whether a failure of this class is retried (while attempts and budget last).
    pub const fn retries(&self, class: &Class) -> bool {
        self.retried.contains(class)
    }

    /// This policy, renamed.
    pub const fn with_name(self, name: &'static str) -> Policy {
        Policy { name, ..self }
    }

    /// This policy with `attempts` attempts in all, the first included.
    pub const fn with_attempts(self, attempts: u32) -> Policy {
        Policy { attempts, ..self }
    }

    /// This policy with the first ideal wait set to `base`.
    pub const fn with_base(self, base: Duration) -> Policy {
        Policy { base, ..self }
    }

    /// This policy with the ideal wait capped at `cap`.
    pub const fn with_cap(self, cap: Duration) -> Policy {
        Policy { cap, ..self }
    }

    /// This policy with each ideal wait `multiplier` times the one before, rounded to the
    /// nearest thousandth (2.0 doubles, 1.6 is gRPC's growth).
    ///
    /// ```
    /// use retry_runtime::Policy;
    /// assert_eq!(Policy::AVAILABILITY.with_multiplier(1.001).multiplier_milli(), 1001);
    /// assert_eq!(Policy::AVAILABILITY.with_multiplier(1.0004).multiplier_milli(), 1000);
    /// ```
    pub const fn with_multiplier(self, multiplier: f64) -> Policy {
        // `f64::round` is not `const` before Rust 1.90: add one half and truncate (the cast
        // saturates and maps NaN to 0, which `check` reports). 1.001 * 1000 is 1000.999...
        let multiplier_milli = (multiplier * 1000.0 + 0.5) as u32;
        Policy {
            multiplier_milli,
            ..self
        }
    }

    /// This policy with a different jitter.
    pub const fn with_jitter(self, jitter: Jitter) -> Policy {
        Policy { jitter, ..self }
    }

    /// This policy with a different rule for rate limits.
    pub const fn with_rate_limit(self, rate_limit: RateLimit) -> Policy {
        Policy { rate_limit, ..self }
    }

    /// This policy honouring `Retry-After` hints up to `max`.
    pub const fn with_max_retry_after(self, max: Duration) -> Policy {
        Policy {
            max_retry_after: max,
            ..self
        }
    }

    /// This policy waiting at most `max` in all, hints included (`Duration::MAX`: no cap).
    pub const fn with_max_total_wait(self, max: Duration) -> Policy {
        Policy {
            max_total_wait: max,
            ..self
        }
    }

    /// This policy retrying `class` too (for example `InvalidOutput`, which no built-in policy
    /// retries: a new try of unusable output may be valid, so a policy opts in).
    pub const fn retrying(self, class: Class) -> Policy {
        Policy {
            retried: self.retried.with(class),
            ..self
        }
    }

    /// This policy no longer retrying `class`.
    pub const fn not_retrying(self, class: Class) -> Policy {
        Policy {
            retried: self.retried.without(class),
            ..self
        }
    }

    /// Whether the policy's numbers make sense: at least one attempt and at most
    /// [`MAX_ATTEMPTS`](Self::MAX_ATTEMPTS), a nonzero base, a cap not below the base, a
    /// multiplier of at least 1, and a worst case (hints included) within
    /// [`MAX_TOTAL_WAIT`](Self::MAX_TOTAL_WAIT).
    ///
    /// ```
    /// use retry_runtime::{Policy, PolicyError};
    /// assert_eq!(Policy::TRANSIENT.check(), Ok(()));
    /// assert_eq!(Policy::TRANSIENT.with_attempts(0).check(), Err(PolicyError::NoAttempts));
    /// ```
    pub const fn check(&self) -> Result<(), PolicyError> {
        if self.attempts == 0 {
            Err(PolicyError::NoAttempts)
        } else if self.attempts > Policy::MAX_ATTEMPTS {
            Err(PolicyError::TooManyAttempts)
        } else if self.base.is_zero() {
            Err(PolicyError::ZeroBase)
        } else if self.cap.as_nanos() < self.base.as_nanos() {
            Err(PolicyError::CapBelowBase)
        } else if self.multiplier_milli < 1000 {
            Err(PolicyError::ShrinkingMultiplier)
        } else if self.worst_case_wait_with_hints().as_nanos() > Policy::MAX_TOTAL_WAIT.as_nanos() {
            Err(PolicyError::WaitsTooLong)
        } else {
            Ok(())
        }
    }
}

impl Default for Policy {
    /// The `availability` policy.
    fn default() -> Self {
        Policy::AVAILABILITY
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name)
            .field("retried", &self.retried)
            .field("attempts", &self.attempts)
            .field("base", &self.base)
            .field("cap", &self.cap)
            .field(
                "multiplier",
                &format_args!("{}", self.multiplier_milli as f64 / 1000.0),
            )
            .field("jitter", &self.jitter)
            .field("rate_limit", &self.rate_limit)
            .field("max_retry_after", &self.max_retry_after)
            .field("max_total_wait", &self.max_total_wait)
            .finish()
    }
}

/// Why a policy's numbers do not make sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// `attempts` is 0; the call is always made at least once.
    #[error("`attempts` is 0; a policy makes at least one attempt, so use 1 for no retries")]
    NoAttempts,
    /// `base` is zero, so the ladder would not back off at all.
    #[error(
        "`base` is zero; a ladder that does not back off hammers the far side, so use at least 1 ms"
    )]
    ZeroBase,
    /// `cap` is below `base`.
    #[error("`cap` is below `base`; raise the cap or lower the base")]
    CapBelowBase,
    /// `multiplier` is below 1, NaN or negative.
    #[error("`multiplier` is below 1; waits must not shrink, so use 1 for a constant ladder")]
    ShrinkingMultiplier,
    /// `attempts` is above [`Policy::MAX_ATTEMPTS`].
    #[error("`attempts` is above 10000, the most a policy may make; use fewer")]
    TooManyAttempts,
    /// The ladder, hints included, could wait longer than [`Policy::MAX_TOTAL_WAIT`].
    #[error(
        "the ladder could wait longer than 49 days in all; lower `attempts` or `max_retry_after`, or set a `max_total_wait`"
    )]
    WaitsTooLong,
}

/// A policy is its own handle, so that a [`Retry`](crate::Retry) takes `&Policy` of any
/// lifetime or an `Arc<Policy>` alike.
impl AsRef<Policy> for Policy {
    fn as_ref(&self) -> &Policy {
        self
    }
}
