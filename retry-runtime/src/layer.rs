//! The one core of the two HTTP layers, [`RetryLayer`](crate::tower::RetryLayer) and
//! [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware): what both are built with
//! ([`Core`], and its builders in [`builders!`]) and the ladder a call runs through them
//! ([`Core::send`]). A layer adds only how it sends one request.
//!
//! A call's request is copied for each attempt. One that cannot be copied for the first is
//! sent itself, once; one that cannot be copied for a later attempt ends the ladder with the
//! failure it has. Either way the stop is
//! [`StopReason::NotResendable`](crate::StopReason::NotResendable) (unless the failure
//! stops the ladder on its own: an answer, say), and the caller gets that failure, unchanged.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::admission::Admitting;
use crate::attempt::Attempt;
use crate::class::{Class, Classify};
use crate::clock::Clock;
use crate::engine::{Clocked, Run, Source};
use crate::fallback::Next;
use crate::http::UpstreamFor;
use crate::http::{
    AsTransport, ClassifyError, Fault, HttpError, Inspecting, Refusal, Reply, ResendCount,
    StreamPeek,
};
use crate::route::NoUpstream;
use crate::route::Placing;
use crate::upstream::{Upstream, UpstreamPaused};
use crate::verdict::GaveUp;
use crate::wait::Wait;

/// What a layer is built with: the retry each call runs under, the class of the wrapped
/// service's own errors, and how a successful event stream is read before it is handed on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Core<R, K, U = NoUpstream> {
    pub(crate) retry: R,
    pub(crate) errors: K,
    pub(crate) peek: StreamPeek,
    /// The upstream a call goes to, if any.
    pub(crate) upstream: U,
}

impl<R> Core<R, AsTransport> {
    /// Every service error `Transport`, streams read to their commit point.
    pub(crate) const fn new(retry: R) -> Self {
        Core {
            retry,
            errors: AsTransport,
            peek: StreamPeek::DEFAULT,
            upstream: NoUpstream,
        }
    }
}

impl<R, K, U> Core<R, K, U> {
    /// The same, the service's errors classified by `errors`.
    pub(crate) fn classify_errors<L>(self, errors: L) -> Core<R, L, U> {
        Core {
            retry: self.retry,
            errors,
            peek: self.peek,
            upstream: self.upstream,
        }
    }

    /// The same, each call on the upstream `upstream` chooses.
    pub(crate) fn upstream<V>(self, upstream: V) -> Core<R, K, V> {
        Core {
            retry: self.retry,
            errors: self.errors,
            peek: self.peek,
            upstream,
        }
    }

    /// A core for one call that borrows this one's classification: for a layer whose `K` is
    /// not `Clone`.
    #[cfg(feature = "reqwest-middleware")]
    pub(crate) fn by_ref<E>(&self) -> Core<R, impl Fn(&E) -> Class + '_, U>
    where
        R: Clone,
        U: Clone,
        K: ClassifyError<E>,
    {
        let errors = &self.errors;
        Core {
            retry: self.retry.clone(),
            errors: move |error: &E| errors.classify_error(error),
            peek: self.peek,
            upstream: self.upstream.clone(),
        }
    }
}

impl<R: Source, K, U> Core<R, K, U> {
    /// A call through the layer: `sender` copies the request for each attempt and sends it.
    /// The call's ladder runs in the future this returns, which allocates nothing of its own.
    pub(crate) fn send<Rq, T>(self, request: Rq, mut sender: T) -> Calling<R, K, Rq, T>
    where
        T: Sender<Rq>,
        U: UpstreamFor<Rq, T::Error>,
    {
        // An ordered set (its route silent: a layer gives the caller its response or error
        // alone, so no report is noted), instead of one upstream, as `UpstreamFor` says; or
        // one upstream; or neither.
        let across = self.upstream.across_for(&request);
        let (place, held_back, rewrite) = match (across, self.upstream.upstream_for(&request)) {
            (Some((set, rewrite, held_back)), _) => {
                (Placing::across(set, false), Some(held_back), Some(rewrite))
            }
            (None, Some((upstream, held_back))) => (Placing::on(upstream), Some(held_back), None),
            (None, None) => (Placing::NOWHERE, None, None),
        };
        let (next, template) = match sender.copy(&request) {
            Some(first) => (first, Some(request)),
            // Nothing to copy the next attempt from: this one is the last.
            None => (request, None),
        };
        Calling {
            run: Run::new(self.retry),
            errors: self.errors,
            peek: self.peek,
            sender,
            template,
            next: Some(next),
            place,
            held_back,
            rewrite,
            step: CallStep::Start,
        }
    }
}

