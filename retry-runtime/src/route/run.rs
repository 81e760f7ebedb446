//! The runs of a [`Retry`] and a [`TimedRetry`], over every placement: `run` and `run_fn`,
//! each the one driver ([`placed_ladder!`](super::placed_ladder)); and where a run finds the
//! retry's configuration ([`Source`]), its upstream the placement's.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use std::convert::identity;

use super::{HeldBack, Place, Placement, placed_ladder, timed_out};
use crate::class::Classify;
use crate::clock::Clock;
use crate::deadline::Deadline;
use crate::engine::{NoUpstream, Retry, Source, TimedRetry};
use crate::op::{Op, OpName};
use crate::policy::Policy;
use crate::quota::Quota;
use crate::timeout::TimedOut;
use crate::verdict::GaveUp;

impl<C, P, N, Q, L> Retry<C, P, N, Q, L>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
    L: Placement,
{
    /// Run `operation` (given the attempt number, from 1; across upstreams, the upstream the
    /// attempt goes to) until it succeeds or the ladder
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
    pub fn run<T, E, F>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<L::Answer<T>, GaveUp<E>>>
    where
        F: AsyncFnMut(L::Given) -> Result<T, E>,
        E: Classify + fmt::Display + HeldBack<<L::Kept as Place>::Paused>,
    {
        // The run owns its `Retry`, the one copy in the future (without its placement, whose
        // parts the call keeps): a borrow of a local would make the future's `Send` depend on
        // a lifetime the compiler cannot always prove for every caller. Nothing is read before
        // the first poll.
        let place = self.place;
        let source = self.placed(NoUpstream);
        placed_ladder!(source, place, L, operation, attempt, identity)
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
    ) -> impl Future<Output = Result<L::Answer<T>, GaveUp<E>>>
    where
        F: FnMut(L::Given) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display + HeldBack<<L::Kept as Place>::Paused>,
    {
        let place = self.place;
        let source = self.placed(NoUpstream);
        placed_ladder!(source, place, L, operation, attempt, identity)
    }
}

impl<C, P, N, Q, L> TimedRetry<C, P, N, Q, L>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
    L: Placement,
{
    /// Like [`Retry::run`], with each attempt dropped when its time runs out; its error is
    /// then `E::from(TimedOut)`, decided on like any other.
    pub fn run<T, E, F>(
        self,
        mut operation: F,
    ) -> impl Future<Output = Result<L::Answer<T>, GaveUp<E>>>
    where
        F: AsyncFnMut(L::Given) -> Result<T, E>,
        E: Classify + fmt::Display + From<TimedOut> + HeldBack<<L::Kept as Place>::Paused>,
    {
        let place = self.retry.place;
        let source = self.placed(NoUpstream);
        placed_ladder!(source, place, L, operation, attempt_timed, timed_out)
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
    ) -> impl Future<Output = Result<L::Answer<T>, GaveUp<E>>>
    where
        F: FnMut(L::Given) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify + fmt::Display + From<TimedOut> + HeldBack<<L::Kept as Place>::Paused>,
    {
        let place = self.retry.place;
        let source = self.placed(NoUpstream);
        placed_ladder!(source, place, L, operation, attempt_timed, timed_out)
    }
}

impl<C, P, N, Q, L> Source for Retry<C, P, N, Q, L>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
    L: Placement,
{
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
    fn budget(&self) -> Deadline {
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

impl<C, P, N, Q, L> Source for TimedRetry<C, P, N, Q, L>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
    L: Placement,
{
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
    fn budget(&self) -> Deadline {
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
