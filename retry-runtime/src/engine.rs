//! The loop: [`Retry`] runs an operation until it succeeds, its failure is an answer, or the
//! ladder or the budget runs out. `#[retry]` expands to the same engine.
//!
//! It owns the configuration ([`Retry`], [`TimedRetry`]), a call's run (its counters, the
//! attempt protocol, the wait it holds) and what it tells: the quota's withdrawals and refunds,
//! the notices, the turn's records. It must not decide: whether and how long to wait is
//! [`ladder::decide`](crate::ladder::decide)'s alone, called once per failure; and it keeps no
//! turn state of its own, only the flight the turn hands it.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::attempt::{Attempt, Attempted, Timed};
use crate::budget::Budget;
use crate::class::{Class, Classify};
use crate::clock::{Clock, TokioClock};
use crate::ladder::{self, Failure, Step};
use crate::nesting;
use crate::notice::{self, Action, RetryEvent};
use crate::policy::Policy;
use crate::quota::Quota;
use crate::redact::Redacted;
use crate::timeout::{TimedOut, TimeoutBound};
use crate::turn::scope::{self as turn, Flight, Op, OpName};
use crate::verdict::{GaveUp, StopReason};
use crate::wait::{Wait, Waited};

/// The future every `run` returns: make an attempt (`$output`, the attempt's result), and
/// return on a success or a give-up, or wait and go on. The four `run`s differ only in their
/// bounds and in how an attempt starts.
macro_rules! ladder {
    ($run:ident, $output:expr) => {
        async move {
            loop {
                let error = match $output {
                    Ok(value) => {
                        $run.succeeded();
                        return Ok(value);
                    }
                    Err(error) => error,
                };
                // Only the wait's pointer lives across the `.await`.
                let wait = $run.failed(error)?;
                $run.waited(wait.await)?;
            }
        }
    };
}

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
pub struct Retry<C = TokioClock, P = &'static Policy, N = &'static str, Q = &'static Quota> {
    policy: P,
    op: N,
    budget: Budget,
    quota: Option<Q>,
    clock: C,
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
            op: "retry",
            budget: Budget::Turn,
            quota: None,
            clock: TokioClock,
        }
    }
}

impl<C, P, Q> Retry<C, P, &'static str, Q> {
    /// Name the operation in notices and reports (`#[retry]` uses the function's path): a
    /// literal, at no cost per call, in `const` context too. For a name made at run time, see
    /// [`named_owned`](Self::named_owned).
    pub const fn named(mut self, op: &'static str) -> Self {
        self.op = op;
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
    pub fn named_owned<M: AsRef<str>>(self, op: M) -> Retry<C, P, M, Q> {
        let Retry {
            policy,
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
        }
    }
}

impl<C, P, N> Retry<C, P, N> {
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
    ) -> Retry<C, P, N, std::sync::Arc<Quota>> {
        let Retry {
            policy,
            op,
            budget,
            clock,
            ..
        } = self;
        Retry {
            policy,
            op,
            budget,
            quota: Some(quota),
            clock,
        }
    }
}

