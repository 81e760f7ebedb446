//! The engine: [`Retry`] runs an operation until it succeeds, its failure is an answer, or the
//! ladder or the budget runs out. `#[retry]` expands to the same engine.
//!
//! It owns the configuration ([`Retry`], [`TimedRetry`], and [`NoUpstream`], the placement a
//! retry is made with) here, what a run reads it through in `source.rs` (the runs themselves,
//! over every placement, are `route/`'s, which owns where and when each attempt goes), a call's
//! run in `run.rs` (its counters and the attempt protocol; what it tells,
//! the metrics, spans and notices, in `run/tell.rs`; the facts a stream hands it on a failure in
//! `run/facts.rs`, and the steps only a stream takes in `run/stream.rs`), its attempt counter in
//! `count.rs`, the call that reports itself when dropped in `call.rs`, and a call's wait, with
//! the call, in `waiting.rs`. It must not decide: whether and how long to wait is
//! [`ladder::decide`](crate::ladder::decide)'s alone, called once per failure. It keeps no turn
//! state of its own (the flight the turn hands it does, with what listens for the turn's
//! cancel), and no wait's (`wait.rs` holds the sleep, the failure and the quota's refund).

mod call;
mod count;
mod run;
mod source;
mod waiting;

use std::time::Duration;

use crate::clock::{Clock, TokioClock};
use crate::deadline::Deadline;
use crate::policy::Policy;
use crate::quota::Quota;

use crate::op::{OpLiteral, OpName};
pub use call::Call;
// Public but unnamed outside the crate: they are in the signatures of what `__private` hands
// the attribute's expansion (a `Call` is a `Run`, over a `Source`, whose failure is a
// `Waiting`), which names none of them.
#[allow(unreachable_pub)]
pub use call::Held;
#[allow(unreachable_pub)]
pub use count::Count;
#[allow(unreachable_pub)]
pub use run::Run;
#[cfg(feature = "stream")]
pub(crate) use run::facts::{Resuming, StreamFacts};
#[allow(unreachable_pub)]
pub use source::{Clocked, Source};
#[allow(unreachable_pub)]
pub use waiting::Waiting;

/// A retry's attempts go wherever the operation sends them: nothing is shared with other
/// calls. The placement [`Retry::new`] makes (see [`Placement`](crate::Placement) for the
/// others), and what an HTTP layer with no upstream is built with.
///
/// ```
/// use retry_runtime::{NoUpstream, Policy, Retry};
///
/// let retry: Retry = Retry::new(&Policy::AVAILABILITY);
/// let _: &Retry<_, _, _, _, NoUpstream> = &retry;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NoUpstream;

/// A retried operation: a policy, a name for notices, a budget, and optionally a quota and a
/// clock. Build it in `const` context and reuse it; [`run`](Self::run) drives the loop.
///
/// ```
/// use retry_runtime::{testing, Policy, Retry};
/// use std::io::{Error, ErrorKind};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// static FETCH: Retry = Retry::new(&Policy::AVAILABILITY).named("fetch");
///
/// let (result, recorded) = testing::scope(FETCH.run(async |attempt| {
///     if attempt < 3 { Err(Error::from(ErrorKind::ConnectionRefused)) } else { Ok("body") }
/// }))
/// .await;
/// assert_eq!(result.unwrap(), "body");
/// assert_eq!(recorded.waits().len(), 2);
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Retry<
    C = TokioClock,
    P = &'static Policy,
    N = OpLiteral,
    Q = &'static Quota,
    L = NoUpstream,
> {
    pub(crate) policy: P,
    pub(crate) op: N,
    pub(crate) budget: Deadline,
    pub(crate) quota: Option<Q>,
    pub(crate) clock: C,
    /// Where its attempts go: no bytes without an upstream.
    pub(crate) place: L,
}

