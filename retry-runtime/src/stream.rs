//! A retried stream (feature `stream`): [`Retry::stream`] opens a stream and retries it until
//! its commit point, the first item that is content, and never after.
//!
//! The commit point is gRPC's, moved from the response head (which model APIs send at once) to
//! the first content: before it, the stream's items are held, not delivered, and a failure is
//! retried exactly as [`Retry::run`] retries one; at it, the held items are delivered in order
//! and the stream passes through; after it, a failure ends the stream with
//! [`StopReason::Committed`](crate::StopReason::Committed), because a retry would repeat what the caller has already seen.

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::{Stream, TryStream};
use tokio::time::{Instant, Sleep};

use crate::class::{Class, Classify};
use crate::clock::Clock;
use crate::engine::{Retry, Run, Source, TimedRetry};
use crate::nesting;
use crate::policy::Policy;
use crate::quota::Quota;
use crate::timeout::{TimedOut, TimeoutBound};
use crate::turn::scope as turn;
use crate::turn::scope::OpName;
use crate::verdict::GaveUp;
use crate::wait::Wait;

/// How many items a stream holds before its commit point, by default, before it commits
/// anyway: a preamble that never ends is not held without bound.
pub const DEFAULT_HOLD_ITEMS: usize = 64;

/// How many bytes a stream holds before its commit point, by default, where its items are
/// weighed ([`RetryStream::hold_bytes`]).
pub const DEFAULT_HOLD_BYTES: usize = 64 * 1024;

/// A stream that ended before its commit point: the server closed it after only a preamble.
/// No answer came, so it classifies as [`Class::Transport`], as a connection cut there does.
///
/// A stream with a commit rule ([`RetryStream::commit_when`]) needs an error type that can
/// hold one (`From<EndedEarly>`); with thiserror, a variant `#[error(transparent)]
/// Ended(#[from] retry_runtime::EndedEarly)`.
///
/// ```
/// use retry_runtime::{Class, Classify, EndedEarly};
///
/// let ended = EndedEarly::new(2);
/// assert_eq!(ended.classify(), Class::Transport);
/// assert_eq!(ended.to_string(), "the stream ended before its first content, after 2 items of preamble");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndedEarly {
    held: usize,
}

impl EndedEarly {
    /// A stream that ended after `held` items, none of them content.
    pub const fn new(held: usize) -> EndedEarly {
        EndedEarly { held }
    }

    /// How many items it had sent, none of them content.
    pub const fn held(&self) -> usize {
        self.held
    }
}

impl fmt::Display for EndedEarly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the stream ended before its first content, after {} item{} of preamble",
            self.held,
            if self.held == 1 { "" } else { "s" }
        )
    }
}

impl Error for EndedEarly {}