impl<C, P, N, Q> Retry<C, P, N, Q> {
    /// Bound the ladder by `budget`.
    pub const fn within(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Use `clock` for time, sleep and jitter.
    pub fn with_clock<D: Clock>(self, clock: D) -> Retry<D, P, N, Q> {
        Retry {
            policy: self.policy,
            op: self.op,
            budget: self.budget,
            quota: self.quota,
            clock,
        }
    }

    /// Bound each attempt by `timeout`: one that runs longer is dropped, and its error is
    /// `E::from(TimedOut)`. The [`TimedRetry`] this returns asks for `E: From<TimedOut>`.
    ///
    /// Each attempt runs for at most the sooner of `timeout`, what is left of the turn, and
    /// what is left of a literal budget. A [`TimedOut`] classifies as [`Class::Timeout`], so
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
    pub const fn timeout(self, timeout: Duration) -> TimedRetry<C, P, N, Q> {
        TimedRetry {
            retry: self,
            timeout,
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
    pub const fn budget(&self) -> Budget {
        self.budget
    }

    /// Whether this call's ladder, at its worst, fits its own literal budget; always true for
    /// [`Budget::Turn`], which is checked at run time. `#[retry]` asserts this at compile time.
    ///
    /// ```
    /// use retry_runtime::{Budget, Policy, Retry};
    /// use std::time::Duration;
    /// const FITS: Retry = Retry::new(&Policy::AVAILABILITY).within(Budget::Within(Duration::from_secs(2)));
    /// assert!(FITS.fits_budget());
    /// assert!(!Retry::new(&Policy::OUTAGE).within(Budget::Within(Duration::from_secs(60))).fits_budget());
    /// ```
    pub fn fits_budget(&self) -> bool
    where
        P: AsRef<Policy>,
    {
        fits(self.policy.as_ref(), self.budget)
    }
}

/// Whether `policy`'s worst case fits `budget`.
const fn fits(policy: &Policy, budget: Budget) -> bool {
    match budget {
        Budget::Turn => true,
        Budget::Within(limit) => policy.worst_case_wait().as_nanos() <= limit.as_nanos(),
    }
}

impl<C, P, N, Q> Retry<C, P, N, Q>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    /// Run `operation` (given the attempt number, from 1) until it succeeds or the ladder
    /// stops. The error is returned unchanged inside [`GaveUp`], with the reason.
    ///
    /// Takes the `Retry` by value (it is `Copy` with the default clock), so the returned future
    /// owns it and can be spawned.
    ///
    /// `operation` may be an `async` closure (`async |attempt| ...`) or a closure returning a
    /// future (`|attempt| async move { ... }`). Today's rustc cannot always prove `Send` for
    /// an `async` closure whose future borrows what the closure captured once it is nested in
    /// another such closure ("implementation of `Send` is not general enough"); where a spawn
    /// reports that, use [`run_fn`](Self::run_fn).
    pub fn run<T, E, F>(self, mut operation: F) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: AsyncFnMut(u32) -> Result<T, E>,
        E: Classify + fmt::Display,
    {
        // The run owns its `Retry`, the one copy in the future: a borrow of a local would make
        // the future's `Send` depend on a lifetime the compiler cannot always prove for every
        // caller. Nothing is read before the first poll.
        let mut run = Run::new(self);
        ladder!(run, {
            let attempted = run.attempt(operation(run.attempts() + 1)).await;
            run.attempted(attempted)
        })
    }

    /// Like [`run`](Self::run), for a closure that returns a future which owns what it uses
    /// (`move |attempt| { let client = client.clone(); async move { ... } }`): the form that
    /// compiles wherever the caller must be `Send`, such as a tower `Service::call`, an
    /// `#[async_trait]` method or a `reqwest_middleware::Middleware`, and under `tokio::spawn`.
    ///
    /// Today's rustc cannot prove `Send` for [`run`](Self::run)'s `AsyncFnMut` inside such a
    /// boxed future ("implementation of `Send` is not general enough"): its futures are typed
    /// by a borrow of the closure, for every lifetime at once. Here each attempt's future is
    /// one type, `Fut`, so the run is `Send` exactly when `Fut`, `T`, `E` and the closure are.
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Policy, Retry};
    /// use std::future::Future;
    /// use std::pin::Pin;
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    ///
    /// type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
    ///
    /// // What a tower `call` or an `#[async_trait]` method returns: a boxed `Send` future.
    /// fn call(calls: Arc<AtomicU32>) -> BoxFuture<Result<u32, Class>> {
    ///     Box::pin(async move {
    ///         Retry::new(&Policy::AVAILABILITY)
    ///             .named("call")
    ///             .run_fn(move |_attempt| {
    ///                 let calls = Arc::clone(&calls);
    ///                 async move {
    ///                     match calls.fetch_add(1, Ordering::SeqCst) {
    ///                         0 => Err(Class::Unavailable { retry_after: None }),
    ///                         n => Ok(n + 1),
    ///                     }
    ///                 }
    ///             })
    ///             .await
    ///             .map_err(|gave_up| gave_up.into_error())
    ///     })
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let calls = Arc::new(AtomicU32::new(0));
    /// let (result, recorded) = testing::scope(call(Arc::clone(&calls))).await;
    /// assert_eq!(result, Ok(2));
    /// assert_eq!(recorded.waits().len(), 1);
    /// // And it spawns.
    /// let spawned = tokio::spawn(call(calls));
    /// # let _ = spawned.await;
    /// # }
    /// ```
    pub fn run_fn<T, E, F, Fut>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display,
    {
        let mut run = Run::new(self);
        ladder!(run, {
            let attempted = run.attempt(operation(run.attempts() + 1)).await;
            run.attempted(attempted)
        })
    }
}

/// A [`Retry`] whose attempts each have a timeout: made by [`Retry::timeout`]. Its
/// [`run`](Self::run) asks for an error type that can hold a [`TimedOut`].
///
/// ```
/// use retry_runtime::{Policy, Retry, TimedRetry};
/// use std::time::Duration;
///
/// static FETCH: TimedRetry = Retry::new(&Policy::TRANSIENT).named("fetch").timeout(Duration::from_secs(30));
/// assert_eq!(FETCH.attempt_timeout(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimedRetry<C = TokioClock, P = &'static Policy, N = &'static str, Q = &'static Quota> {
    retry: Retry<C, P, N, Q>,
    /// Kept here, not in [`Retry`]: only this type's `run` can turn a [`TimedOut`] into the
    /// error, and a plain `Retry` stays small.
    timeout: Duration,
}

