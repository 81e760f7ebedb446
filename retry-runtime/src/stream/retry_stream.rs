//! [`RetryStream`]: a thin pinned adapter over the run (the decision and the accounting), the
//! [`Hold`] (what is kept back before the commit point) and the [`Timer`]. Its state enum
//! carries what each state needs: the open future, the stream and how far it has flowed, the
//! held items left to deliver, or the wait.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::{Stream, TryFuture, TryStream};

use super::ended::EndedEarly;
use super::hold::{Hold, Limits};
use super::timer::Timer;
use crate::class::Classify;
use crate::clock::{Clock, TokioSleep};
use crate::engine::{Run, Source};
use crate::nesting;
use crate::timeout::{TimedOut, TimeoutBound};
use crate::turn::scope as turn;
use crate::verdict::GaveUp;
use crate::wait::{Wait, Waited};

/// An item of the stream that `Fut` opens.
type Item<Fut> = <<Fut as TryFuture>::Ok as TryStream>::Ok;

/// What a [`RetryStream`] yields: an item, or the give-up that ends it.
type Yielded<Fut> = Result<Item<Fut>, GaveUp<<Fut as TryFuture>::Error>>;

pin_project_lite::pin_project! {
    /// The stream [`Retry::stream`](crate::Retry::stream) returns: retried until its commit
    /// point, then passed through. Configure it before its first poll.
    ///
    /// Its parameters are the retry (`R`), the `open` function and the future it returns, the
    /// restart hook (`H`, a no-op unless
    /// [`restart_after_commit`](RetryStream::restart_after_commit) sets one) and the clock's
    /// sleep (`W`, tokio's by default). It has no bound of this crate's on them: it is `Send`
    /// when they and the stream are, whatever lifetimes the retry borrows, so a task that
    /// holds one can be spawned. It allocates nothing per attempt: the open future and the
    /// stream are pinned in place; a wait is one box, as in [`Retry::run`](crate::Retry::run).
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Retry, RetryStream, testing};
    /// use std::future::Ready;
    ///
    /// type Items = testing::StreamOf<Result<u32, Class>>;
    /// type Open = fn(u32) -> Ready<Result<Items, Class>>;
    ///
    /// // A retried stream in a struct, as a field of a named type.
    /// struct Reader {
    ///     stream: RetryStream<Retry, Open, Ready<Result<Items, Class>>>,
    /// }
    ///
    /// fn open(attempt: u32) -> Ready<Result<Items, Class>> {
    ///     std::future::ready(Ok(testing::stream_of(vec![Ok(attempt)])))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let reader = Reader { stream: Retry::new(&Policy::AVAILABILITY).stream(open as Open) };
    /// let spawned = tokio::spawn(testing::collect(reader.stream));
    /// let items: Vec<u32> = spawned.await.unwrap().into_iter().map(Result::unwrap).collect();
    /// assert_eq!(items, [1]);
    /// # }
    /// ```
    #[must_use = "a stream does nothing unless polled"]
    pub struct RetryStream<R, O, Fut, H = fn(), W = TokioSleep>
    where
        Fut: TryFuture,
        Fut::Ok: TryStream,
    {
        #[pin]
        state: State<Fut, Fut::Ok, Item<Fut>, W, Fut::Error>,
        #[pin]
        timer: Timer,
        core: Core<R, O>,
        rules: Rules<Item<Fut>, Fut::Error, H>,
    }
}

