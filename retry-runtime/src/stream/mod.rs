//! A retried stream (feature `stream`): [`Retry::stream`] opens a stream and retries it until
//! its commit point, the first item that is content, and never replays it after.
//!
//! The commit point is gRPC's, moved from the response head (which model APIs send at once) to
//! the first content: before it, the stream's items are held, not delivered, and a failure is
//! retried exactly as [`Retry::run`] retries one; at it, the held items are delivered in order
//! and the stream passes through; after it, a failure ends the stream with
//! [`StopReason::Committed`](crate::StopReason::Committed), because a retry would repeat what the caller has already seen.
//!
//! A stream that can be continued where it was cut (its events carry IDs, or its items a
//! sequence number) is [resumed](RetryStream::resume) instead, before the commit point and
//! after it: the reopen asks for what follows the cursor, so nothing is repeated and the first
//! request is never sent again.

mod attempt;
mod ended;
mod hold;
mod open;
mod resume;
mod retry_stream;
mod rules;
mod state;
mod timer;

use std::fmt;
use std::future::Future;

use futures_core::TryStream;

use std::convert::Infallible;

use crate::class::Classify;
use crate::clock::Clock;
use crate::engine::{Retry, Source, TimedRetry};
use crate::op::OpName;
use crate::policy::Policy;
use crate::quota::Quota;
use crate::route::{AcrossUpstreams, HeldBack, NoUpstream, OneUpstream, Place, Placement, Placing};
use crate::timeout::TimedOut;
use crate::upstream::{UpstreamPaused, UpstreamRef};

pub use ended::{EndedEarly, Ending, HoldsEndedEarly};
#[cfg(all(feature = "sse", feature = "reqwest"))]
pub(crate) use hold::Hold;
#[cfg(feature = "sse")]
pub(crate) use hold::Limits;
pub use hold::{DEFAULT_HOLD_BYTES, DEFAULT_HOLD_ITEMS};
pub use open::{OpenAttempt, OpenOnUpstream};
pub use resume::{DEFAULT_RESUME_SILENCE, Resumable, ResumeFrom};
pub use retry_stream::RetryStream;
pub use rules::{ItemRules, StreamRules};