impl<C, P, Q> TimedRetry<C, P, &'static str, Q> {
    /// Name the operation in notices and reports.
    pub const fn named(mut self, op: &'static str) -> Self {
        self.retry.op = op;
        self
    }

    /// Name the operation with a name made at run time.
    pub fn named_owned<M: AsRef<str>>(self, op: M) -> TimedRetry<C, P, M, Q> {
        TimedRetry {
            retry: self.retry.named_owned(op),
            timeout: self.timeout,
        }
    }
}

impl<C, P, N> TimedRetry<C, P, N> {
    /// Draw retries from a cross-call [`Quota`], a `static` one.
    pub const fn with_quota(mut self, quota: &'static Quota) -> Self {
        self.retry.quota = Some(quota);
        self
    }

    /// Draw retries from a cross-call [`Quota`] shared through an `Arc`.
    pub fn with_shared_quota(
        self,
        quota: std::sync::Arc<Quota>,
    ) -> TimedRetry<C, P, N, std::sync::Arc<Quota>> {
        TimedRetry {
            retry: self.retry.with_shared_quota(quota),
            timeout: self.timeout,
        }
    }
}

impl<C, P, N, Q> TimedRetry<C, P, N, Q> {
    /// Bound the ladder by `budget`.
    pub const fn within(mut self, budget: Budget) -> Self {
        self.retry.budget = budget;
        self
    }

    /// Use `clock` for time, the ladder's waits and jitter (the attempt timer stays on tokio's
    /// time).
    pub fn with_clock<D: Clock>(self, clock: D) -> TimedRetry<D, P, N, Q> {
        TimedRetry {
            retry: self.retry.with_clock(clock),
            timeout: self.timeout,
        }
    }

    /// The timeout of each attempt.
    pub const fn attempt_timeout(&self) -> Duration {
        self.timeout
    }

    /// The rest of the configuration: policy, name, budget.
    pub const fn retry(&self) -> &Retry<C, P, N, Q> {
        &self.retry
    }
}

impl<C, P, N, Q> TimedRetry<C, P, N, Q>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    /// Like [`Retry::run`], with each attempt dropped when its time runs out; its error is
    /// then `E::from(TimedOut)`, decided on like any other.
    pub fn run<T, E, F>(self, mut operation: F) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: AsyncFnMut(u32) -> Result<T, E>,
        E: Classify + fmt::Display + From<TimedOut>,
    {
        let mut run = Run::new(self);
        ladder!(run, {
            let attempted = run.attempt_timed(operation(run.attempts() + 1)).await;
            run.attempted(attempted).unwrap_or_else(|t| Err(E::from(t)))
        })
    }

    /// Like [`Retry::run_fn`] (the form that compiles where `Send` is required), with each
    /// attempt dropped when its time runs out.
    ///
    /// ```
    /// use retry_runtime::{Policy, Retry, TimedOut};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let timed = Retry::new(&Policy::TRANSIENT).timeout(Duration::from_secs(1));
    /// let spawned = tokio::spawn(timed.run_fn(|attempt| async move {
    ///     if attempt == 1 { std::future::pending::<()>().await }
    ///     Ok::<_, TimedOut>(attempt)
    /// }));
    /// assert_eq!(spawned.await.unwrap().unwrap(), 2);
    /// # }
    /// ```
    pub fn run_fn<T, E, F, Fut>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display + From<TimedOut>,
    {
        let mut run = Run::new(self);
        ladder!(run, {
            let attempted = run.attempt_timed(operation(run.attempts() + 1)).await;
            run.attempted(attempted).unwrap_or_else(|t| Err(E::from(t)))
        })
    }
}