impl Classify for EndedEarly {
    fn classify(&self) -> Class {
        Class::Transport
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
impl<C, P, N, Q> Retry<C, P, N, Q>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
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
    pub fn stream<O, Fut, S, E>(self, open: O) -> RetryStream<Self, O, Fut, S, E>
    where
        O: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<S, E>>,
        S: TryStream,
        S::Error: Into<E>,
        E: Classify + fmt::Display,
    {
        RetryStream::new(self, open, None)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
impl<C, P, N, Q> TimedRetry<C, P, N, Q>
where
    C: Clock,
    P: AsRef<Policy>,
    N: OpName,
    Q: AsRef<Quota>,
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
    pub fn stream<O, Fut, S, E>(self, open: O) -> RetryStream<Self, O, Fut, S, E>
    where
        O: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<S, E>>,
        S: TryStream,
        S::Error: Into<E>,
        E: Classify + fmt::Display + From<TimedOut>,
    {
        RetryStream::new(self, open, Some(E::from))
    }
}

/// Where a [`RetryStream`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The next attempt is to be opened.
    Start,
    /// `open`'s future is running.
    Opening,
    /// The stream is open and its items are held: not yet committed.
    Holding,
    /// Committed: the held items are being delivered; then the stream passes through, or
    /// (`then_end`) ends, as it already has.
    Releasing { then_end: bool },
    /// Committed, the held items delivered: the stream passes through.
    Streaming,
    /// Waiting before the next attempt.
    Waiting,
    /// Over: it has returned its last item, or its give-up.
    Done,
}

/// The run, and whether its stream has committed and not yet ended: dropped then, the call is
/// finished (its output reached the caller), not in flight.
struct Ledger<R: Source> {
    run: Run<R>,
    committed: bool,
}

impl<R: Source> Ledger<R> {
    /// The call is over (its stream ended, or its give-up was reported).
    fn over(&mut self) {
        if self.committed {
            self.committed = false;
            self.run.ended_after_commit();
        }
    }
}

impl<R: Source> Drop for Ledger<R> {
    fn drop(&mut self) {
        self.over();
    }
}

/// The limits and conversions of a [`RetryStream`]: what it holds before committing, its
/// timeouts, and how its error holds a [`TimedOut`] or an [`EndedEarly`].
struct Limits<T, E> {
    items: usize,
    bytes: usize,
    weigh: fn(&T) -> usize,
    commit_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    timed_out: Option<fn(TimedOut) -> E>,
    ended_early: Option<fn(EndedEarly) -> E>,
}

/// The timer of one attempt: up to the commit point, the sooner of its own bounds (attempt
/// timeout, `commit_timeout`, and the turn and a literal budget); and the idle bound since the
/// last item. It is reset only when it fires early, so an item costs one clock read at most.
struct Timer {
    sleep: Pin<Box<Sleep>>,
    fixed: Option<(Instant, TimeoutBound)>,
    idle: Option<Duration>,
    last: Instant,
    started: Instant,
}

impl Timer {
    fn due(&self) -> Option<(Instant, TimeoutBound)> {
        let idle = self
            .idle
            .and_then(|idle| self.last.checked_add(idle))
            .map(|at| (at, TimeoutBound::Idle));
        match (self.fixed, idle) {
            (Some(fixed), Some(idle)) if idle.0 < fixed.0 => Some(idle),
            (Some(fixed), _) => Some(fixed),
            (None, idle) => idle,
        }
    }

    fn new(fixed: Option<(Instant, TimeoutBound)>, idle: Option<Duration>) -> Option<Timer> {
        let now = Instant::now();
        let mut timer = Timer {
            sleep: Box::pin(tokio::time::sleep_until(now)),
            fixed,
            idle,
            last: now,
            started: now,
        };
        let (due, _) = timer.due()?;
        timer.sleep.as_mut().reset(due);
        Some(timer)
    }

    /// An item came: the idle bound starts again.
    #[inline]
    fn item(&mut self) {
        if self.idle.is_some() {
            self.last = Instant::now();
        }
    }

