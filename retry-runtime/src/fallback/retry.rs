//! [`AcrossRetry`]: a retry across an ordered set of upstreams, which [`Retry::across`] and
//! [`TimedRetry::across`] make. Each attempt goes where its [`Route`] sends it, and tells that
//! upstream how it ended.

use std::fmt;
use std::future::Future;

use super::{Answered, Next, Route, Upstreams};
use crate::admission::HoldsUpstreamPaused;
use crate::class::Classify;
use crate::clock::Clock;
use crate::engine::{Call, Retry, TimedRetry};
use crate::op::OpName;
use crate::policy::Policy;
use crate::quota::Quota;
use crate::timeout::TimedOut;
use crate::upstream::{OnUpstream, Upstream};
use crate::verdict::GaveUp;

/// A retry across an ordered set of upstreams: [`Retry::across`] or [`TimedRetry::across`].
/// Its operation is given the upstream each attempt goes to; its outcome says which answered
/// ([`Answered`]). See [`Upstreams`] for the rules. Its error type must hold an
/// [`UpstreamPaused`](crate::UpstreamPaused), as a retry on one upstream's does.
#[derive(Debug, Clone, Copy)]
pub struct AcrossRetry<R> {
    retry: R,
    set: &'static Upstreams,
}

impl<C, P, N, Q> Retry<C, P, N, Q> {
    /// Send each attempt across `set`, an ordered set of upstreams: to the first neither
    /// paused nor gated, moving to the next at once on a failure another may not share (see
    /// [`Upstreams`]).
    pub const fn across(self, set: &'static Upstreams) -> AcrossRetry<Self> {
        AcrossRetry { retry: self, set }
    }
}

impl<C, P, N, Q> TimedRetry<C, P, N, Q> {
    /// Like [`Retry::across`], each attempt under its timeout.
    pub const fn across(self, set: &'static Upstreams) -> AcrossRetry<Self> {
        AcrossRetry { retry: self, set }
    }
}

impl<R> AcrossRetry<R> {
    /// The ordered set.
    pub const fn upstreams(&self) -> &'static Upstreams {
        self.set
    }

    /// The retry across it.
    pub const fn retry(&self) -> &R {
        &self.retry
    }

    /// The retry and the set, apart.
    #[cfg_attr(not(feature = "stream"), allow(dead_code))]
    pub(crate) fn into_parts(self) -> (R, &'static Upstreams) {
        (self.retry, self.set)
    }
}

/// The ladder of a call across upstreams: routed before each attempt, the upstream told
/// after; a move makes the next attempt at once, anything else is the ladder's.
macro_rules! across_ladder {
    ($set:ident, $route:ident, $run:ident, |$to:ident| $output:expr) => {
        async move {
            loop {
                // In a block of its own, so that neither the ticket nor the route's verdict
                // (nor the class, a `Copy` whose place would outlive its use) lives across the
                // wait.
                let waiting = {
                    let (error, class) = {
                        let ticket = match $route.at_once($set) {
                            Some(ticket) => ticket,
                            None => {
                                let hold = HoldsUpstreamPaused::hold;
                                $route.admit($set, &mut $run, hold).await?
                            }
                        };
                        let $to: &'static Upstream = ticket.upstream();
                        let error = match $output {
                            Ok(value) => {
                                ticket.succeeded();
                                $run.succeeded();
                                return Ok(Answered::new(value, $to));
                            }
                            Err(error) => error,
                        };
                        match $route.failed($set, ticket, &mut $run, error) {
                            Next::Moved => continue,
                            Next::GaveUp(gave_up) => {
                                return Err($route.gave_up($set, gave_up, true));
                            }
                            Next::Ladder(error, class) => (error, class),
                        }
                    };
                    $run.failed_as(error, class)
                };
                match waiting.await {
                    Ok(()) => $route.waited(),
                    Err(gave_up) => return Err($route.gave_up($set, gave_up, true)),
                }
            }
        }
    };
}