/// Flags of [`Run::flags`]: whether a rate limit was retried, whether the next attempt is a
/// stream's restart, whether a wait is in progress, whether the last retry followed a timeout
/// (what the quota gives back on success), and whether an inner ladder gave up on a transient
/// failure during the current attempt.
const RATE_LIMITED: u8 = 1;
/// The next attempt is a stream's restart after its commit point: its wait counts as one.
const RESTARTING: u8 = 1 << 1;
/// A wait is in progress: if the call is dropped now, the quota gets the retry's cost back.
const WAITING: u8 = 1 << 2;
const LAST_RETRY_TIMED_OUT: u8 = 1 << 3;
const INNER_GAVE_UP: u8 = 1 << 4;

/// One call's progress through its ladder. Used by `#[retry]`'s expansion and by
/// [`Retry::run`]; not public API.
///
/// It lives in every annotated function's future, so it is kept to four words: the attempt
/// count (at most [`Policy::MAX_ATTEMPTS`], ten thousand) and the flags share a word with the
/// time waited, kept to the millisecond, and what a turn needs to report a dropped call is
/// boxed, made only inside a turn, in the place of the start instant (measured: a fifth word
/// would take the attribute past its 64 bytes).
#[doc(hidden)]
pub struct Run<R: Source> {
    source: R,
    since: Since,
    waited_ms: u32,
    attempts: u16,
    flags: u8,
}

/// When a call started, where anything needs to know.
enum Since {
    /// Outside a turn and without a literal budget: the clock is never read.
    Unread,
    /// Under a literal budget, outside a turn.
    Started(Instant),
    /// Inside a turn, until the call finishes: if the call is dropped first, it reports
    /// itself.
    InTurn(Box<Flight>),
}

impl<R: Source> fmt::Debug for Run<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("op", &self.source.op())
            .field("attempts", &self.attempts())
            .field("in_turn", &self.flight().is_some())
            .finish()
    }
}

/// Where a [`Run`] finds its configuration: a [`Retry`] or a [`TimedRetry`] it owns
/// ([`Retry::run`]), or a `&'static` one (the attribute's). Not public API.
#[doc(hidden)]
pub trait Source {
    /// The clock of the retry.
    type Clock: Clock;
    /// The policy.
    fn policy(&self) -> &Policy;
    /// The operation's name.
    fn op(&self) -> &str;
    /// The operation's name, as a turn's report keeps it.
    fn op_name(&self) -> Op;
    /// The budget.
    fn budget(&self) -> Budget;
    /// The quota, if any.
    fn quota(&self) -> Option<&Quota>;
    /// The clock.
    fn clock(&self) -> &Self::Clock;
    /// Each attempt's timeout: only a [`TimedRetry`] has one.
    #[inline]
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

impl<C, P, N, Q> Source for Retry<C, P, N, Q>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    type Clock = C;
    #[inline]
    fn policy(&self) -> &Policy {
        self.policy.as_ref()
    }
    #[inline]
    fn op(&self) -> &str {
        self.op.as_ref()
    }
    #[inline]
    fn op_name(&self) -> Op {
        self.op.to_op()
    }
    #[inline]
    fn budget(&self) -> Budget {
        self.budget
    }
    #[inline]
    fn quota(&self) -> Option<&Quota> {
        self.quota.as_ref().map(AsRef::as_ref)
    }
    #[inline]
    fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C, P, N, Q> Source for TimedRetry<C, P, N, Q>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    type Clock = C;
    #[inline]
    fn policy(&self) -> &Policy {
        self.retry.policy()
    }
    #[inline]
    fn op(&self) -> &str {
        Source::op(&self.retry)
    }
    #[inline]
    fn op_name(&self) -> Op {
        self.retry.op.to_op()
    }
    #[inline]
    fn budget(&self) -> Budget {
        self.retry.budget
    }
    #[inline]
    fn quota(&self) -> Option<&Quota> {
        Source::quota(&self.retry)
    }
    #[inline]
    fn clock(&self) -> &C {
        &self.retry.clock
    }
    #[inline]
    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }
}

/// A borrowed source: the attribute's `&'static` one.
impl<S: Source> Source for &S {
    type Clock = S::Clock;
    #[inline]
    fn policy(&self) -> &Policy {
        (**self).policy()
    }
    #[inline]
    fn op(&self) -> &str {
        (**self).op()
    }
    #[inline]
    fn op_name(&self) -> Op {
        (**self).op_name()
    }
    #[inline]
    fn budget(&self) -> Budget {
        (**self).budget()
    }
    #[inline]
    fn quota(&self) -> Option<&Quota> {
        (**self).quota()
    }
    #[inline]
    fn clock(&self) -> &S::Clock {
        (**self).clock()
    }
    #[inline]
    fn timeout(&self) -> Option<Duration> {
        (**self).timeout()
    }
}