/// How a layer copies a call's request for an attempt, and sends one.
pub(crate) trait Sender<Rq> {
    /// The response.
    type Response: Reply;
    /// The service's own error.
    type Error: fmt::Display;
    /// An attempt's send.
    type Future: Future<Output = Result<Self::Response, Self::Error>>;

    /// A copy of `request` for an attempt, if it can be copied.
    fn copy(&mut self, request: &Rq) -> Option<Rq>;

    /// Send `request`, the `resend`th resend of the call (`None`: its first send).
    fn send(&mut self, request: Rq, resend: Option<ResendCount>) -> Self::Future;

    /// What `request` costs of a paced key's tokens, read from its body where it can be.
    fn tokens(&self, request: &Rq) -> u32 {
        let _ = request;
        0
    }
}

/// A [`Sender`] of two functions: the middleware's.
#[cfg(feature = "reqwest-middleware")]
pub(crate) struct FnSender<Cp, Sd, Tk> {
    pub(crate) copy: Cp,
    pub(crate) send: Sd,
    pub(crate) tokens: Tk,
}

#[cfg(feature = "reqwest-middleware")]
impl<Rq, Cp, Sd, Tk, Fut, Rs, E> Sender<Rq> for FnSender<Cp, Sd, Tk>
where
    Cp: FnMut(&Rq) -> Option<Rq>,
    Tk: Fn(&Rq) -> u32,
    Sd: FnMut(Rq, Option<ResendCount>) -> Fut,
    Fut: Future<Output = Result<Rs, E>>,
    Rs: Reply,
    E: fmt::Display,
{
    type Response = Rs;
    type Error = E;
    type Future = Fut;

    fn copy(&mut self, request: &Rq) -> Option<Rq> {
        (self.copy)(request)
    }

    fn send(&mut self, request: Rq, resend: Option<ResendCount>) -> Fut {
        (self.send)(request, resend)
    }

    fn tokens(&self, request: &Rq) -> u32 {
        (self.tokens)(request)
    }
}

/// What a failed attempt through a layer leaves: the response it refused, or the error.
type FailedOf<T, Rq> = Failed<<T as Sender<Rq>>::Response, <T as Sender<Rq>>::Error>;

/// The clock's sleep of the retry `R`.
type SleepOf<R> = <<R as Clocked>::Clock as Clock>::Sleep;

pin_project_lite::pin_project! {
    /// A call through a layer, as [`Core::send`] returns it: the ladder, one attempt (the send
    /// and the read of its reply) or one wait at a time, held in place.
    #[project = CallingProj]
    pub(crate) struct Calling<R, K, Rq, T>
    where
        R: Clocked,
        T: Sender<Rq>,
    {
        run: Run<R>,
        errors: K,
        peek: StreamPeek,
        sender: T,
        template: Option<Rq>,
        next: Option<Rq>,
        // Where the attempts go: the one field of the call's upstream or set.
        place: Placing,
        // How the service's error holds an attempt held back past the call's end.
        held_back: Option<fn(UpstreamPaused) -> T::Error>,
        // How the request is rewritten for the upstream of the set it goes to.
        rewrite: Option<Rewrite<Rq>>,
        #[pin]
        step: CallStep<T::Future, T::Response, SleepOf<R>, FailedOf<T, Rq>>,
    }
}

