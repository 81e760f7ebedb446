//! [`UpstreamRetry`]: a retry on an [`Upstream`], which [`Retry::upstream`] and
//! [`TimedRetry::upstream`] make. Each attempt, the first included, is admitted by the
//! upstream first, and tells it how it ended.

use std::fmt;
use std::future::Future;

use super::{Admitted, admit};
use crate::class::Classify;
use crate::clock::Clock;
use crate::deadline::Deadline;
use crate::engine::{Call, Clocked, Retry, Source, TimedRetry};
use crate::op::Op;
use crate::op::OpName;
use crate::policy::Policy;
use crate::quota::Quota;
use crate::timeout::TimedOut;
use crate::upstream::{OnUpstream, Upstream, UpstreamPaused};
use crate::verdict::GaveUp;

/// A retry on an upstream: [`Retry::upstream`] or [`TimedRetry::upstream`]. Its calls share
/// what the upstream was told: a provider's pause holds every call's next attempt, and in an
/// outage one call probes while the others wait (see [`Upstream`]). Its error type must hold
/// an [`UpstreamPaused`], the error of an attempt held back past the call's end.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamRetry<R> {
    retry: R,
    upstream: &'static Upstream,
    tokens: u32,
}

/// An error type that can hold an [`UpstreamPaused`], asked for by a retry on an upstream,
/// so a missing `From` is reported with the fix. Not public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a retry on an upstream needs an error type that can hold a `retry_runtime::UpstreamPaused`, and `{Self}` cannot",
    label = "`{Self}` does not implement `From<retry_runtime::UpstreamPaused>`",
    note = "add a variant for it to `{Self}` (with thiserror: `#[error(transparent)] Paused(#[from] retry_runtime::UpstreamPaused)`), or `impl From<retry_runtime::UpstreamPaused> for {Self}`: an attempt held back past the call's end by the upstream's pause or outage gate becomes one"
)]
pub trait HoldsUpstreamPaused {
    /// The error of an attempt the upstream held back.
    fn hold(paused: UpstreamPaused) -> Self;
}

impl<E: From<UpstreamPaused>> HoldsUpstreamPaused for E {
    fn hold(paused: UpstreamPaused) -> Self {
        E::from(paused)
    }
}

impl<C, P, N, Q> Retry<C, P, N, Q> {
    /// Share what `upstream` says with every call on it: its pause and its outage gate (see
    /// [`Upstream`]).
    pub const fn upstream(self, upstream: &'static Upstream) -> UpstreamRetry<Self> {
        UpstreamRetry {
            retry: self,
            upstream,
            tokens: 0,
        }
    }
}

impl<C, P, N, Q> TimedRetry<C, P, N, Q> {
    /// Like [`Retry::upstream`], each attempt under its timeout.
    pub const fn upstream(self, upstream: &'static Upstream) -> UpstreamRetry<Self> {
        UpstreamRetry {
            retry: self,
            upstream,
            tokens: 0,
        }
    }
}

impl<R: Clocked> Clocked for UpstreamRetry<R> {
    type Clock = R::Clock;
}

/// A retry on an upstream is its retry's configuration, and the upstream.
impl<R: Source> Source for UpstreamRetry<R> {
    #[inline]
    fn policy(&self) -> &Policy {
        self.retry.policy()
    }
    #[inline]
    fn op(&self) -> &str {
        self.retry.op()
    }
    #[inline]
    fn op_name(&self) -> Op {
        self.retry.op_name()
    }
    #[inline]
    fn budget(&self) -> Deadline {
        self.retry.budget()
    }
    #[inline]
    fn quota(&self) -> Option<&Quota> {
        self.retry.quota()
    }
    #[inline]
    fn clock(&self) -> &R::Clock {
        self.retry.clock()
    }
    #[inline]
    fn timeout(&self) -> Option<std::time::Duration> {
        self.retry.timeout()
    }
    #[inline]
    fn upstream(&self) -> Option<&'static Upstream> {
        Some(self.upstream)
    }
}

impl<R> UpstreamRetry<R> {
    /// Each attempt costs `tokens` of the key's token limit (its prompt and its `max_tokens`,
    /// say), as well as one request: where the provider says what its key has left, an
    /// attempt waits until the key holds what it costs, and one that costs more than the
    /// whole limit fails at once, an answer.
    ///
    /// ```
    /// use retry_runtime::{Policy, Retry, Upstream};
    ///
    /// static MODEL: Upstream = Upstream::new("model");
    /// let retry = Retry::new(&Policy::AVAILABILITY).upstream(&MODEL).tokens(1_200);
    /// assert_eq!(retry.tokens_per_attempt(), 1_200);
    /// ```
    pub const fn tokens(mut self, tokens: u32) -> Self {
        self.tokens = tokens;
        self
    }