impl<R: Source> Run<R> {
    /// A call not yet started: nothing is read until its first attempt, so a future made
    /// outside a turn and awaited inside one belongs to that turn.
    #[inline]
    pub const fn new(source: R) -> Self {
        Run {
            source,
            since: Since::Unread,
            waited_ms: 0,
            attempts: 0,
            flags: 0,
        }
    }

    /// Start the call, at its first attempt (a no-op after).
    #[inline]
    fn start_once(&mut self) {
        if self.attempts() == 0 && matches!(self.since, Since::Unread) {
            self.start();
        }
    }

    /// Start the call. Reads the clock only inside a turn or under a literal budget.
    #[inline]
    fn start(&mut self) {
        let source = &self.source;
        self.since = match (turn::flight(|| source.clock().now()), source.budget()) {
            (Some(flight), _) => Since::InTurn(flight),
            (None, Budget::Within(_)) => Since::Started(source.clock().now()),
            (None, Budget::Turn) => Since::Unread,
        };
    }

    /// When the call started: read only inside a turn or under a literal budget.
    #[inline]
    fn started(&self) -> Option<Instant> {
        match &self.since {
            Since::Unread => None,
            Since::Started(started) => Some(*started),
            Since::InTurn(flight) => Some(flight.started()),
        }
    }

    #[inline]
    fn flight(&self) -> Option<&Flight> {
        match &self.since {
            Since::InTurn(flight) => Some(flight),
            _ => None,
        }
    }

    /// The attempts made so far.
    pub fn attempts(&self) -> u32 {
        u32::from(self.attempts)
    }

    /// Start one attempt, marked so that a retried call inside it knows it is nested.
    #[inline]
    pub fn attempt<F: Future>(&mut self, future: F) -> Attempt<F> {
        self.begin_attempt();
        Attempt::new(future)
    }

    /// Count one more attempt, from now.
    #[inline]
    pub(crate) fn begin_attempt(&mut self) {
        self.start_once();
        // The ladder stops at `Policy::MAX_ATTEMPTS`, well inside a `u16`.
        self.attempts = self.attempts.saturating_add(1);
        // What nested ladders did in an earlier attempt says nothing about this one, and a
        // restart is over once its attempt begins.
        self.flags &= !(INNER_GAVE_UP | RESTARTING);
        if let Since::InTurn(flight) = &mut self.since {
            flight.attempt_started(self.source.clock().now());
        }
    }

    /// Start one attempt under its timer: the sooner of the call's timeout, what is left of
    /// the turn and what is left of a literal budget.
    pub fn attempt_timed<F: Future>(&mut self, future: F) -> Attempt<Timed<F>> {
        self.start_once();
        let (end, bound) = self.attempt_end();
        self.attempt(Timed::new(future, end, bound))
    }

    /// When the next attempt must end, on tokio's time, and which bound says so.
    fn attempt_end(&self) -> (Instant, TimeoutBound) {
        let own = self.source.timeout().map(|t| (t, TimeoutBound::Timeout));
        match self.bound(own, true) {
            (Some(at), bound) => (at, bound),
            // A timeout too long to be an instant: about thirty years, as tokio's own far
            // future.
            (None, bound) => (
                Instant::now() + Duration::from_secs(86_400 * 365 * 30),
                bound,
            ),
        }
    }

    /// The sooner of `own` from now, what is left of the turn and (if `budget`) what is left
    /// of a literal budget, on tokio's time, and which bound it is; `None` if none bounds it.
    pub(crate) fn bound(
        &self,
        own: Option<(Duration, TimeoutBound)>,
        budget: bool,
    ) -> (Option<Instant>, TimeoutBound) {
        let start = Instant::now();
        let mut end = match own {
            Some((limit, bound)) => (start.checked_add(limit), bound),
            None => (None, TimeoutBound::Timeout),
        };
        // The very instant the turn drops its work: on a tie, the turn wins.
        if let Some(turn) = turn::expiry()
            && end.0.is_none_or(|end| turn <= end)
        {
            end = (Some(turn), TimeoutBound::Turn);
        }
        if budget
            && let (Budget::Within(limit), Some(started)) = (self.source.budget(), self.started())
        {
            // The budget is on the retry's clock; its remainder is the same on tokio's.
            let left = started
                .checked_add(limit)
                .map(|deadline| deadline.saturating_duration_since(self.source.clock().now()));
            let budget = left.and_then(|left| start.checked_add(left));
            if let Some(budget) = budget
                && end.0.is_none_or(|end| budget < end)
            {
                end = (Some(budget), TimeoutBound::Budget);
            }
        }
        end
    }