impl<P: AsRef<Policy>> Retry<TokioClock, P> {
    /// Retry under `policy`, on tokio's clock, within the enclosing turn.
    ///
    /// The policy is borrowed (`&policy`, for any lifetime: the `Retry` borrows it) or shared
    /// (`Arc<Policy>`: it moves into `tokio::spawn`). A borrowed one keeps a `Retry` `Copy`
    /// and small (six words), so a call's future moves cheaply; a built-in policy or a `static`
    /// of your own makes a `Retry` that is itself a `static`.
    ///
    /// ```
    /// use retry_runtime::{Policy, Retry};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// static PATIENT: Policy = Policy::OUTAGE.with_attempts(6);
    /// static FETCH: Retry = Retry::new(&PATIENT);
    /// // From configuration, at run time: borrowed in a local scope, or shared.
    /// let attempts = std::env::var("FETCH_ATTEMPTS").ok().and_then(|n| n.parse().ok()).unwrap_or(2);
    /// let configured = Policy::AVAILABILITY.with_attempts(attempts);
    /// assert_eq!(Retry::new(&configured).policy().attempts(), 2);
    /// let shared = Retry::new(Arc::new(configured));
    /// assert_eq!(shared.policy().attempts(), 2);
    /// # let _ = FETCH;
    /// ```
    pub const fn new(policy: P) -> Self {
        Retry {
            policy,
            op: OpLiteral::new("retry"),
            budget: Deadline::Turn,
            quota: None,
            clock: TokioClock,
            place: NoUpstream,
        }
    }
}

impl<C, P, Q, L> Retry<C, P, OpLiteral, Q, L> {
    /// Name the operation in notices and reports (`#[retry]` uses the function's path): a
    /// literal, at no cost per call, in `const` context too. For a name made at run time, see
    /// [`named_owned`](Self::named_owned).
    pub const fn named(mut self, op: &'static str) -> Self {
        self.op = OpLiteral::new(op);
        self
    }

    /// Name the operation with a name made at run time: a `String`, or an `Arc<str>`, which
    /// costs a reference-count increment per clone of the `Retry`. Notices and reports give it
    /// as a `&str`.
    ///
    /// ```
    /// use retry_runtime::{Policy, Retry};
    /// use std::sync::Arc;
    ///
    /// let tenant = "acme";
    /// let named = Retry::new(&Policy::AVAILABILITY).named_owned(Arc::<str>::from(format!("model:{tenant}")));
    /// assert_eq!(named.op(), "model:acme");
    /// ```
    pub fn named_owned<M: AsRef<str>>(self, op: M) -> Retry<C, P, M, Q, L> {
        let Retry {
            policy,
            budget,
            quota,
            clock,
            place,
            ..
        } = self;
        Retry {
            policy,
            op,
            budget,
            quota,
            clock,
            place,
        }
    }
}

impl<C, P, N, L> Retry<C, P, N, &'static Quota, L> {
    /// Draw retries from a cross-call [`Quota`], a `static` one.
    pub const fn with_quota(mut self, quota: &'static Quota) -> Self {
        self.quota = Some(quota);
        self
    }

    /// Draw retries from a cross-call [`Quota`] shared through an `Arc`: one per dependency,
    /// made at run time.
    ///
    /// ```
    /// use retry_runtime::{Policy, Quota, Retry};
    /// use std::sync::Arc;
    ///
    /// let quota = Arc::new(Quota::standard());
    /// let retry = Retry::new(&Policy::AVAILABILITY).with_shared_quota(Arc::clone(&quota));
    /// # let _ = retry;
    /// ```
    pub fn with_shared_quota(
        self,
        quota: std::sync::Arc<Quota>,
    ) -> Retry<C, P, N, std::sync::Arc<Quota>, L> {
        let Retry {
            policy,
            op,
            budget,
            clock,
            place,
            ..
        } = self;
        Retry {
            policy,
            op,
            budget,
            quota: Some(quota),
            clock,
            place,
        }
    }
}