impl<C, P, N, Q> AcrossRetry<Retry<C, P, N, Q>>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    /// Like [`Retry::run`], each attempt given the upstream it goes to; the value comes back
    /// with the upstream that answered.
    pub fn run<T, E, F>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<Answered<T>, GaveUp<E>>>
    where
        F: AsyncFnMut(&'static Upstream) -> Result<T, E>,
        E: Classify + fmt::Display + HoldsUpstreamPaused,
    {
        let (set, mut route) = (self.set, Route::new());
        let mut run = Call::new(self.retry);
        across_ladder!(set, route, run, |to| {
            let attempted = run.attempt(OnUpstream::new(to, operation(to))).await;
            run.attempted(attempted)
        })
    }

    /// Like [`Retry::run_fn`] (the form that compiles where `Send` is required), each attempt
    /// given the upstream it goes to.
    pub fn run_fn<T, E, F, Fut>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<Answered<T>, GaveUp<E>>>
    where
        F: FnMut(&'static Upstream) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display + HoldsUpstreamPaused,
    {
        let (set, mut route) = (self.set, Route::new());
        let mut run = Call::new(self.retry);
        across_ladder!(set, route, run, |to| {
            let attempted = run.attempt(OnUpstream::new(to, operation(to))).await;
            run.attempted(attempted)
        })
    }
}

impl<C, P, N, Q> AcrossRetry<TimedRetry<C, P, N, Q>>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    /// Like [`TimedRetry::run`], each attempt given the upstream it goes to.
    pub fn run<T, E, F>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<Answered<T>, GaveUp<E>>>
    where
        F: AsyncFnMut(&'static Upstream) -> Result<T, E>,
        E: Classify + fmt::Display + From<TimedOut> + HoldsUpstreamPaused,
    {
        let (set, mut route) = (self.set, Route::new());
        let mut run = Call::new(self.retry);
        across_ladder!(set, route, run, |to| {
            let attempted = run.attempt_timed(OnUpstream::new(to, operation(to))).await;
            run.attempted(attempted).unwrap_or_else(|t| Err(E::from(t)))
        })
    }
    /// Like [`TimedRetry::run_fn`] (the form that compiles where `Send` is required), each
    /// attempt given the upstream it goes to.
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Retry, TimedOut, Upstream, UpstreamPaused, Upstreams};
    /// use std::time::Duration;
    ///
    /// static CLAUDE: Upstream = Upstream::new("claude");
    /// static GPT: Upstream = Upstream::new("gpt");
    /// static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);
    ///
    /// #[derive(Debug, thiserror::Error, retry_runtime::Classify)]
    /// enum Failed {
    ///     #[error("overloaded")]
    ///     #[classify(unavailable)]
    ///     Overloaded,
    ///     #[error(transparent)]
    ///     #[classify(from)]
    ///     TimedOut(#[from] TimedOut),
    ///     #[error(transparent)]
    ///     #[classify(from)]
    ///     Paused(#[from] UpstreamPaused),
    /// }
    ///
    /// async fn ask(model: &'static str) -> Result<String, Failed> {
    ///     match model {
    ///         "claude" => Err(Failed::Overloaded),
    ///         model => Ok(format!("answered by {model}")),
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let call = Retry::new(&Policy::AVAILABILITY)
    ///     .timeout(Duration::from_secs(30))
    ///     .across(&MODELS)
    ///     .run_fn(|to| ask(to.name()));
    /// // A service spawns its calls: this form's future is `Send`.
    /// let answered = tokio::spawn(call).await.unwrap().unwrap();
    /// assert_eq!(answered.upstream().name(), "gpt");
    /// # CLAUDE.reset();
    /// # }
    /// ```
    pub fn run_fn<T, E, F, Fut>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<Answered<T>, GaveUp<E>>>
    where
        F: FnMut(&'static Upstream) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display + From<TimedOut> + HoldsUpstreamPaused,
    {
        let (set, mut route) = (self.set, Route::new());
        let mut run = Call::new(self.retry);
        across_ladder!(set, route, run, |to| {
            let attempted = run.attempt_timed(OnUpstream::new(to, operation(to))).await;
            run.attempted(attempted).unwrap_or_else(|t| Err(E::from(t)))
        })
    }
}