    #[cfg(feature = "stream")]
    /// Each attempt's own timeout: only a [`TimedRetry`]'s.
    pub(crate) fn attempt_timeout(&self) -> Option<Duration> {
        self.source.timeout()
    }

    #[cfg(feature = "stream")]
    /// A failure after a stream's commit point that `restart_after_commit` lets the policy
    /// decide on: announced, and counted in the turn, as a restart.
    pub(crate) fn failed_after_commit<E>(
        &mut self,
        error: E,
    ) -> Result<Wait<<R::Clock as Clock>::Sleep, E>, GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        self.flags |= RESTARTING;
        self.failed(error)
    }

    #[cfg(feature = "stream")]
    /// A failure after a stream's commit point, which is not retried: it had delivered
    /// output, and a retry would repeat it.
    pub(crate) fn gave_up_committed<E>(&mut self, error: E) -> GaveUp<E>
    where
        E: Classify + fmt::Display,
    {
        let class = error.classify();
        self.give_up(error, class, StopReason::Committed)
    }

    /// Take one attempt's output, noting what the retried calls nested inside it did: whether
    /// one gave up, and (for the turn's report) whether one ran and how long they waited.
    #[inline]
    pub fn attempted<T>(&mut self, attempted: Attempted<T>) -> T {
        let (output, frame) = attempted.into_parts();
        self.note_frame(frame);
        output
    }

    /// What the retried calls nested in the attempt did.
    #[inline]
    pub(crate) fn note_frame(&mut self, frame: nesting::Frame) {
        if frame.inner_gave_up() {
            self.flags |= INNER_GAVE_UP;
        }
        if let Since::InTurn(flight) = &mut self.since
            && frame.inner_ran()
        {
            flight.inner_ran();
        }
    }

    /// Account for a success: the quota's refill and the turn's report. Never waits.
    #[inline]
    pub fn succeeded(&mut self) {
        if self.source.quota().is_some() || self.started().is_some() {
            self.finish(None);
        }
    }

    /// Decide on a failure: the wait before the next attempt, or the failure given up on,
    /// unchanged. Outside a turn the wait is the one allocation of a retry (a turn adds the box
    /// that listens for its cancel), and only a call that waits makes it; the caller's future
    /// holds its pointer. The wait owns what it needs, so a hand-written stream can hold it
    /// beside its run; give what it resolves to back to [`waited`](Self::waited).
    pub fn failed<E>(&mut self, error: E) -> Result<Wait<<R::Clock as Clock>::Sleep, E>, GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        let class = error.classify();
        let wait = match self.decide(&error, class) {
            Ok(wait) => wait,
            Err(reason) => return Err(self.give_up(error, class, reason)),
        };
        let in_turn = match &mut self.since {
            // A turn reports the time actually spent, timer granularity included, and a wait
            // cut short; what it needs for that is in the flight's box, not in the wait's.
            Since::InTurn(flight) => {
                flight.wait_started(self.source.clock().now(), wait, class);
                true
            }
            // Elsewhere, a literal budget included, the wait counts as chosen and nothing reads
            // the clock for it: a timer's overshoot (about a millisecond on tokio's) is not
            // counted, so the box stays the sleep and the failure. The budget itself is still
            // measured on the clock, from the call's start.
            _ => {
                self.add_waited(wait);
                false
            }
        };
        self.flags |= WAITING;
        Ok(Wait::new(error, self.source.clock().sleep(wait), in_turn))
    }

    /// The wait is over, or was cut short by a cancel of the turn: account for it, and go on
    /// to the next attempt, or give up with [`StopReason::Cancelled`].
    #[inline]
    pub fn waited<E>(&mut self, waited: Waited<E>) -> Result<(), GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        self.flags &= !WAITING;
        let Since::InTurn(flight) = &mut self.since else {
            // Only a turn cancels a wait.
            return Ok(());
        };
        let Some((since, wanted, class)) = flight.wait_over() else {
            return Ok(());
        };
        let waited_for = self.source.clock().now().saturating_duration_since(since);
        self.add_waited(waited_for);
        if waited.cancelled() {
            self.refund();
            turn::record_cut_wait(turn::CutWait {
                op: self.source.op_name(),
                after_attempt: self.attempts(),
                waited: waited_for,
                wanted,
            });
            return Err(self.give_up(waited.into_error(), class, StopReason::Cancelled));
        }
        if self.flags & RESTARTING != 0 {
            turn::record_restart();
        } else {
            turn::record_retry(class);
        }
        Ok(())
    }

    /// Give the quota back the cost of the retry it paid for and that was never made.
    fn refund(&self) {
        if let Some(quota) = self.source.quota() {
            quota.refund(if self.flags & LAST_RETRY_TIMED_OUT != 0 {
                Class::Timeout
            } else {
                Class::Transport
            });
        }
    }

    /// The wait before the next attempt, with the retry announced; or the reason to stop.
    fn decide(&mut self, error: &dyn fmt::Display, class: Class) -> Result<Duration, StopReason> {
        match self.next_step(class) {
            Step::Retry { wait } => {
                let action = if self.flags & RESTARTING != 0 {
                    Action::Restart { backoff: wait }
                } else {
                    Action::Retry { backoff: wait }
                };
                self.notify(error, class, action);
                if matches!(class, Class::RateLimited { .. }) {
                    self.flags |= RATE_LIMITED;
                }
                if class == Class::Timeout {
                    self.flags |= LAST_RETRY_TIMED_OUT;
                } else {
                    self.flags &= !LAST_RETRY_TIMED_OUT;
                }
                Ok(wait)
            }
            Step::Stop(reason) => Err(reason),
        }
    }

    fn next_step(&mut self, class: Class) -> Step {
        // A call started outside any turn stays outside one: it reads no task-local again.
        let in_turn = self.flight().is_some();
        let turn_deadline = if in_turn { turn::deadline() } else { None };
        // The clock is read only where a deadline needs it.
        let deadline = self.deadline(turn_deadline);
        let now = deadline.map(|_| self.source.clock().now());
        let turn_over = in_turn
            && (turn::is_cancelled()
                || matches!((turn_deadline, now), (Some(turn), Some(now)) if now >= turn));
        // Past the call's own budget, nothing remains: the ladder reports `Budget`.
        let remaining = match (deadline, now) {
            (Some(deadline), Some(now)) => Some(deadline.saturating_duration_since(now)),
            _ => None,
        };
        let failure = self
            .failure(class, remaining)
            .with_inner_gave_up(self.flags & INNER_GAVE_UP != 0)
            .with_turn_over(turn_over);
        // A failure the class or the nesting rule stops waits for nothing, so it draws no
        // jitter: the RNG is read only where a wait may follow.
        let policy = self.source.policy();
        let waits = !(failure.inner_gave_up && class.is_transient())
            && ladder::stop_before_waiting(policy, class, failure.attempt).is_none();
        let draw = if waits {
            self.source.clock().draw()
        } else {
            crate::draw::Draw::IDEAL
        };
        let decision = ladder::decide(policy, failure, draw);
        match (decision.step, self.source.quota()) {
            (Step::Stop(StopReason::Nested), _) => {
                nesting::warn_nested(self.source.op());
                decision.step
            }
            (Step::Retry { .. }, Some(quota)) if !quota.withdraw(class) => {
                Step::Stop(StopReason::Quota)
            }
            _ => decision.step,
        }
    }

    fn failure(&self, class: Class, remaining: Option<Duration>) -> Failure {
        Failure::new(self.attempts(), class)
            .with_rate_limited_before(self.flags & RATE_LIMITED != 0)
            .with_remaining(remaining)
            .with_waited(self.total_waited())
    }

    fn deadline(&self, turn: Option<Instant>) -> Option<Instant> {
        let own = match (self.source.budget(), self.started()) {
            (Budget::Within(limit), Some(started)) => started.checked_add(limit),
            _ => None,
        };
        turn::sooner(own, turn)
    }

    fn add_waited(&mut self, waited: Duration) {
        // In whole milliseconds, rounded up: `Run` keeps four words, and the total is never
        // below the waits chosen (inside a turn, the time measured), which keeps the policy's
        // `max_total_wait` a bound on them. The ladder never
        // waits past `Policy::MAX_TOTAL_WAIT` (`u32::MAX` ms), so this never saturates.
        let millis = waited.as_nanos().div_ceil(1_000_000);
        let millis = u32::try_from(millis).unwrap_or(u32::MAX);
        self.waited_ms = self.waited_ms.saturating_add(millis);
    }

    fn total_waited(&self) -> Duration {
        Duration::from_millis(self.waited_ms.into())
    }

    fn give_up<E: fmt::Display>(
        &mut self,
        error: E,
        class: Class,
        reason: StopReason,
    ) -> GaveUp<E> {
        self.notify(&error, class, Action::GiveUp { reason });
        // Only a ladder that ran out tells the one around it: a failure it declined to retry
        // (another policy may) or a cancelled turn (the outer ladder sees that itself) does not.
        if class.is_transient()
            && matches!(
                reason,
                StopReason::Exhausted { .. }
                    | StopReason::Budget { .. }
                    | StopReason::RetryAfterTooLong { .. }
                    | StopReason::Nested
                    | StopReason::Committed
            )
        {
            nesting::mark_gave_up();
        }
        self.finish(Some(reason));
        GaveUp::new(error, reason, self.attempts(), self.total_waited())
    }

    /// Account for the finished call: the quota refill and the turn's report.
    fn finish(&mut self, gave_up: Option<StopReason>) {
        if gave_up.is_none() {
            self.settle_quota();
        }
        self.report(gave_up);
    }

    /// A success: the quota's refill. A stream settles at its commit point, where its output
    /// reached the caller, not at its end.
    pub(crate) fn settle_quota(&self) {
        if let Some(quota) = self.source.quota() {
            // AWS standard mode: a success after retries gives back its last retry's cost; a
            // first-try success adds the refill.
            match (self.attempts() > 1, self.flags & LAST_RETRY_TIMED_OUT != 0) {
                (false, _) => quota.deposit(),
                (true, true) => quota.succeeded_after(Class::Timeout),
                (true, false) => quota.succeeded_after(Class::Transport),
            }
        }
    }

    /// The call is over, or (a stream dropped after its commit point) is as good as over:
    /// report it to the turn, and it is no longer in flight.
    pub(crate) fn report(&mut self, gave_up: Option<StopReason>) {
        if let Some(started) = self.started() {
            let elapsed = self.source.clock().now().saturating_duration_since(started);
            let hollow = self.flight().map_or(0, Flight::hollow_attempts);
            // A call nested in another's attempt: that attempt's time is the outer call's to
            // report; its waits, which the outer call's time includes, are taken off it.
            let nested = nesting::is_nested();
            turn::record_call(turn::Call {
                op: self.source.op_name(),
                attempts: self.attempts(),
                counted_attempts: self.attempts().saturating_sub(hollow),
                waiting: self.total_waited(),
                working: if nested {
                    Duration::ZERO
                } else {
                    elapsed.saturating_sub(self.total_waited())
                },
                nested,
                gave_up,
            });
            nesting::mark_ran();
        }
        // Finished: no longer in flight.
        if let Since::InTurn(flight) = &self.since {
            self.since = Since::Started(flight.started());
        }
    }

    fn notify(&self, error: &dyn fmt::Display, class: Class, action: Action) {
        let hooks = if self.flight().is_some() {
            turn::hooks()
        } else {
            Vec::new()
        };
        notice::emit(
            hooks,
            &RetryEvent {
                op: self.source.op(),
                policy: self.source.policy().name(),
                attempt: self.attempts(),
                total: self.source.policy().attempts().max(1),
                class,
                error: Redacted::new(error),
                action,
            },
        );
    }
}

impl<R: Source> Drop for Run<R> {
    /// A call dropped before it finished (its turn ended, or its caller dropped it) reports
    /// itself to its turn: what it did so far, and the attempt or the wait it was in.
    #[inline]
    fn drop(&mut self) {
        if self.flags & WAITING != 0 {
            // The retry the quota paid for is never made.
            self.refund();
        }
        if matches!(self.since, Since::InTurn(_)) {
            self.dropped_in_turn();
        }
    }
}

impl<R: Source> Run<R> {
    #[cold]
    fn dropped_in_turn(&mut self) {
        let Since::InTurn(flight) = &self.since else {
            return;
        };
        let now = self.source.clock().now();
        flight.dropped_at(
            self.source.op_name(),
            self.attempts(),
            self.total_waited(),
            now,
        );
    }
}