impl<C, P, N, Q, L> Retry<C, P, N, Q, L> {
    /// Bound the ladder by `budget`.
    pub const fn within(mut self, budget: Deadline) -> Self {
        self.budget = budget;
        self
    }

    /// Use `clock` for time, sleep and jitter.
    pub fn with_clock<D: Clock>(self, clock: D) -> Retry<D, P, N, Q, L> {
        Retry {
            policy: self.policy,
            op: self.op,
            budget: self.budget,
            quota: self.quota,
            clock,
            place: self.place,
        }
    }

    /// Bound each attempt by `timeout`: one that runs longer is dropped, and its error is
    /// `E::from(TimedOut)`. The [`TimedRetry`] this returns asks for `E: From<TimedOut>`.
    ///
    /// Each attempt runs for at most the sooner of `timeout`, what is left of the turn, and
    /// what is left of a literal budget. A [`TimedOut`](crate::TimedOut) classifies as [`Class::Timeout`](crate::Class::Timeout), so
    /// the policy decides: [`Policy::TRANSIENT`] retries it, [`Policy::AVAILABILITY`] and
    /// [`Policy::OUTAGE`] do not. The timer runs on tokio's time, not the [`Clock`]'s.
    ///
    /// ```
    /// use retry_runtime::{Class, Classify, Policy, Retry, TimedOut};
    /// use std::time::Duration;
    ///
    /// #[derive(Debug)]
    /// enum FetchError { Hung(TimedOut) }
    /// impl From<TimedOut> for FetchError {
    ///     fn from(timed_out: TimedOut) -> Self { FetchError::Hung(timed_out) }
    /// }
    /// impl Classify for FetchError {
    ///     fn classify(&self) -> Class { Class::Timeout }
    /// }
    /// impl std::fmt::Display for FetchError {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         match self { FetchError::Hung(t) => t.fmt(f) }
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let gave_up = Retry::new(&Policy::AVAILABILITY)
    ///     .timeout(Duration::from_secs(2))
    ///     .run(async |_| std::future::pending::<Result<(), FetchError>>().await)
    ///     .await
    ///     .unwrap_err();
    /// // `availability` does not retry a timeout.
    /// assert_eq!(gave_up.attempts(), 1);
    /// let FetchError::Hung(timed_out) = gave_up.into_error();
    /// assert_eq!(timed_out.ran(), Duration::from_secs(2));
    /// # }
    /// ```
    pub const fn timeout(self, timeout: Duration) -> TimedRetry<C, P, N, Q, L> {
        TimedRetry {
            retry: self,
            timeout,
        }
    }