#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
impl<C, P, N, Q, L> Retry<C, P, N, Q, L>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
    L: Streamed,
{
    /// Open a stream with `open` (given the attempt number, from 1) and retry it until its
    /// commit point: the first item [`commit_when`](RetryStream::commit_when) says is content
    /// (by default, the first item).
    ///
    /// - **Before the commit point** the items are held, not delivered. An error from
    ///   `open`, an error item, or (with a commit rule) a stream that ends is classified and
    ///   retried as [`run`](Self::run) retries a failure: the same ladder, turn, budget,
    ///   quota, notices, nesting rule and accounting. The failed attempt's held items are
    ///   dropped, and its stream (its connection) before the wait.
    /// - **At the commit point** the held items are delivered in order, then the rest as it
    ///   arrives. A quota counts the call a success here.
    /// - **After it** an error ends the stream with one `Err(GaveUp)` whose reason is
    ///   [`StopReason::Committed`](crate::StopReason::Committed), its class kept; never retried, unless
    ///   [`restart_after_commit`](RetryStream::restart_after_commit) says so.
    ///
    /// Consume the stream inside its [`Turn`](crate::Turn): polled past it, it behaves as if
    /// outside any turn.
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Policy, Retry, StopReason};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use futures_core::Stream;
    /// use std::pin::pin;
    ///
    /// // The first attempt fails before any item; the second streams two.
    /// let stream = Retry::new(&Policy::AVAILABILITY).stream(|attempt| async move {
    ///     if attempt == 1 {
    ///         return Err(Class::Unavailable { retry_after: None });
    ///     }
    ///     Ok(testing::stream_of(vec![Ok::<_, Class>("Hel"), Ok("lo")]))
    /// });
    /// let (items, recorded) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<_> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, ["Hel", "lo"]);
    /// assert_eq!(recorded.waits().len(), 1);
    /// # }
    /// ```
    ///
    /// **On an upstream** ([`Retry::upstream`]) each attempt (an open, or a resume) is admitted
    /// by the upstream first; the commit point is the attempt's success, as the upstream counts
    /// it.
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Policy, Retry, Upstream};
    /// use std::time::Duration;
    ///
    /// static MODEL: Upstream = Upstream::new("model-stream");
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// // The first attempt is told to come back in 5 s: the upstream is paused.
    /// let stream = Retry::new(&Policy::AVAILABILITY).upstream(&MODEL).stream(|attempt| async move {
    ///     if attempt == 1 {
    ///         return Err(Class::RateLimited { retry_after: Some(Duration::from_secs(5)) });
    ///     }
    ///     Ok(testing::stream_of(vec![Ok::<_, Class>("hello")]))
    /// });
    /// let (items, recorded) = testing::scope(testing::collect(stream)).await;
    /// assert_eq!(items.into_iter().collect::<Result<Vec<_>, _>>().unwrap(), ["hello"]);
    /// // The call's own wait for its hint; the pause had ended by its next open.
    /// assert_eq!(recorded.waits().len(), 1);
    /// # MODEL.reset();
    /// # }
    /// ```
    ///
    /// **Across an ordered set** ([`Retry::across`]) `open` is given the upstream each attempt
    /// goes to. Before its commit point (its first content) a failure moves the stream to the
    /// next upstream at once, as a call's does; after it, the stream stays on the upstream that
    /// delivered, and the rules above hold there (committed, resumed, restarted).
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Policy, Retry, Upstream, Upstreams};
    ///
    /// static CLAUDE: Upstream = Upstream::new("claude-stream");
    /// static GPT: Upstream = Upstream::new("gpt-stream");
    /// static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// // claude's stream fails before its first content: the stream moves to gpt at once.
    /// let stream = Retry::new(&Policy::AVAILABILITY).across(&MODELS).stream(|to| async move {
    ///     let items = match to.name() {
    ///         "claude-stream" => vec![Err(Class::Unavailable { retry_after: None })],
    ///         _ => vec![Ok("Hel"), Ok("lo")],
    ///     };
    ///     Ok::<_, Class>(testing::stream_of(items))
    /// });
    /// let (items, recorded) = testing::scope(testing::collect(stream)).await;
    /// assert_eq!(items.into_iter().collect::<Result<Vec<_>, _>>().unwrap(), ["Hel", "lo"]);
    /// assert!(recorded.waits().is_empty(), "a move waits nothing");
    /// # CLAUDE.reset();
    /// # }
    /// ```
    pub fn stream<O, Fut, S, E>(self, open: O) -> RetryStream<Self, L::Open<O>>
    where
        O: FnMut(L::Opened) -> Fut,
        Fut: Future<Output = Result<S, E>>,
        S: TryStream,
        S::Error: Into<E>,
        E: Classify + fmt::Display + HeldBack<<L::Kept as Place>::Paused>,
        L::Open<O>: OpenAttempt<u32, Future = Fut>,
    {
        let place = self.place;
        place.streamed(RetryStream::new(self, place.open(open), None), E::held_back)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
impl<C, P, N, Q, L> TimedRetry<C, P, N, Q, L>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
    L: Streamed,
{
    /// Like [`Retry::stream`], with each attempt's timeout bounding it up to its commit
    /// point only: a 30 s timeout does not cut a long generation. Its error is then
    /// `E::from(TimedOut)`, decided on like any other.
    ///
    /// ```
    /// use retry_runtime::{testing, Policy, Retry, TimedOut};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let timed = Retry::new(&Policy::TRANSIENT).timeout(Duration::from_secs(1));
    /// let stream = timed.stream(|attempt| async move {
    ///     if attempt == 1 { std::future::pending::<()>().await }
    ///     Ok::<_, TimedOut>(testing::stream_of(vec![Ok::<_, TimedOut>(attempt)]))
    /// });
    /// let (items, recorded) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<_> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, [2]);
    /// assert_eq!(recorded.waits().len(), 1);
    /// # }
    /// ```
    pub fn stream<O, Fut, S, E>(self, open: O) -> RetryStream<Self, L::Open<O>>
    where
        O: FnMut(L::Opened) -> Fut,
        Fut: Future<Output = Result<S, E>>,
        S: TryStream,
        S::Error: Into<E>,
        E: Classify + fmt::Display + From<TimedOut> + HeldBack<<L::Kept as Place>::Paused>,
        L::Open<O>: OpenAttempt<u32, Future = Fut>,
    {
        let place = self.retry.place;
        let stream = RetryStream::new(self, place.open(open), Some(E::from));
        place.streamed(stream, E::held_back)
    }
}

/// A placement's part in a stream: what `open` is given (the attempt's number, or the
/// upstream it goes to), and the stream on its upstream or across its set. Not public API.
#[doc(hidden)]
pub trait Streamed: Placement {
    /// What `open` is given.
    type Opened;
    /// `open`, as the stream calls it.
    type Open<O>;
    /// `open`, as the stream calls it.
    fn open<O>(self, open: O) -> Self::Open<O>;
    /// The stream, on its placement: an attempt held back past the call's end is the error
    /// `held_back` makes.
    fn streamed<R, O>(
        self,
        stream: RetryStream<R, O>,
        held_back: fn(<Self::Kept as Place>::Paused) -> state::Error<O>,
    ) -> RetryStream<R, O>
    where
        R: Source,
        O: OpenAttempt<u32>,
        state::Inner<O>: TryStream;
}

impl Streamed for NoUpstream {
    type Opened = u32;
    type Open<O> = O;
    #[inline]
    fn open<O>(self, open: O) -> O {
        open
    }
    #[inline]
    fn streamed<R, O>(
        self,
        stream: RetryStream<R, O>,
        _: fn(Infallible) -> state::Error<O>,
    ) -> RetryStream<R, O>
    where
        R: Source,
        O: OpenAttempt<u32>,
        state::Inner<O>: TryStream,
    {
        stream
    }
}

impl Streamed for OneUpstream {
    type Opened = u32;
    type Open<O> = O;
    #[inline]
    fn open<O>(self, open: O) -> O {
        open
    }
    #[inline]
    fn streamed<R, O>(
        self,
        stream: RetryStream<R, O>,
        held_back: fn(UpstreamPaused) -> state::Error<O>,
    ) -> RetryStream<R, O>
    where
        R: Source,
        O: OpenAttempt<u32>,
        state::Inner<O>: TryStream,
    {
        stream.placed(Placing::on(self.upstream), held_back)
    }
}

impl Streamed for AcrossUpstreams {
    type Opened = UpstreamRef;
    type Open<O> = OpenOnUpstream<O>;
    #[inline]
    fn open<O>(self, open: O) -> OpenOnUpstream<O> {
        OpenOnUpstream::new(open, self.set.upstreams()[0])
    }
    #[inline]
    fn streamed<R, O>(
        self,
        stream: RetryStream<R, O>,
        held_back: fn(UpstreamPaused) -> state::Error<O>,
    ) -> RetryStream<R, O>
    where
        R: Source,
        O: OpenAttempt<u32>,
        state::Inner<O>: TryStream,
    {
        stream.placed(Placing::across(self.set, true), held_back)
    }
}