pin_project_lite::pin_project! {
    /// Where a call through a layer is.
    #[project = StepProj]
    enum CallStep<F, Rs, S, E> {
        /// The next attempt is to be sent (admitted by the upstream first, if any).
        Start,
        /// Waiting for the upstream to admit the next attempt.
        Admitting { #[pin] admitting: Admitting<S> },
        /// An attempt: its send, then the read of its reply.
        Sending { #[pin] attempt: Attempt<Exchange<F, Rs>> },
        /// The wait before the next.
        Waiting { #[pin] wait: Wait<S, E> },
        /// Over.
        Done,
    }
}

impl<R, K, Rq, T> Future for Calling<R, K, Rq, T>
where
    R: Source,
    K: ClassifyError<T::Error>,
    T: Sender<Rq>,
{
    type Output = Result<T::Response, T::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            let failed = match this.step.as_mut().project() {
                StepProj::Start => {
                    this.start();
                    continue;
                }
                StepProj::Admitting { admitting } => {
                    let Some(to_error) = *this.held_back else {
                        panic!("a layer's call admitted with no upstream");
                    };
                    let held_back = |paused: UpstreamPaused| {
                        let class = paused.classify();
                        Failed::Service(to_error(paused), class)
                    };
                    let admitted = this.place.poll_hold(admitting, this.run, cx, held_back);
                    if let Err(gave_up) = ready!(admitted) {
                        return this.end(gave_up);
                    }
                    this.step.set(CallStep::Start);
                    continue;
                }
                StepProj::Sending { attempt } => {
                    let attempted = ready!(attempt.poll(cx));
                    let outcome = this.run.attempted(attempted);
                    match outcome {
                        Ok(Ok(response)) => {
                            this.place.succeeded();
                            this.run.succeeded();
                            this.step.set(CallStep::Done);
                            return Poll::Ready(Ok(response));
                        }
                        Ok(Err((response, refusal))) => Failed::refused(response, refusal),
                        Err(error) => {
                            let class = this.errors.classify_error(&error);
                            Failed::Service(error, class)
                        }
                    }
                }
                StepProj::Waiting { wait } => {
                    let waited = ready!(this.run.poll_wait(wait, cx));
                    let next = this.run.waited(waited);
                    this.step.set(CallStep::Start);
                    match next {
                        Ok(()) => continue,
                        Err(gave_up) => return this.end(gave_up),
                    }
                }
                StepProj::Done => panic!("a layer's call polled after it was returned"),
            };
            if let Some(done) = this.failed(failed) {
                return done;
            }
        }
    }
}

/// How a request is rewritten for an upstream: [`AcrossChoice`]'s shared function.
type Rewrite<Rq> = std::sync::Arc<dyn Fn(&mut Rq, &'static Upstream) + Send + Sync>;

impl<R, K, Rq, T> CallingProj<'_, R, K, Rq, T>
where
    R: Source,
    T: Sender<Rq>,
{
    /// Start the next attempt: admitted by the upstream first, if there is one and it has
    /// something to say; else sent.
    fn start(&mut self) {
        let (next, sender) = (&*self.next, &*self.sender);
        let tokens = || next.as_ref().map_or(0, |next| sender.tokens(next));
        if let Some(admitting) = self.place.ready(self.run, false, tokens) {
            self.step.set(CallStep::Admitting { admitting });
            return;
        }
        let resend = ResendCount::of_attempt(self.run.attempts() + 1);
        let Some(mut request) = self.next.take() else {
            panic!("a layer's call polled after it was returned");
        };
        let to = self.place.upstream();
        if let (Some(rewrite), Some(to)) = (self.rewrite.as_ref(), to) {
            rewrite(&mut request, to);
        }
        let heard = to.map(|upstream| (upstream, upstream.pace_sent()));
        let sent = self.sender.send(request, resend);
        let exchange = Exchange::Sending {
            sent,
            resend,
            peek: *self.peek,
            heard,
        };
        let attempt = self.run.attempt(exchange);
        self.step.set(CallStep::Sending { attempt });
    }

    /// After a failed attempt: the next attempt at once (a move to the next upstream), or the
    /// ladder's wait, or the end (`Some`).
    fn failed(&mut self, failed: FailedOf<T, Rq>) -> Option<Poll<Result<T::Response, T::Error>>> {
        // The next attempt's copy, made before the ladder decides: without one, it cannot
        // retry, whatever it would decide.
        let copy = self
            .template
            .as_ref()
            .and_then(|template| self.sender.copy(template));
        // A layer's failure keeps the class it was given when it was made: read, not asked.
        // Without a copy it cannot move either: it stays, and the ladder ends.
        let class = failed.classify();
        let (failed, class) = match self.place.failed(self.run, failed, class, copy.is_none()) {
            // The next attempt at once, on the upstream the route took.
            Next::Moved => {
                *self.next = copy;
                self.step.set(CallStep::Start);
                return None;
            }
            Next::Ladder(failed, class) => (failed, class),
            Next::GaveUp(gave_up) => return Some(self.end(gave_up)),
        };
        let Some(copy) = copy else {
            let gave_up = self.run.gave_up_not_resendable(failed);
            return Some(self.end(gave_up));
        };
        *self.next = Some(copy);
        match self.run.failed_to_wait(failed, class, None) {
            Ok(wait) => self.step.set(CallStep::Waiting { wait }),
            Err(gave_up) => return Some(self.end(gave_up)),
        }
        None
    }

    /// The call is over with `gave_up`: the caller gets the last response or error, as it was.
    fn end(&mut self, gave_up: GaveUp<FailedOf<T, Rq>>) -> Poll<Result<T::Response, T::Error>> {
        self.step.set(CallStep::Done);
        Poll::Ready(gave_up.into_error().into_result())
    }
}

pin_project_lite::pin_project! {
    /// One attempt through a layer: its send, then the read of its reply, which says whether
    /// it refuses.
    #[project = ExchangeProj]
    enum Exchange<F, Rs> {
        Sending {
            #[pin] sent: F,
            resend: Option<ResendCount>,
            peek: StreamPeek,
            // The upstream the attempt went to, and its pacer's sends when it went.
            heard: Option<(&'static Upstream, u32)>,
        },
        Reading { inspecting: Inspecting<Rs> },
    }
}

impl<F, Rs, E> Future for Exchange<F, Rs>
where
    F: Future<Output = Result<Rs, E>>,
    Rs: Reply,
{
    type Output = Result<Result<Rs, (Rs, Refusal)>, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                ExchangeProj::Sending {
                    sent,
                    resend,
                    peek,
                    heard,
                } => {
                    // On the attempt's span, which is entered while it is polled.
                    if let Some(count) = resend.take() {
                        count.record();
                    }
                    let peek = *peek;
                    let response = ready!(sent.poll(cx))?;
                    if let Some((upstream, seq)) = *heard {
                        let now = std::time::SystemTime::now();
                        upstream.said(crate::http::rate_limits(response.head(), now), seq);
                    }
                    let inspecting = response.inspect_stream(peek);
                    self.set(Exchange::Reading { inspecting });
                }
                ExchangeProj::Reading { inspecting } => {
                    return Pin::new(inspecting).poll(cx).map(Ok);
                }
            }
        }
    }
}