    /// The same retry, its attempts going where `place` says (see [`crate::route`]).
    pub(crate) fn placed<M>(self, place: M) -> Retry<C, P, N, Q, M> {
        let Retry {
            policy,
            op,
            budget,
            quota,
            clock,
            ..
        } = self;
        Retry {
            policy,
            op,
            budget,
            quota,
            clock,
            place,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy
    where
        P: AsRef<Policy>,
    {
        self.policy.as_ref()
    }

    /// The operation's name.
    pub fn op(&self) -> &str
    where
        N: OpName,
    {
        self.op.as_ref()
    }

    /// The budget.
    pub const fn budget(&self) -> Deadline {
        self.budget
    }

    /// Whether this call's ladder, at its worst, fits its own literal budget; always true for
    /// [`Deadline::Turn`], which is checked at run time. `#[retry]` asserts this at compile time.
    ///
    /// ```
    /// use retry_runtime::{Deadline, Policy, Retry};
    /// use std::time::Duration;
    /// const FITS: Retry = Retry::new(&Policy::AVAILABILITY).within(Deadline::Within(Duration::from_secs(2)));
    /// assert!(FITS.fits_budget());
    /// assert!(!Retry::new(&Policy::OUTAGE).within(Deadline::Within(Duration::from_secs(60))).fits_budget());
    /// ```
    pub fn fits_budget(&self) -> bool
    where
        P: AsRef<Policy>,
    {
        fits(self.policy.as_ref(), self.budget)
    }
}

/// Whether `policy`'s worst case fits `budget`.
const fn fits(policy: &Policy, budget: Deadline) -> bool {
    match budget {
        Deadline::Turn => true,
        Deadline::Within(limit) => policy.worst_case_wait().as_nanos() <= limit.as_nanos(),
    }
}

/// A [`Retry`] whose attempts each have a timeout: made by [`Retry::timeout`]. Its
/// [`run`](Self::run) asks for an error type that can hold a [`TimedOut`](crate::TimedOut).
///
/// ```
/// use retry_runtime::{Policy, Retry, TimedRetry};
/// use std::time::Duration;
///
/// static FETCH: TimedRetry = Retry::new(&Policy::TRANSIENT).named("fetch").timeout(Duration::from_secs(30));
/// assert_eq!(FETCH.attempt_timeout(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimedRetry<
    C = TokioClock,
    P = &'static Policy,
    N = OpLiteral,
    Q = &'static Quota,
    L = NoUpstream,
> {
    pub(crate) retry: Retry<C, P, N, Q, L>,
    /// Kept here, not in [`Retry`]: only this type's `run` can turn a [`TimedOut`] into the
    /// error, and a plain `Retry` stays small.
    pub(crate) timeout: Duration,
}

impl<C, P, Q, L> TimedRetry<C, P, OpLiteral, Q, L> {
    /// Name the operation in notices and reports.
    pub const fn named(mut self, op: &'static str) -> Self {
        self.retry.op = OpLiteral::new(op);
        self
    }

    /// Name the operation with a name made at run time.
    pub fn named_owned<M: AsRef<str>>(self, op: M) -> TimedRetry<C, P, M, Q, L> {
        TimedRetry {
            retry: self.retry.named_owned(op),
            timeout: self.timeout,
        }
    }
}

impl<C, P, N, L> TimedRetry<C, P, N, &'static Quota, L> {
    /// Draw retries from a cross-call [`Quota`], a `static` one.
    pub const fn with_quota(mut self, quota: &'static Quota) -> Self {
        self.retry.quota = Some(quota);
        self
    }

    /// Draw retries from a cross-call [`Quota`] shared through an `Arc`.
    pub fn with_shared_quota(
        self,
        quota: std::sync::Arc<Quota>,
    ) -> TimedRetry<C, P, N, std::sync::Arc<Quota>, L> {
        TimedRetry {
            retry: self.retry.with_shared_quota(quota),
            timeout: self.timeout,
        }
    }
}

impl<C, P, N, Q, L> TimedRetry<C, P, N, Q, L> {
    /// Bound the ladder by `budget`.
    pub const fn within(mut self, budget: Deadline) -> Self {
        self.retry.budget = budget;
        self
    }

    /// Use `clock` for time, the ladder's waits and jitter (the attempt timer stays on tokio's
    /// time).
    pub fn with_clock<D: Clock>(self, clock: D) -> TimedRetry<D, P, N, Q, L> {
        TimedRetry {
            retry: self.retry.with_clock(clock),
            timeout: self.timeout,
        }
    }

    /// The timeout of each attempt.
    pub const fn attempt_timeout(&self) -> Duration {
        self.timeout
    }

    /// The same timed retry, its attempts going where `place` says.
    pub(crate) fn placed<M>(self, place: M) -> TimedRetry<C, P, N, Q, M> {
        let TimedRetry { retry, timeout } = self;
        TimedRetry {
            retry: retry.placed(place),
            timeout,
        }
    }

    /// The rest of the configuration: policy, name, budget.
    pub const fn retry(&self) -> &Retry<C, P, N, Q, L> {
        &self.retry
    }
}

impl<C: Clock, P, N, Q, L> Clocked for Retry<C, P, N, Q, L> {
    type Clock = C;
}

impl<C: Clock, P, N, Q, L> Clocked for TimedRetry<C, P, N, Q, L> {
    type Clock = C;
}