    /// The bound that fired, if one has.
    fn expired(&mut self, cx: &mut Context<'_>) -> Option<TimedOut> {
        loop {
            self.sleep.as_mut().poll(cx).is_ready().then_some(())?;
            let (due, bound) = self.due()?;
            let now = Instant::now();
            if now >= due {
                return Some(TimedOut::new(
                    bound,
                    now.saturating_duration_since(self.started),
                ));
            }
            self.sleep.as_mut().reset(due);
        }
    }
}

/// Every item commits: the default rule.
fn every_item<T>(_: &T) -> bool {
    true
}

/// No item is weighed: the default.
fn weightless<T>(_: &T) -> usize {
    0
}

/// The stream [`Retry::stream`] returns: retried until its commit point, then passed through.
/// Configure it before its first poll.
///
/// It is `Send` when its parts are, and `Unpin`: what it pins (the open future, the stream,
/// its timer) is boxed, once per attempt.
#[must_use = "a stream does nothing unless polled"]
pub struct RetryStream<R, O, Fut, S, E, P = fn(&<S as TryStream>::Ok) -> bool, H = fn()>
where
    R: Source,
    S: TryStream,
{
    ledger: Ledger<R>,
    open: O,
    opening: Option<Pin<Box<Fut>>>,
    stream: Option<Pin<Box<S>>>,
    timer: Option<Timer>,
    wait: Option<Wait<<R::Clock as Clock>::Sleep, E>>,
    held: VecDeque<S::Ok>,
    held_bytes: usize,
    frame: nesting::Frame,
    phase: Phase,
    commit: P,
    limits: Limits<S::Ok, E>,
    restart: Option<H>,
    /// A restart's attempt is running: its hook runs at the commit point, before its first
    /// item is delivered.
    restarting: bool,
    /// The quota and the turn count the call's first commit only.
    settled: bool,
}

// Nothing in it is pinned in place: the open future, the stream and the timer are boxed.
impl<R: Source, O, Fut, S: TryStream, E, P, H> Unpin for RetryStream<R, O, Fut, S, E, P, H> {}

impl<R: Source, O, Fut, S: TryStream, E> RetryStream<R, O, Fut, S, E> {
    fn new(source: R, open: O, timed_out: Option<fn(TimedOut) -> E>) -> Self {
        RetryStream {
            ledger: Ledger {
                run: Run::new(source),
                committed: false,
            },
            open,
            opening: None,
            stream: None,
            timer: None,
            wait: None,
            held: VecDeque::new(),
            held_bytes: 0,
            frame: nesting::Frame::default(),
            phase: Phase::Start,
            commit: every_item,
            limits: Limits {
                items: DEFAULT_HOLD_ITEMS,
                bytes: DEFAULT_HOLD_BYTES,
                weigh: weightless,
                commit_timeout: None,
                idle_timeout: None,
                timed_out,
                ended_early: None,
            },
            restart: None,
            restarting: false,
            settled: false,
        }
    }
}

impl<R: Source, O, Fut, S: TryStream, E, P, H> RetryStream<R, O, Fut, S, E, P, H> {
    /// Commit at the first item for which `is_content` is true: the items before it are
    /// held, and a failure among them is retried. [`sse::is_content`](crate::sse::is_content)
    /// knows the model providers' preambles.
    ///
    /// A stream that ends before its commit point is then a failure too, so the error type
    /// must hold an [`EndedEarly`].
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Classify, EndedEarly, Policy, Retry};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum Failed { Unavailable, Ended }
    /// impl From<EndedEarly> for Failed {
    ///     fn from(_: EndedEarly) -> Self { Failed::Ended }
    /// }
    /// impl Classify for Failed {
    ///     fn classify(&self) -> Class { Class::Unavailable { retry_after: None } }
    /// }
    /// impl std::fmt::Display for Failed {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // The first attempt sends a preamble, then fails: the caller never sees it.
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|attempt| async move {
    ///         Ok::<_, Failed>(testing::stream_of(match attempt {
    ///             1 => vec![Ok("start"), Err(Failed::Unavailable)],
    ///             _ => vec![Ok("start"), Ok("text")],
    ///         }))
    ///     })
    ///     .commit_when(|item: &&str| *item != "start");
    /// let (items, _) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<_> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, ["start", "text"]);
    /// # }
    /// ```
    pub fn commit_when<Q>(self, is_content: Q) -> RetryStream<R, O, Fut, S, E, Q, H>
    where
        Q: FnMut(&S::Ok) -> bool,
        E: From<EndedEarly>,
    {
        let mut stream = self.with_rules(|_| is_content, |restart| restart);
        stream.limits.ended_early = Some(E::from);
        stream
    }

    /// Retry even after the commit point, under the same policy: `hook` runs once before the
    /// new attempt's first item is delivered, so the caller can discard its partial output.
    /// Restarts count against the policy's attempts; a turn's report counts them apart from
    /// retries ([`TurnReport::restarts`](crate::TurnReport::restarts)).
    ///
    /// ```
    /// use retry_runtime::{testing, Class, Policy, Retry};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let discarded = AtomicU32::new(0);
    /// let stream = Retry::new(&Policy::AVAILABILITY)
    ///     .stream(|attempt| async move {
    ///         Ok::<_, Class>(testing::stream_of(match attempt {
    ///             1 => vec![Ok("partial"), Err(Class::Transport)],
    ///             _ => vec![Ok("whole")],
    ///         }))
    ///     })
    ///     .restart_after_commit(|| { discarded.fetch_add(1, Ordering::SeqCst); });
    /// let (items, _) = testing::scope(testing::collect(stream)).await;
    /// let items: Vec<_> = items.into_iter().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(items, ["partial", "whole"]);
    /// assert_eq!(discarded.load(Ordering::SeqCst), 1);
    /// # }
    /// ```
    pub fn restart_after_commit<G: FnMut()>(self, hook: G) -> RetryStream<R, O, Fut, S, E, P, G> {
        self.with_rules(|commit| commit, |_| Some(hook))
    }

    /// This stream with its commit rule and its restart hook made anew from the old ones:
    /// what the two builders that change their types share.
    fn with_rules<Q, G>(
        self,
        commit: impl FnOnce(P) -> Q,
        restart: impl FnOnce(Option<H>) -> Option<G>,
    ) -> RetryStream<R, O, Fut, S, E, Q, G> {
        RetryStream {
            ledger: self.ledger,
            open: self.open,
            opening: self.opening,
            stream: self.stream,
            timer: self.timer,
            wait: self.wait,
            held: self.held,
            held_bytes: self.held_bytes,
            frame: self.frame,
            phase: self.phase,
            commit: commit(self.commit),
            limits: self.limits,
            restart: restart(self.restart),
            restarting: self.restarting,
            settled: self.settled,
        }
    }

    /// Commit anyway once `items` are held (default [`DEFAULT_HOLD_ITEMS`]): a preamble that
    /// never ends is not held without bound. At least one.
    pub fn hold_limit(mut self, items: usize) -> Self {
        self.limits.items = items.max(1);
        self
    }

    /// Commit anyway once the held items weigh `bytes` by `weigh` (default
    /// [`DEFAULT_HOLD_BYTES`], with nothing weighed); for events,
    /// [`sse::Event::size`](crate::sse::Event::size).
    pub fn hold_bytes(mut self, bytes: usize, weigh: fn(&S::Ok) -> usize) -> Self {
        self.limits.bytes = bytes;
        self.limits.weigh = weigh;
        self
    }

    /// Bound the time from calling `open` to the commit point: an attempt that has not
    /// committed by then is dropped, and its error is `E::from(TimedOut)` with
    /// [`TimeoutBound::Commit`]. It classifies as `Timeout`, so the policy decides:
    /// `availability` does not retry a stall, `transient` does. Bounded by the turn and a
    /// literal budget, as an attempt timeout is.
    pub fn commit_timeout(mut self, timeout: Duration) -> Self
    where
        E: From<TimedOut>,
    {
        self.limits.commit_timeout = Some(timeout);
        self.limits.timed_out = Some(E::from);
        self
    }

    /// Bound the time between items, before the commit point and after it: a stream that
    /// stalls longer is dropped, and its error is `E::from(TimedOut)` with
    /// [`TimeoutBound::Idle`]. After the commit point, that ends the stream with
    /// [`StopReason::Committed`](crate::StopReason::Committed), as any error does.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self
    where
        E: From<TimedOut>,
    {
        self.limits.idle_timeout = Some(timeout);
        self.limits.timed_out = Some(E::from);
        self
    }
}

impl<R, O, Fut, S, E, P, H> RetryStream<R, O, Fut, S, E, P, H>
where
    R: Source,
    O: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<S, E>>,
    S: TryStream,
    S::Error: Into<E>,
    E: Classify + fmt::Display,
    P: FnMut(&S::Ok) -> bool,
    H: FnMut(),
{
    /// Open the next attempt.
    fn open(&mut self) {
        let attempt = self.ledger.run.attempts().saturating_add(1);
        self.frame = nesting::Frame::default();
        let open = &mut self.open;
        let opening = nesting::enter(&mut self.frame, || open(attempt));
        self.ledger.run.begin_attempt();
        self.opening = Some(Box::pin(opening));
        self.timer = self.attempt_timer();
        self.phase = Phase::Opening;
    }

    /// The timer up to the commit point, if anything bounds it.
    fn attempt_timer(&self) -> Option<Timer> {
        self.limits.timed_out?;
        let own = match (
            self.ledger.run.attempt_timeout(),
            self.limits.commit_timeout,
        ) {
            (Some(attempt), Some(commit)) if commit <= attempt => {
                Some((commit, TimeoutBound::Commit))
            }
            (Some(attempt), _) => Some((attempt, TimeoutBound::Timeout)),
            (None, commit) => commit.map(|commit| (commit, TimeoutBound::Commit)),
        };
        let fixed = match own {
            Some(own) => match self.ledger.run.bound(Some(own), true) {
                (Some(at), bound) => Some((at, bound)),
                (None, _) => None,
            },
            None => None,
        };
        Timer::new(fixed, self.limits.idle_timeout)
    }

    /// The timer after the commit point: the idle bound, within the turn.
    fn streaming_timer(&self) -> Option<Timer> {
        self.limits.timed_out?;
        let idle = self.limits.idle_timeout?;
        let fixed = turn::expiry().map(|at| (at, TimeoutBound::Turn));
        Timer::new(fixed, Some(idle))
    }

    /// Whether the attempt's timer fired: its error, if so.
    fn timed_out(&mut self, cx: &mut Context<'_>) -> Option<E> {
        let timed_out = self.timer.as_mut()?.expired(cx)?;
        self.timer = None;
        self.limits.timed_out.map(|to_error| to_error(timed_out))
    }

    /// A failure before the commit point (or a restart's after it): drop the attempt and all
    /// it held, then wait, or give up.
    fn failed(&mut self, error: E, after_commit: bool) -> Option<GaveUp<E>> {
        self.opening = None;
        self.stream = None;
        self.timer = None;
        self.held.clear();
        self.held_bytes = 0;
        let run = &mut self.ledger.run;
        if !after_commit {
            run.note_frame(std::mem::take(&mut self.frame));
        }
        let decided = if after_commit {
            self.ledger.committed = false;
            run.failed_after_commit(error)
        } else {
            run.failed(error)
        };
        match decided {
            Ok(wait) => {
                self.wait = Some(wait);
                self.restarting |= after_commit;
                self.phase = Phase::Waiting;
                None
            }
            Err(gave_up) => {
                self.phase = Phase::Done;
                Some(gave_up)
            }
        }
    }

    /// A failure after the commit point: the end of the stream, or a restart.
    fn failed_after_commit(&mut self, error: E) -> Option<GaveUp<E>> {
        if self.restart.is_some() {
            return self.failed(error, true);
        }
        self.stream = None;
        self.timer = None;
        self.phase = Phase::Done;
        self.ledger.committed = false;
        Some(self.ledger.run.gave_up_committed(error))
    }

    /// The commit point: the call's output goes to the caller.
    fn commit(&mut self, then_end: bool) {
        self.ledger.run.note_frame(std::mem::take(&mut self.frame));
        if !self.settled {
            self.settled = true;
            self.ledger.run.settle_quota();
            self.ledger.run.committed();
        }
        self.ledger.committed = true;
        if std::mem::take(&mut self.restarting)
            && let Some(hook) = &mut self.restart
        {
            hook();
        }
        self.held_bytes = 0;
        self.timer = self.streaming_timer();
        self.phase = Phase::Releasing { then_end };
    }

    /// Poll the stream before its commit point: hold, commit, or fail. `None`: the phase
    /// changed, go on.
    #[allow(clippy::type_complexity)]
    fn poll_holding(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Option<Poll<Option<Result<S::Ok, GaveUp<E>>>>> {
        loop {
            let stream = self.stream.as_mut()?;
            let polled = nesting::enter(&mut self.frame, || stream.as_mut().try_poll_next(cx));
            let failure = match polled {
                Poll::Ready(Some(Ok(item))) => {
                    if let Some(timer) = &mut self.timer {
                        timer.item();
                    }
                    let content = (self.commit)(&item);
                    if content && self.held.is_empty() {
                        // The common case: the first item commits, and is never held.
                        self.commit(false);
                        return Some(Poll::Ready(Some(Ok(item))));
                    }
                    self.held_bytes = self.held_bytes.saturating_add((self.limits.weigh)(&item));
                    self.held.push_back(item);
                    if content
                        || self.held.len() >= self.limits.items
                        || self.held_bytes >= self.limits.bytes
                    {
                        self.commit(false);
                        return None;
                    }
                    continue;
                }
                Poll::Ready(Some(Err(error))) => error.into(),
                Poll::Ready(None) => match self.limits.ended_early {
                    Some(ended_early) => ended_early(EndedEarly::new(self.held.len())),
                    // Without a commit rule every item commits: this stream sent none.
                    None => {
                        self.stream = None;
                        self.commit(true);
                        return None;
                    }
                },
                Poll::Pending => match self.timed_out(cx) {
                    Some(error) => error,
                    None => return Some(Poll::Pending),
                },
            };
            return self
                .failed(failure, false)
                .map(|gave_up| Poll::Ready(Some(Err(gave_up))));
        }
    }

    /// Poll the stream after its commit point: the hot path, an item passed through.
    #[allow(clippy::type_complexity)]
    #[inline]
    fn poll_streaming(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Option<Poll<Option<Result<S::Ok, GaveUp<E>>>>> {
        let stream = self.stream.as_mut()?;
        let failure = match stream.as_mut().try_poll_next(cx) {
            Poll::Ready(Some(Ok(item))) => {
                if let Some(timer) = &mut self.timer {
                    timer.item();
                }
                return Some(Poll::Ready(Some(Ok(item))));
            }
            Poll::Ready(Some(Err(error))) => error.into(),
            Poll::Ready(None) => {
                self.finished();
                return Some(Poll::Ready(None));
            }
            Poll::Pending => match self.timed_out(cx) {
                Some(error) => error,
                None => return Some(Poll::Pending),
            },
        };
        self.failed_after_commit(failure)
            .map(|gave_up| Poll::Ready(Some(Err(gave_up))))
    }

    /// The stream ended after its commit point: the call succeeded.
    fn finished(&mut self) {
        self.stream = None;
        self.timer = None;
        self.phase = Phase::Done;
        self.ledger.over();
    }
}

impl<R, O, Fut, S, E, P, H> Stream for RetryStream<R, O, Fut, S, E, P, H>
where
    R: Source,
    O: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<S, E>>,
    S: TryStream,
    S::Error: Into<E>,
    E: Classify + fmt::Display,
    P: FnMut(&S::Ok) -> bool,
    H: FnMut(),
{
    type Item = Result<S::Ok, GaveUp<E>>;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // The hot path: committed, no idle timer, an item passed straight through.
        if this.phase == Phase::Streaming
            && this.timer.is_none()
            && let Some(stream) = &mut this.stream
        {
            match stream.as_mut().try_poll_next(cx) {
                Poll::Ready(Some(Ok(item))) => return Poll::Ready(Some(Ok(item))),
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(error))) => {
                    if let Some(gave_up) = this.failed_after_commit(error.into()) {
                        return Poll::Ready(Some(Err(gave_up)));
                    }
                    // A restart: its wait, then its attempt.
                    return this.poll_phases(cx);
                }
                Poll::Ready(None) => {
                    this.finished();
                    return Poll::Ready(None);
                }
            }
        }
        this.poll_phases(cx)
    }
}