enum Failed<R, E> {
    Answered(R, HttpError),
    Broken(R, Fault),
    Service(E, Class),
}

impl<R, E> Failed<R, E> {
    /// What the caller gets when the ladder stops: the last response or error, unchanged.
    fn into_result(self) -> Result<R, E> {
        match self {
            Failed::Answered(response, _) | Failed::Broken(response, _) => Ok(response),
            Failed::Service(error, _) => Err(error),
        }
    }

    /// A response refused by the table or broken in its stream.
    fn refused(response: R, refusal: Refusal) -> Self {
        match refusal {
            Refusal::Answered(error) => Failed::Answered(response, error),
            Refusal::Broken(fault) => Failed::Broken(response, fault),
        }
    }
}

impl<R, E> Classify for Failed<R, E> {
    fn classify(&self) -> Class {
        match self {
            Failed::Answered(_, error) => error.classify(),
            Failed::Broken(_, fault) => fault.class(),
            Failed::Service(_, class) => *class,
        }
    }
}

impl<R, E: fmt::Display> fmt::Display for Failed<R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failed::Answered(_, error) => error.fmt(f),
            Failed::Broken(_, fault) => fault.fmt(f),
            Failed::Service(error, _) => error.fmt(f),
        }
    }
}

/// The builder methods both layers share, their docs included, written once: each layer
/// expands it in its `impl<R, ..>` block, over its `core` field.
macro_rules! builders {
    () => {
        /// Whether a successful `text/event-stream` response (a `reqwest::Response`, with
        /// feature `sse`) is read up to its commit point, its first content, before it is
        /// handed on: on by default. Before that point an error event, a cut, an early end or
        /// a stall past [`commit_timeout`](Self::commit_timeout) is retried by this ladder; at
        /// it, the client gets the bytes read, unchanged, then the rest as it arrives; after
        /// it, the layer never touches the stream. `false` keeps the head-only behaviour: a
        /// `200` passes untouched.
        pub const fn streams(mut self, on: bool) -> Self {
            self.core.peek.on = on;
            self
        }

        /// Bound the time from sending a request to its stream's commit point (the client's
        /// time to first byte): a stream with no content by then is dropped and retried as a
        /// `Timeout`, which the policy decides on (`availability` does not retry one). Bounded
        /// by the turn too.
        pub const fn commit_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.core.peek.commit_timeout = Some(timeout);
            self
        }

        /// The retry each call runs under.
        pub const fn retry(&self) -> &R {
            &self.core.retry
        }
    };
}

pub(crate) use builders;