pin_project_lite::pin_project! {
    /// Where a [`RetryStream`] is, with what that place needs.
    #[project = StateProj]
    enum State<Fut, S, T, W, E> {
        /// The next attempt is to be opened.
        Start,
        /// `open`'s future is running.
        Opening { #[pin] future: Fut },
        /// The attempt's stream is open, and `flow` says how far it has got.
        Open { #[pin] stream: S, flow: Flow<T> },
        /// The stream ended at its commit point: what it held, then the end.
        Draining { held: VecDeque<T> },
        /// Waiting before the next attempt.
        Waiting { wait: Wait<W, E> },
        /// Over: it has returned its last item, or its give-up.
        Done,
    }
}

/// How far an open stream has got.
enum Flow<T> {
    /// Before the commit point: its items are held.
    Holding(Hold<T>),
    /// Committed: what was held is being delivered.
    Releasing(VecDeque<T>),
    /// Committed, and what was held delivered: items pass through.
    Passing,
}

/// The rules of a [`RetryStream`]: its commit point, what it holds before it, its timeouts,
/// how its error holds a [`TimedOut`] or an [`EndedEarly`], and its restart hook.
struct Rules<T, E, H> {
    commit: fn(&T) -> bool,
    weigh: fn(&T) -> usize,
    limits: Limits,
    commit_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    timed_out: Option<fn(TimedOut) -> E>,
    ended_early: Option<fn(EndedEarly) -> E>,
    restart: H,
}

/// What the stream's states share: the run, `open` and the nesting frame of the attempt.
struct Core<R, O> {
    run: Run<R>,
    /// What the run does when the stream is dropped: `Run::dropped` for this `R`, kept as a
    /// pointer so that the stream itself needs no bound.
    dropped: fn(&mut Run<R>),
    open: O,
    frame: nesting::Frame,
}

impl<R, O> Drop for Core<R, O> {
    /// Dropped unfinished, the call reports itself; after its commit point it has finished.
    fn drop(&mut self) {
        (self.dropped)(&mut self.run);
    }
}

/// What a state's poll says to do next.
enum Then<St, Y> {
    /// Return this.
    Yield(Poll<Option<Y>>),
    /// Go on in the state this became.
    Become(St),
    /// End the stream with this last item (or none): it is done.
    End(Option<Y>),
    /// Go on in the same state (it changed inside).
    Again,
}

/// Every item commits: the default rule.
fn every_item<T>(_: &T) -> bool {
    true
}

/// No item is weighed: the default.
fn weightless<T>(_: &T) -> usize {
    0
}

/// No restart hook: the default.
fn no_restart() {}

impl<R, O, Fut> RetryStream<R, O, Fut>
where
    R: Source,
    Fut: TryFuture,
    Fut::Ok: TryStream,
{
    pub(super) fn new<W>(
        source: R,
        open: O,
        timed_out: Option<fn(TimedOut) -> Fut::Error>,
    ) -> RetryStream<R, O, Fut, fn(), W> {
        RetryStream {
            state: State::Start,
            timer: Timer::new(),
            core: Core {
                run: Run::new(source),
                dropped: Run::dropped,
                open,
                frame: nesting::Frame::default(),
            },
            rules: Rules {
                commit: every_item,
                weigh: weightless,
                limits: Limits::DEFAULT,
                commit_timeout: None,
                idle_timeout: None,
                timed_out,
                ended_early: None,
                restart: no_restart,
            },
        }
    }
}

impl<R, O, Fut, H, W> RetryStream<R, O, Fut, H, W>
where
    R: Source,
    Fut: TryFuture,
    Fut::Ok: TryStream,
{
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
    pub fn commit_when(mut self, is_content: fn(&Item<Fut>) -> bool) -> Self
    where
        Fut::Error: From<EndedEarly>,
    {
        self.rules.commit = is_content;
        self.rules.ended_early = Some(Fut::Error::from);
        self
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
    pub fn restart_after_commit<G: FnMut()>(self, hook: G) -> RetryStream<R, O, Fut, G, W> {
        let RetryStream {
            state,
            timer,
            mut core,
            rules,
        } = self;
        core.run.allow_restart();
        RetryStream {
            state,
            timer,
            core,
            rules: Rules {
                commit: rules.commit,
                weigh: rules.weigh,
                limits: rules.limits,
                commit_timeout: rules.commit_timeout,
                idle_timeout: rules.idle_timeout,
                timed_out: rules.timed_out,
                ended_early: rules.ended_early,
                restart: hook,
            },
        }
    }

    /// Commit anyway once `items` are held (default [`DEFAULT_HOLD_ITEMS`](crate::DEFAULT_HOLD_ITEMS)):
    /// a preamble that never ends is not held without bound. At least one.
    pub fn hold_limit(mut self, items: usize) -> Self {
        self.rules.limits.items = items.max(1);
        self
    }

    /// Commit anyway once the held items weigh `bytes` by `weigh` (default
    /// [`DEFAULT_HOLD_BYTES`](crate::DEFAULT_HOLD_BYTES), with nothing weighed); for events,
    /// [`sse::Event::size`](crate::sse::Event::size).
    pub fn hold_bytes(mut self, bytes: usize, weigh: fn(&Item<Fut>) -> usize) -> Self {
        self.rules.limits.bytes = bytes;
        self.rules.weigh = weigh;
        self
    }

    /// Bound the time from calling `open` to the commit point: an attempt that has not
    /// committed by then is dropped, and its error is `E::from(TimedOut)` with
    /// [`TimeoutBound::Commit`]. It classifies as `Timeout`, so the policy decides:
    /// `availability` does not retry a stall, `transient` does. Bounded by the turn and a
    /// literal budget, as an attempt timeout is.
    pub fn commit_timeout(mut self, timeout: Duration) -> Self
    where
        Fut::Error: From<TimedOut>,
    {
        self.rules.commit_timeout = Some(timeout);
        self.rules.timed_out = Some(Fut::Error::from);
        self
    }

    /// Bound the time between items, before the commit point and after it: a stream that
    /// stalls longer is dropped, and its error is `E::from(TimedOut)` with
    /// [`TimeoutBound::Idle`]. After the commit point, that ends the stream with
    /// [`StopReason::Committed`](crate::StopReason::Committed), as any error does.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self
    where
        Fut::Error: From<TimedOut>,
    {
        self.rules.idle_timeout = Some(timeout);
        self.rules.timed_out = Some(Fut::Error::from);
        self
    }
}

impl<R, O, Fut, H, W> Stream for RetryStream<R, O, Fut, H, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    O: FnMut(u32) -> Fut,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    <Fut::Ok as TryStream>::Error: Into<Fut::Error>,
    Fut::Error: Classify + fmt::Display,
    H: FnMut(),
    W: Future<Output = ()>,
{
    type Item = Yielded<Fut>;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            let then = match this.state.as_mut().project() {
                // The hot path first: committed, an item passed through.
                StateProj::Open {
                    stream,
                    flow: Flow::Passing,
                } => pass(stream, this.timer.as_mut(), this.core, this.rules, cx),
                StateProj::Open { stream, flow } => {
                    hold_or_release(stream, flow, this.timer.as_mut(), this.core, this.rules, cx)
                }
                StateProj::Start => Then::Become(State::Opening {
                    future: open(this.core, this.rules, this.timer.as_mut()),
                }),
                StateProj::Opening { future } => {
                    opening(future, this.timer.as_mut(), this.core, this.rules, cx)
                }
                StateProj::Draining { held } => match held.pop_front() {
                    Some(item) => Then::Yield(Poll::Ready(Some(Ok(item)))),
                    None => {
                        this.core.run.ended_after_commit();
                        Then::End(None)
                    }
                },
                StateProj::Waiting { wait } => waiting(wait, this.core, cx),
                StateProj::Done => return Poll::Ready(None),
            };
            match then {
                Then::Yield(polled) => return polled,
                Then::Become(state) => this.state.set(state),
                Then::End(last) => {
                    this.state.set(State::Done);
                    return Poll::Ready(last);
                }
                Then::Again => {}
            }
        }
    }
}

/// The state type of a [`RetryStream`], and what its polls say to do next.
type StateOf<Fut, W> = State<Fut, <Fut as TryFuture>::Ok, Item<Fut>, W, <Fut as TryFuture>::Error>;
type Next<Fut, W> = Then<StateOf<Fut, W>, Yielded<Fut>>;

/// Open the next attempt, under its timer.
fn open<R, O, Fut, H>(
    core: &mut Core<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H>,
    timer: Pin<&mut Timer>,
) -> Fut
where
    R: Source,
    O: FnMut(u32) -> Fut,
    Fut: TryFuture,
    Fut::Ok: TryStream,
{
    let attempt = core.run.attempts().saturating_add(1);
    core.frame = nesting::Frame::default();
    let future = nesting::enter(&mut core.frame, || (core.open)(attempt));
    core.run.begin_attempt();
    let (fixed, idle) = match rules.timed_out {
        Some(_) => (
            attempt_bound(&core.run, rules.commit_timeout),
            rules.idle_timeout,
        ),
        None => (None, None),
    };
    timer.arm(fixed, idle);
    future
}

/// When an attempt must have committed: the sooner of the attempt timeout and
/// `commit_timeout`, bounded by the turn and a literal budget.
fn attempt_bound<R: Source>(
    run: &Run<R>,
    commit_timeout: Option<Duration>,
) -> Option<(tokio::time::Instant, TimeoutBound)> {
    let own = match (run.attempt_timeout(), commit_timeout) {
        (Some(attempt), Some(commit)) if commit <= attempt => (commit, TimeoutBound::Commit),
        (Some(attempt), _) => (attempt, TimeoutBound::Timeout),
        (None, Some(commit)) => (commit, TimeoutBound::Commit),
        (None, None) => return None,
    };
    match run.bound(Some(own), true) {
        (Some(at), bound) => Some((at, bound)),
        (None, _) => None,
    }
}

/// Whether the attempt's timer fired: its error, if so.
fn timed_out<T, E, H>(
    timer: Pin<&mut Timer>,
    rules: &Rules<T, E, H>,
    cx: &mut Context<'_>,
) -> Option<E> {
    let timed_out = timer.expired(cx)?;
    rules.timed_out.map(|to_error| to_error(timed_out))
}

/// A failure of the attempt: the wait before the next, or the give-up that ends the stream.
/// The state it becomes drops the attempt and all it held.
fn fail<R, O, Fut, W>(core: &mut Core<R, O>, error: Fut::Error, opened: bool) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
{
    core.run.note_frame(mem::take(&mut core.frame));
    match core.run.stream_failed(error, opened) {
        Ok(wait) => Then::Become(State::Waiting { wait }),
        Err(gave_up) => Then::End(Some(Err(gave_up))),
    }
}

/// The commit point: the call's output goes to the caller; a restart's hook runs first. After
/// it, only the idle bound and the turn time the stream.
fn commit<R, O, T, E, H: FnMut()>(
    core: &mut Core<R, O>,
    rules: &mut Rules<T, E, H>,
    timer: Pin<&mut Timer>,
) where
    R: Source,
{
    core.run.note_frame(mem::take(&mut core.frame));
    if core.run.commit() {
        (rules.restart)();
    }
    match (rules.timed_out, rules.idle_timeout) {
        (Some(_), Some(idle)) => {
            let turn = turn::expiry().map(|at| (at, TimeoutBound::Turn));
            timer.arm(turn, Some(idle));
        }
        _ => timer.arm(None, None),
    }
}

/// Poll `open`'s future: the attempt's stream, or its failure.
fn opening<R, O, Fut, H, W>(
    future: Pin<&mut Fut>,
    timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
{
    let failure = match nesting::enter(&mut core.frame, || future.try_poll(cx)) {
        Poll::Ready(Ok(stream)) => {
            return Then::Become(State::Open {
                stream,
                flow: Flow::Holding(Hold::new(rules.limits)),
            });
        }
        Poll::Ready(Err(error)) => error,
        Poll::Pending => match timed_out(timer, rules, cx) {
            Some(error) => error,
            None => return Then::Yield(Poll::Pending),
        },
    };
    fail::<R, O, Fut, W>(core, failure, false)
}

/// Poll an open stream before its commit point, or deliver what it held at it.
fn hold_or_release<R, O, Fut, H, W>(
    stream: Pin<&mut Fut::Ok>,
    flow: &mut Flow<Item<Fut>>,
    mut timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &mut Rules<Item<Fut>, Fut::Error, H>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    <Fut::Ok as TryStream>::Error: Into<Fut::Error>,
    Fut::Error: Classify + fmt::Display,
    H: FnMut(),
{
    let hold = match flow {
        Flow::Holding(hold) => hold,
        Flow::Releasing(held) => {
            return match held.pop_front() {
                Some(item) => Then::Yield(Poll::Ready(Some(Ok(item)))),
                None => {
                    *flow = Flow::Passing;
                    Then::Again
                }
            };
        }
        Flow::Passing => return Then::Again,
    };
    match holding(stream, hold, timer.as_mut(), core, rules, cx) {
        Held::Pending => Then::Yield(Poll::Pending),
        Held::Failed(error) => fail::<R, O, Fut, W>(core, error, true),
        Held::Passed(item) => {
            commit(core, rules, timer);
            *flow = Flow::Passing;
            Then::Yield(Poll::Ready(Some(Ok(item))))
        }
        Held::Full => {
            let held = mem::replace(hold, Hold::new(rules.limits)).release();
            commit(core, rules, timer);
            *flow = Flow::Releasing(held);
            Then::Again
        }
        Held::Ended => {
            let held = mem::replace(hold, Hold::new(rules.limits)).release();
            commit(core, rules, timer);
            Then::Become(State::Draining { held })
        }
    }
}

/// What a poll before the commit point found.
enum Held<T, E> {
    /// Nothing yet.
    Pending,
    /// A failure: the attempt is over.
    Failed(E),
    /// The first item is content: it commits without being held.
    Passed(T),
    /// Content after a preamble, or the hold is full: it commits.
    Full,
    /// The stream ended, and every item commits (no rule): it commits, and ends.
    Ended,
}

/// Poll the stream before its commit point, holding its items, until it commits or fails.
fn holding<R, O, S, E, H>(
    mut stream: Pin<&mut S>,
    hold: &mut Hold<S::Ok>,
    mut timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &Rules<S::Ok, E, H>,
    cx: &mut Context<'_>,
) -> Held<S::Ok, E>
where
    S: TryStream,
    S::Error: Into<E>,
{
    loop {
        let polled = nesting::enter(&mut core.frame, || stream.as_mut().try_poll_next(cx));
        return match polled {
            Poll::Ready(Some(Ok(item))) => {
                timer.as_mut().item();
                let content = (rules.commit)(&item);
                if content && hold.is_empty() {
                    return Held::Passed(item);
                }
                let commits = hold.count(content, (rules.weigh)(&item));
                hold.keep(item);
                if !commits {
                    continue;
                }
                Held::Full
            }
            Poll::Ready(Some(Err(error))) => Held::Failed(error.into()),
            Poll::Ready(None) => match rules.ended_early {
                Some(ended_early) => Held::Failed(ended_early(EndedEarly::new(hold.counted()))),
                None => Held::Ended,
            },
            Poll::Pending => match timed_out(timer, rules, cx) {
                Some(error) => Held::Failed(error),
                None => Held::Pending,
            },
        };
    }
}

/// Poll the stream after its commit point: the hot path, an item passed through.
#[inline]
fn pass<R, O, Fut, H, W>(
    stream: Pin<&mut Fut::Ok>,
    timer: Pin<&mut Timer>,
    core: &mut Core<R, O>,
    rules: &Rules<Item<Fut>, Fut::Error, H>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    R::Clock: Clock<Sleep = W>,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    <Fut::Ok as TryStream>::Error: Into<Fut::Error>,
    Fut::Error: Classify + fmt::Display,
{
    let failure = match stream.try_poll_next(cx) {
        Poll::Ready(Some(Ok(item))) => {
            if timer.is_armed() {
                timer.item();
            }
            return Then::Yield(Poll::Ready(Some(Ok(item))));
        }
        Poll::Ready(Some(Err(error))) => error.into(),
        Poll::Ready(None) => {
            core.run.ended_after_commit();
            return Then::End(None);
        }
        Poll::Pending if !timer.is_armed() => return Then::Yield(Poll::Pending),
        Poll::Pending => match timed_out(timer, rules, cx) {
            Some(error) => error,
            None => return Then::Yield(Poll::Pending),
        },
    };
    fail::<R, O, Fut, W>(core, failure, true)
}

/// Wait before the next attempt; a cancel of the turn ends the stream.
fn waiting<R, O, Fut, W>(
    wait: &mut Wait<W, Fut::Error>,
    core: &mut Core<R, O>,
    cx: &mut Context<'_>,
) -> Next<Fut, W>
where
    R: Source,
    Fut: TryFuture,
    Fut::Ok: TryStream,
    Fut::Error: Classify + fmt::Display,
    W: Future<Output = ()>,
{
    let waited: Waited<Fut::Error> = match Pin::new(wait).poll(cx) {
        Poll::Ready(waited) => waited,
        Poll::Pending => return Then::Yield(Poll::Pending),
    };
    match core.run.waited(waited) {
        Ok(()) => Then::Become(State::Start),
        Err(gave_up) => Then::End(Some(Err(gave_up))),
    }
}

impl<R, O, Fut, H, W> fmt::Debug for RetryStream<R, O, Fut, H, W>
where
    R: Source,
    Fut: TryFuture,
    Fut::Ok: TryStream,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start => "start",
            State::Opening { .. } => "opening",
            State::Open {
                flow: Flow::Holding(_),
                ..
            } => "holding",
            State::Open {
                flow: Flow::Releasing(_),
                ..
            } => "releasing",
            State::Open {
                flow: Flow::Passing,
                ..
            } => "passing",
            State::Draining { .. } => "draining",
            State::Waiting { .. } => "waiting",
            State::Done => "done",
        };
        f.debug_struct("RetryStream")
            .field("run", &self.core.run)
            .field("state", &state)
            .finish_non_exhaustive()
    }
}