    /// What each attempt costs of the key's tokens ([`tokens`](Self::tokens)).
    pub const fn tokens_per_attempt(&self) -> u32 {
        self.tokens
    }

    /// The upstream.
    pub const fn upstream_ref(&self) -> &'static Upstream {
        self.upstream
    }

    /// The retry on it.
    pub const fn retry(&self) -> &R {
        &self.retry
    }
}

/// The ladder of a call on an upstream: admitted before each attempt, telling it after. The
/// call keeps its admission beside its run, so that one drop frees a probe it holds.
macro_rules! upstream_ladder {
    ($run:ident, $tokens:expr, $output:expr) => {
        async move {
            loop {
                // In a block of its own, so that nothing of the admission, and no second copy
                // of the error (borrowed to tell the upstream), lives across the wait; the
                // class (a `Copy`, whose place would outlive its use) is gone before it too.
                let waiting = {
                    let (error, class) = {
                        let (run, admitted) = $run.parts();
                        if !admitted.at_once_for(run.attempts() > 0) {
                            let upstream = admitted.upstream();
                            let hold = HoldsUpstreamPaused::hold;
                            let ticket = admit(run, upstream, hold, true, $tokens).await?;
                            *admitted = ticket.into_admitted();
                        }
                        match $output {
                            Ok(value) => {
                                $run.parts().1.succeeded();
                                $run.succeeded();
                                return Ok(value);
                            }
                            Err(error) => {
                                // Classified once: the upstream is told, the ladder decides.
                                let class = Classify::classify(&error);
                                let (run, admitted) = $run.parts();
                                admitted.failed(class, run);
                                (error, class)
                            }
                        }
                    };
                    $run.failed_as(error, class)
                };
                waiting.await?;
            }
        }
    };
}

impl<C, P, N, Q> UpstreamRetry<Retry<C, P, N, Q>>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    /// Like [`Retry::run`], each attempt admitted by the upstream first.
    pub fn run<T, E, F>(self, mut operation: F) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: AsyncFnMut(u32) -> Result<T, E>,
        E: Classify + fmt::Display + HoldsUpstreamPaused,
    {
        let (upstream, tokens) = (self.upstream, self.tokens);
        let mut run = Call::with(self.retry, Admitted::idle(upstream));
        upstream_ladder!(run, tokens, {
            let next = run.attempts() + 1;
            let attempted = run
                .attempt(OnUpstream::new(upstream, operation(next)))
                .await;
            run.attempted(attempted)
        })
    }

    /// Like [`Retry::run_fn`] (the form that compiles where `Send` is required), each attempt
    /// admitted by the upstream first.
    pub fn run_fn<T, E, F, Fut>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display + HoldsUpstreamPaused,
    {
        let (upstream, tokens) = (self.upstream, self.tokens);
        let mut run = Call::with(self.retry, Admitted::idle(upstream));
        upstream_ladder!(run, tokens, {
            let next = run.attempts() + 1;
            let attempted = run
                .attempt(OnUpstream::new(upstream, operation(next)))
                .await;
            run.attempted(attempted)
        })
    }
}

impl<C, P, N, Q> UpstreamRetry<TimedRetry<C, P, N, Q>>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
{
    /// Like [`TimedRetry::run`], each attempt admitted by the upstream first.
    pub fn run<T, E, F>(self, mut operation: F) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: AsyncFnMut(u32) -> Result<T, E>,
        E: Classify + fmt::Display + From<TimedOut> + HoldsUpstreamPaused,
    {
        let (upstream, tokens) = (self.upstream, self.tokens);
        let mut run = Call::with(self.retry, Admitted::idle(upstream));
        upstream_ladder!(run, tokens, {
            let next = run.attempts() + 1;
            let attempted = run
                .attempt_timed(OnUpstream::new(upstream, operation(next)))
                .await;
            run.attempted(attempted).unwrap_or_else(|t| Err(E::from(t)))
        })
    }

    /// Like [`TimedRetry::run_fn`] (the form that compiles where `Send` is required), each
    /// attempt admitted by the upstream first.
    pub fn run_fn<T, E, F, Fut>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<T, GaveUp<E>>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display + From<TimedOut> + HoldsUpstreamPaused,
    {
        let (upstream, tokens) = (self.upstream, self.tokens);
        let mut run = Call::with(self.retry, Admitted::idle(upstream));
        upstream_ladder!(run, tokens, {
            let next = run.attempts() + 1;
            let attempted = run
                .attempt_timed(OnUpstream::new(upstream, operation(next)))
                .await;
            run.attempted(attempted).unwrap_or_else(|t| Err(E::from(t)))
        })
    }
}