impl<R, O, Fut, S, E, P, H> RetryStream<R, O, Fut, S, E, P, H>
where
    R: Source,
    O: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<S, E>>,
    S: TryStream,
    S::Error: Into<E>,
    E: Classify + fmt::Display,
    P: FnMut(&S::Ok) -> bool,
    H: FnMut(),
{
    /// Every phase but the hot path's.
    #[allow(clippy::type_complexity)]
    #[inline(never)]
    fn poll_phases(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<S::Ok, GaveUp<E>>>> {
        let this = self;
        loop {
            match this.phase {
                Phase::Streaming => {
                    if let Some(polled) = this.poll_streaming(cx) {
                        return polled;
                    }
                }
                Phase::Releasing { then_end } => match this.held.pop_front() {
                    Some(item) => return Poll::Ready(Some(Ok(item))),
                    None if then_end => {
                        this.finished();
                        return Poll::Ready(None);
                    }
                    None => this.phase = Phase::Streaming,
                },
                Phase::Start => this.open(),
                Phase::Opening => {
                    let Some(opening) = &mut this.opening else {
                        this.phase = Phase::Done;
                        continue;
                    };
                    let failure =
                        match nesting::enter(&mut this.frame, || opening.as_mut().poll(cx)) {
                            Poll::Ready(Ok(stream)) => {
                                this.opening = None;
                                this.stream = Some(Box::pin(stream));
                                this.phase = Phase::Holding;
                                continue;
                            }
                            Poll::Ready(Err(error)) => error,
                            Poll::Pending => match this.timed_out(cx) {
                                Some(error) => error,
                                None => return Poll::Pending,
                            },
                        };
                    if let Some(gave_up) = this.failed(failure, false) {
                        return Poll::Ready(Some(Err(gave_up)));
                    }
                }
                Phase::Holding => {
                    if let Some(polled) = this.poll_holding(cx) {
                        return polled;
                    }
                }
                Phase::Waiting => {
                    let Some(wait) = &mut this.wait else {
                        this.phase = Phase::Done;
                        continue;
                    };
                    let waited = std::task::ready!(Pin::new(wait).poll(cx));
                    this.wait = None;
                    match this.ledger.run.waited(waited) {
                        Ok(()) => this.phase = Phase::Start,
                        Err(gave_up) => {
                            this.phase = Phase::Done;
                            return Poll::Ready(Some(Err(gave_up)));
                        }
                    }
                }
                Phase::Done => return Poll::Ready(None),
            }
        }
    }
}

impl<R, O, Fut, S, E, P, H> fmt::Debug for RetryStream<R, O, Fut, S, E, P, H>
where
    R: Source,
    S: TryStream,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryStream")
            .field("run", &self.ledger.run)
            .field("phase", &self.phase)
            .field("held", &self.held.len())
            .finish_non_exhaustive()
    }
}
